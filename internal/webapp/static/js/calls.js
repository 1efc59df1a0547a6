// Call history: search (POST /calls/search, calls/results.js) and one
// call's detail (GET /calls/{callid}, calls/detail.js) with its recordings
// played in the page and their transcripts beside them. Routes: /calls and
// /calls/:callid. Every time is in the person's zone (calls/zone.js).
import { h } from './ui.js';
import { put } from './calls/parts.js';
import { renderSearch } from './calls/results.js';
import { renderDetail } from './calls/detail.js';

export async function render(root, params, ctx) {
  // The screen lives in one .page element, like the app's other screens.
  const main = h('div', { class: 'page page-wide calls-page' });
  put(root, main);
  document.title = 'Calls \u00b7 Switchboard';
  if (!ctx.can.calls) {
    put(main, h('h1', { text: 'Calls' }),
      h('p', { class: 'notice', role: 'alert', text: 'Your role does not include call reports, so call history is not available to you.' }));
    return;
  }
  if (params.callid) return renderDetail(main, params.callid, ctx);
  return renderSearch(main, ctx);
}
