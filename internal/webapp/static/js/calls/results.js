// The call search screen (/app/calls): the results first, the filters
// beside them (behind a button on a phone), every time in the person's
// zone. The search's state lives in the address bar's query string, so
// "back" from a call's detail returns to the same page of the same search.
import { h, showError, announce, emptyState, spinner } from '../ui.js';
import { replaceAddress } from '../router.js';
import { personZone, formats } from './zone.js';
import { defaultQuery, requestBody, searchForm, filtersInUse } from './form.js';
import { put, duration, spokenDuration, sides, statusBadge, directionLabel, recordedIcon, textsLink } from './parts.js';

function resultsTable(calls, queryString, fmt, zone) {
  const head = ['Time', 'Direction', 'From', 'To', 'Status', 'Duration', 'Recorded', 'Texts'];
  return h('table', { class: 'calls-table' },
    h('caption', { class: 'visually-hidden', text: `Calls, newest first unless ordered otherwise; times in ${zone}` }),
    h('thead', null, h('tr', null, head.map((c) => h('th', { scope: 'col', text: c })))),
    h('tbody', null, calls.map((c) => {
      const href = `/app/calls/${encodeURIComponent(c.id)}` + (queryString ? `?back=${encodeURIComponent(queryString)}` : '');
      return h('tr', null,
        h('th', { scope: 'row', 'data-label': 'Time' }, h('a', { href, text: fmt.dateTime.format(new Date(c.startTime)) })),
        h('td', { 'data-label': 'Direction' }, directionLabel(c)),
        ...sides(c).map((el, i) => h('td', { 'data-label': i ? 'To' : 'From' }, el)),
        h('td', { 'data-label': 'Status' }, statusBadge(c)),
        h('td', { 'data-label': 'Duration' }, h('span', { 'aria-label': spokenDuration(c.durationSeconds), text: duration(c.durationSeconds) })),
        h('td', { 'data-label': 'Recorded', class: 'cell-recorded' }, c.recorded ? recordedIcon() : h('span', { class: 'muted', text: 'No' })),
        h('td', { 'data-label': 'Texts' }, textsLink(c) || h('span', { class: 'muted', text: '\u2014' })));
    })));
}

function pager(data, go) {
  const { offset, limit, total } = data;
  const last = offset + data.calls.length;
  const prev = h('button', { type: 'button', class: 'btn', text: '\u2190 Newer', on: { click: () => go(Math.max(0, offset - limit)) } });
  const next = h('button', { type: 'button', class: 'btn', text: 'Older \u2192', on: { click: () => go(offset + limit) } });
  prev.disabled = offset <= 0;
  next.disabled = last >= total;
  return h('nav', { class: 'pager', 'aria-label': 'Result pages' }, prev, h('span', { class: 'muted', text: `Page ${Math.floor(offset / limit) + 1} of ${Math.max(1, Math.ceil(total / limit))}` }), next);
}

// filtersToggle shows or hides the filters on a phone (on a wide screen
// they are always shown and the button is not).
function filtersToggle(page, q) {
  const count = filtersInUse(q);
  const btn = h('button', { type: 'button', class: 'btn filters-toggle', 'aria-expanded': 'false', 'aria-controls': 'calls-filters' },
    'Filters', count ? ` (${count})` : '');
  btn.addEventListener('click', () => {
    const open = !page.classList.contains('filters-open');
    page.classList.toggle('filters-open', open);
    btn.setAttribute('aria-expanded', String(open));
    if (open) page.querySelector('#calls-filters input, #calls-filters select')?.focus();
  });
  return btn;
}

export async function renderSearch(main, ctx) {
  const zone = personZone();
  const fmt = formats(zone);
  let q = new URLSearchParams(location.search);
  if (!q.get('from') || !q.get('to')) {
    const d = defaultQuery(zone);
    for (const [k, v] of q) if (k !== 'from' && k !== 'to') d.append(k, v);
    q = d;
  }
  const results = h('section', { class: 'calls-results', 'aria-labelledby': 'calls-results-heading', 'aria-busy': 'false' });
  const bar = h('div', { class: 'calls-bar' });
  // Names for extensions and the lines to link texts to: asked beside the
  // first search, shown when both are in.
  const known = Promise.all([ctx.users().catch(() => []), ctx.can.inbox ? ctx.lines().catch(() => []) : null]);
  let controller = null;
  const heading = (text) => h('h2', { id: 'calls-results-heading', tabindex: '-1', text });

  const run = async (next, { focus = false } = {}) => {
    q = next;
    replaceAddress('/app/calls?' + q.toString());
    put(bar, filtersToggle(main, q), h('span', { class: 'muted zone-name', text: `Times in ${zone}` }));
    main.classList.remove('filters-open');
    controller?.abort();
    controller = new AbortController();
    const signal = controller.signal;
    let body;
    try {
      body = requestBody(q, zone);
    } catch (err) {
      put(results, heading('Results'), h('p', { class: 'error', role: 'alert', text: err.message }));
      return;
    }
    results.setAttribute('aria-busy', 'true');
    put(results, heading('Results'), spinner('Searching calls\u2026'));
    try {
      const [data] = await Promise.all([ctx.api('POST', '/calls/search', { body, signal }), known]);
      if (signal.aborted) return;
      show(data, focus);
    } catch (err) {
      if (signal.aborted || err.name === 'AbortError') return;
      const box = h('div');
      put(results, heading('Results'), box);
      showError(box, err);
    } finally {
      if (!signal.aborted) results.setAttribute('aria-busy', 'false');
    }
  };

  const show = (data, focus) => {
    const { total, offset, calls } = data;
    const summary = total ? `Calls ${offset + 1}\u2013${offset + calls.length} of ${total}` : 'No calls';
    const head = heading(summary);
    const go = (off) => {
      const n = new URLSearchParams(q);
      if (off) n.set('offset', String(off)); else n.delete('offset');
      run(n, { focus: true });
    };
    if (!calls.length) {
      put(results, head, emptyState(offset ? 'No more calls' : 'No calls match',
        offset ? 'This page is past the last result.' : 'No call in this window matches these filters. Widen the dates or clear a filter.'));
    } else {
      put(results, head, resultsTable(calls, new URLSearchParams(q).toString(), fmt, zone), total > data.limit ? pager(data, go) : null);
    }
    announce(summary);
    if (focus) head.focus();
  };

  put(main, h('h1', { text: 'Call history' }), bar, searchForm(q, zone, (next) => run(next, { focus: true })), results);
  run(q);
  return () => controller?.abort();
}
