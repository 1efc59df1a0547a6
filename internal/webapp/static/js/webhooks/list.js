// The subscriptions (GET /webhooks), each with how its recent deliveries
// went (a subscription whose deliveries all fail says so), and the form
// for a new one (create.js).
import { h, showError, announce, emptyState, spinner } from '../ui.js';
import { put, when, canWrite, secretBox, enabledBadge, errorFrom } from './parts.js';
import { createForm } from './create.js';

const RECENT = 10; // deliveries that make a subscription's health

// health reads a subscription's recent deliveries and says how they went.
async function health(ctx, w, signal) {
  const resp = await ctx.api('GET', `/webhooks/${w.id}/deliveries`, { query: { limit: RECENT }, signal, raw: true });
  const json = await resp.json();
  if (!resp.ok) throw errorFrom(resp, json);
  const ds = json.data || [];
  if (!ds.length) return h('span', { class: 'muted', text: 'None yet' });
  const failed = ds.filter((d) => d.state === 'failed').length;
  if (failed === ds.length) {
    return h('span', { class: 'badge health-failing' }, ds.length === 1 ? 'Failing: its delivery failed' : `Failing: all ${ds.length} recent deliveries failed`);
  }
  if (ds[0].state === 'failed') return h('span', { class: 'badge delivery-failed', text: `Last failed (${failed} of ${ds.length} recent)` });
  if (ds[0].state === 'pending') return h('span', { class: 'badge delivery-pending', text: 'Delivering' });
  return h('span', { class: 'badge delivery-succeeded', text: failed ? `OK (${failed} of ${ds.length} recent failed)` : 'OK' });
}

function subscriptionRow(ctx, w, signal) {
  const cell = h('td', { 'data-label': 'Deliveries' }, h('span', { class: 'muted', text: 'Checking\u2026' }));
  health(ctx, w, signal).then((el) => put(cell, el), () => { if (!signal.aborted) put(cell, h('span', { class: 'muted', text: 'Unknown' })); });
  return h('tr', null,
    h('th', { scope: 'row', 'data-label': 'Subscription' },
      h('a', { href: `/app/webhooks/${w.id}`, text: w.name || w.url }),
      w.name ? h('div', { class: 'url', text: w.url }) : null),
    h('td', { 'data-label': 'Event type' }, h('code', { text: w.type })),
    h('td', { 'data-label': 'State' }, enabledBadge(w)),
    cell,
    h('td', { 'data-label': 'Created', text: when(w.createdAt) }));
}

export async function renderList(main, ctx) {
  const controller = new AbortController();
  const signal = controller.signal;
  const listBox = h('section', { class: 'webhook-list', 'aria-labelledby': 'webhooks-list-heading' },
    h('h2', { id: 'webhooks-list-heading', text: 'Subscriptions' }), spinner('Loading subscriptions\u2026'));
  const created = h('div', { class: 'created', 'aria-live': 'polite' });
  const writer = canWrite(ctx);
  put(main,
    h('h1', { text: 'Webhooks' }),
    h('p', { class: 'lead', text: 'Switchboard sends events to your endpoints as signed HTTP POSTs. Each subscription receives one event type.' }),
    created,
    listBox,
    writer ? h('section', { class: 'webhook-create', 'aria-labelledby': 'webhook-create-heading' },
      h('h2', { id: 'webhook-create-heading', text: 'New subscription' }), spinner('Loading event types\u2026')) : null);

  const loadList = async () => {
    const hooks = await ctx.api('GET', '/webhooks', { signal });
    const head = h('h2', { id: 'webhooks-list-heading', text: `Subscriptions (${hooks.length})` });
    if (!hooks.length) {
      put(listBox, head, emptyState('No subscriptions yet', writer
        ? 'Create one below to have events sent to your endpoint.'
        : 'This account sends no webhooks.'));
      return;
    }
    put(listBox, head, h('table', { class: 'webhooks-table' },
      h('thead', null, h('tr', null, ['Subscription', 'Event type', 'State', 'Recent deliveries', 'Created'].map((c) => h('th', { scope: 'col', text: c })))),
      h('tbody', null, hooks.map((w) => subscriptionRow(ctx, w, signal)))));
  };

  const loadForm = async () => {
    const types = await ctx.api('GET', '/webhooks/types', { signal });
    const form = createForm(types, ctx, async (w) => {
      const box = secretBox(w.secret, 'This is the new subscription\u2019s signing secret.');
      put(created,
        h('p', { class: 'success' }, 'Created ', h('a', { href: `/app/webhooks/${w.id}`, text: w.name || w.url }),
          w.enabled ? ' (enabled).' : ' (disabled: enable it when your endpoint is ready; you can send it a test event first).'),
        box);
      announce('Subscription created. Its signing secret is shown once, above the list.');
      box.focus();
      await loadList().catch((err) => showError(listBox, err));
    });
    put(main.querySelector('.webhook-create'), h('h2', { id: 'webhook-create-heading', text: 'New subscription' }), form);
  };

  loadList().catch((err) => { if (!signal.aborted) { put(listBox, h('h2', { id: 'webhooks-list-heading', text: 'Subscriptions' })); showError(listBox, err); } });
  if (writer) loadForm().catch((err) => { if (!signal.aborted) showError(main.querySelector('.webhook-create'), err); });
  return () => controller.abort();
}

