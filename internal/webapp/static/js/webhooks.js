// Webhook administration: the account's subscriptions (GET /webhooks) with
// how their deliveries go, a new one (POST /webhooks, its secret shown
// once), and per subscription: enable, disable, send a test event, rotate
// the secret, delete, its deliveries (paged with `before`) with each one's
// event, payload and attempts, and redeliver. Routes: /webhooks and
// /webhooks/:id. The parts are in webhooks/.
import { h } from './ui.js';
import { put } from './webhooks/parts.js';
import { renderList } from './webhooks/list.js';
import { renderOne } from './webhooks/one.js';

export async function render(root, params, ctx) {
  // The screen lives in one .page element, like the app's other screens.
  const main = h('div', { class: 'page page-wide' });
  put(root, main);
  document.title = 'Webhooks \u00b7 Switchboard';
  if (!ctx.can.webhooks) {
    // GET /me says whether the role (the Webhooks permission) or the
    // sign-in's scopes leave the screen out.
    const byRole = ctx.me?.permissions?.webhooks === false;
    put(main, h('h1', { text: 'Webhooks' }),
      h('p', { class: 'notice', role: 'alert', text: byRole
        ? 'Your role does not include webhooks, so subscriptions are not available to you.'
        : 'Your sign-in does not include webhook administration.' }));
    return;
  }
  if (params.id) return renderOne(main, params.id, ctx);
  return renderList(main, ctx);
}
