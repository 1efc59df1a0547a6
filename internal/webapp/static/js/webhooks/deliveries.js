// A subscription's deliveries (paged with `before`), each with its event
// and payload (payload.js), its attempts, and redeliver; pending ones are
// looked at again until they settle.
import { h, showError, announce, emptyState, spinner } from '../ui.js';
import { put, when, stateBadge, errorParts, attemptSummary, attemptsTable, errorFrom } from './parts.js';
import { readEvent } from './payload.js';

const PAGE = 20;

// payloadView fills box with the delivery's event and payload.
async function payloadView(ctx, d, box, signal) {
  put(box, spinner('Loading the payload\u2026'));
  const ev = await readEvent(ctx, d.eventId, signal);
  if (signal.aborted) return;
  if (!ev) {
    put(box, h('p', { class: 'muted', text: 'The payload is no longer held (or is not one your sign-in may read): only the event id above names it.' }));
    return;
  }
  put(box,
    h('dl', { class: 'facts compact' },
      h('dt', { text: 'Event' }), h('dd', null, h('code', { text: ev.data?.event || ev.type || d.type })),
      ev.timestamp ? [h('dt', { text: 'Happened' }), h('dd', { text: when(ev.timestamp) })] : null),
    h('details', { class: 'payload', open: true }, h('summary', { text: 'Payload (the JSON body sent)' }),
      h('pre', { class: 'excerpt payload-json', tabindex: '0', text: JSON.stringify(ev, null, 2) })));
}

// deliveriesSection draws into section; button(label, cls, fn) makes an
// action button; outcome is where an action's result is said.
export function deliveriesSection(ctx, { base, signal, writer, section, outcome, button }) {
  let pages = []; // the deliveries shown, newest first
  let next = null;
  let pollTimer = null;
  const open = new Set(); // deliveries opened (kept across refreshes)

  async function load(fresh) {
    const query = { limit: PAGE };
    if (!fresh && next) query.before = next;
    const env = await ctx.api('GET', `${base}/deliveries`, { query, signal, raw: true });
    const json = await env.json();
    if (!env.ok) throw errorFrom(env, json);
    pages = fresh ? json.data : pages.concat(json.data);
    next = json.next || null;
    paint();
    poll();
  }
  // While a delivery on screen is pending (a redelivery, a retry), look
  // again shortly, so its outcome shows without a reload.
  function poll() {
    clearTimeout(pollTimer);
    if (signal.aborted || !pages.slice(0, PAGE).some((d) => d.state === 'pending')) return;
    pollTimer = setTimeout(() => refreshFirst().catch(() => {}), 1500);
  }
  async function refreshFirst() {
    const env = await ctx.api('GET', `${base}/deliveries`, { query: { limit: PAGE }, signal, raw: true });
    if (!env.ok) return;
    const json = await env.json();
    const fresh = new Map(json.data.map((d) => [d.id, d]));
    const known = new Set(pages.map((d) => d.id));
    pages = json.data.filter((d) => !known.has(d.id)).concat(pages.map((d) => fresh.get(d.id) || d));
    paint();
    poll();
  }
  const failed = (err) => showError(section, err);
  function paint() {
    const head = h('div', { class: 'section-head' }, h('h2', { id: 'deliveries-heading', text: 'Deliveries' }),
      h('button', { type: 'button', class: 'btn btn-small', text: 'Refresh', on: { click: () => load(true).catch(failed) } }));
    if (!pages.length) {
      put(section, head, emptyState('No deliveries yet', 'Events of this type will appear here as they are sent. Send a test event to try the endpoint.'));
      return;
    }
    const more = next ? h('button', { type: 'button', class: 'btn', text: 'Older deliveries', on: { click: () => load(false).catch(failed) } }) : null;
    put(section, head, h('ul', { class: 'delivery-list' }, pages.map(item)), more);
  }
  async function redeliver(d) {
    const nd = await ctx.api('POST', `${base}/deliveries/${d.id}/redeliver`);
    pages = [nd, ...pages];
    paint();
    put(outcome, h('p', { class: 'success', text: `Queued again as delivery ${nd.id}; it is sent now.` }));
    announce('Delivery queued again.');
    poll();
  }
  function item(d) {
    const payloadBox = h('div', { class: 'delivery-payload' });
    const attemptsBox = h('div', { class: 'attempts' });
    const details = h('details', { class: 'delivery', 'data-delivery': String(d.id) },
      h('summary', null,
        stateBadge(d.state),
        h('span', { class: 'delivery-id', text: `#${d.id}` }),
        h('span', { class: 'delivery-when', text: when(d.createdAt) }),
        h('span', { class: 'delivery-type', text: d.type }),
        h('span', { class: 'delivery-last', text: `${attemptSummary(d.lastAttempt)}${d.attempts > 1 ? ` \u00b7 ${d.attempts} attempts` : ''}` })),
      h('div', { class: 'delivery-body' },
        h('dl', { class: 'facts compact' },
          h('dt', { text: 'Event id' }), h('dd', null, h('code', { text: d.eventId })),
          d.nextAttemptAt ? [h('dt', { text: 'Next attempt' }), h('dd', { text: when(d.nextAttemptAt) })] : null,
          d.lastAttempt && d.lastAttempt.error ? [h('dt', { text: 'Last error' }), h('dd', null, errorParts(d.lastAttempt.error))] : null),
        payloadBox,
        writer ? h('div', { class: 'actions' }, button('Redeliver', 'btn', () => redeliver(d))) : null,
        attemptsBox));
    const show = () => { payloadView(ctx, d, payloadBox, signal); loadAttempts(d, attemptsBox); };
    details.open = open.has(d.id);
    if (details.open) show();
    details.addEventListener('toggle', () => {
      if (details.open) { open.add(d.id); show(); } else open.delete(d.id);
    });
    return h('li', null, details);
  }
  async function loadAttempts(d, box, before, shown = []) {
    if (!before) put(box, spinner('Loading attempts\u2026'));
    try {
      const query = { limit: 50 };
      if (before) query.before = before;
      const env = await ctx.api('GET', `${base}/deliveries/${d.id}/attempts`, { query, signal, raw: true });
      const json = await env.json();
      if (!env.ok) throw errorFrom(env, json);
      const all = shown.concat(json.data);
      put(box, attemptsTable(d, all),
        json.next ? h('button', { type: 'button', class: 'btn btn-small', text: 'Older attempts',
          on: { click: () => loadAttempts(d, box, json.next, all) } }) : null);
    } catch (err) {
      if (signal.aborted) return;
      put(box);
      showError(box, err);
    }
  }
  return {
    load,
    start() {
      put(section, h('h2', { id: 'deliveries-heading', text: 'Deliveries' }), spinner('Loading deliveries\u2026'));
      load(true).catch((err) => { if (!signal.aborted) { put(section, h('h2', { id: 'deliveries-heading', text: 'Deliveries' })); showError(section, err); } });
    },
    stop: () => clearTimeout(pollTimer),
  };
}
