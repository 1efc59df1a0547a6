// Webhook administration: the account's subscriptions (GET /webhooks), a new
// one (POST /webhooks, its secret shown once), and per subscription: enable,
// disable, send a test event, rotate the secret, delete, its deliveries
// (paged with `before`), each delivery's attempts, and redeliver.
// Routes: /webhooks and /webhooks/:id.
import { ApiError } from './api.js';
import { h, showError, announce, emptyState, spinner, confirmDialog } from './ui.js';

// put replaces el's children with kids, flattened, leaving out null and
// false (replaceChildren alone would show them as text).
function put(el, ...kids) {
  el.replaceChildren(...kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false));
  return el;
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const when = (iso) => (iso ? dateTime.format(new Date(iso)) : '\u2014');

// canWrite: reading needs webhooks:read (ctx.can.webhooks); changing anything
// needs webhooks:write, so without it the buttons are not offered. When the
// scopes are not known (no /me), offer them and let a 403 say why.
function canWrite(ctx) {
  const scopes = ctx.me && ctx.me.scopes;
  return Array.isArray(scopes) ? scopes.includes('webhooks:write') : true;
}

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

// ---- small pieces ----

// secretBox shows a signing secret with a copy button and the warning that
// goes with it. It is shown when the API answers it (create, rotate) only.
function secretBox(secret, lead) {
  const code = h('code', { class: 'secret', text: secret });
  const status = h('span', { class: 'copy-status', role: 'status' });
  const copy = h('button', { type: 'button', class: 'btn', text: 'Copy', on: { click: async () => {
    try {
      await navigator.clipboard.writeText(secret);
      status.textContent = 'Copied.';
    } catch {
      // Without clipboard access, select the text so Ctrl+C copies it.
      const r = document.createRange();
      r.selectNodeContents(code);
      getSelection().removeAllRanges();
      getSelection().addRange(r);
      status.textContent = 'Selected: press Ctrl+C to copy.';
    }
  } } });
  return h('div', { class: 'secret-box', role: 'region', 'aria-label': 'Signing secret', tabindex: '-1' },
    h('p', null, h('strong', { text: lead }), ' Store it in your receiver now: it verifies the webhook-signature header of every delivery. Treat it as a password.'),
    h('div', { class: 'secret-line' }, code, copy, status));
}

function enabledBadge(w) {
  return h('span', { class: `badge ${w.enabled ? 'state-on' : 'state-off'}`, text: w.enabled ? 'Enabled' : 'Disabled' });
}

function stateBadge(state) {
  const label = { pending: 'Pending', succeeded: 'Succeeded', failed: 'Failed', skipped: 'Skipped' }[state] || state;
  return h('span', { class: `badge delivery-${state}`, text: label });
}

// errorParts splits "category: sentence" (the API's attempt error) so the
// category, which integrators branch on, stands out.
function errorParts(err) {
  if (!err) return null;
  const i = err.indexOf(':');
  if (i < 0) return h('span', { text: err });
  return h('span', null, h('code', { class: 'category', text: err.slice(0, i) }), ' ', err.slice(i + 1).trim());
}

function attemptSummary(a) {
  if (!a) return 'Not tried yet';
  const status = a.statusCode ? `HTTP ${a.statusCode}` : 'No answer';
  return `${status} in ${a.latencyMs} ms`;
}

// ---- the list ----

async function renderList(main, ctx) {
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
      h('thead', null, h('tr', null, ['Subscription', 'Event type', 'State', 'Created'].map((c) => h('th', { scope: 'col', text: c })))),
      h('tbody', null, hooks.map((w) => h('tr', null,
        h('th', { scope: 'row', 'data-label': 'Subscription' },
          h('a', { href: `/app/webhooks/${w.id}`, text: w.name || w.url }),
          w.name ? h('div', { class: 'url', text: w.url }) : null),
        h('td', { 'data-label': 'Event type' }, h('code', { text: w.type })),
        h('td', { 'data-label': 'State' }, enabledBadge(w)),
        h('td', { 'data-label': 'Created', text: when(w.createdAt) }))))));
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

function createForm(types, ctx, onCreated) {
  const name = h('input', { id: 'wh-name', name: 'name', type: 'text', maxlength: '200', autocomplete: 'off' });
  const url = h('input', { id: 'wh-url', name: 'url', type: 'url', required: '', maxlength: '2048', placeholder: 'https://example.com/webhooks/switchboard', autocomplete: 'off', 'aria-describedby': 'wh-url-hint' });
  const type = h('select', { id: 'wh-type', name: 'type', required: '', 'aria-describedby': 'wh-type-hint' },
    types.map((t) => h('option', { value: t.type, text: t.type })));
  const typeHint = h('small', { id: 'wh-type-hint', class: 'hint' });
  const showTypeHint = () => { typeHint.textContent = (types.find((t) => t.type === type.value) || {}).description || ''; };
  type.addEventListener('change', showTypeHint);
  showTypeHint();
  const description = h('textarea', { id: 'wh-description', name: 'description', rows: '2', maxlength: '2000' });
  const enabled = h('input', { id: 'wh-enabled', name: 'enabled', type: 'checkbox' });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', text: 'Create subscription' });
  const errors = h('div', { class: 'form-errors' });
  const form = h('form', { class: 'stack', 'aria-labelledby': 'webhook-create-heading' },
    h('div', { class: 'field' }, h('label', { for: 'wh-url', text: 'Endpoint URL' }), url,
      h('small', { id: 'wh-url-hint', class: 'hint', text: 'Must be https, unless your operator allows this host.' })),
    h('div', { class: 'field' }, h('label', { for: 'wh-type', text: 'Event type' }), type, typeHint),
    h('div', { class: 'field' }, h('label', { for: 'wh-name', text: 'Name (optional)' }), name),
    h('div', { class: 'field' }, h('label', { for: 'wh-description', text: 'Description (optional)' }), description),
    h('label', { class: 'check', for: 'wh-enabled' }, enabled, ' Enable now (otherwise it receives nothing until enabled)'),
    errors,
    h('div', { class: 'actions' }, submit));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    put(errors);
    submit.disabled = true;
    try {
      const body = { url: url.value.trim(), type: type.value, enabled: enabled.checked };
      if (name.value.trim()) body.name = name.value.trim();
      if (description.value.trim()) body.description = description.value.trim();
      const w = await ctx.api('POST', '/webhooks', { body });
      form.reset();
      showTypeHint();
      await onCreated(w);
    } catch (err) {
      showError(errors, err);
      url.focus();
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

// ---- one subscription ----

async function renderOne(main, id, ctx) {
  const controller = new AbortController();
  const signal = controller.signal;
  const base = `/webhooks/${encodeURIComponent(id)}`;
  const backLink = h('a', { class: 'back', href: '/app/webhooks', text: '\u2190 Webhooks' });
  put(main, backLink, h('h1', { text: 'Subscription' }), spinner('Loading the subscription\u2026'));
  let w;
  try {
    w = await ctx.api('GET', base, { signal });
  } catch (err) {
    if (signal.aborted) return;
    put(main, backLink, h('h1', { text: 'Subscription' }));
    showError(main, err);
    return () => controller.abort();
  }
  if (signal.aborted) return;
  const writer = canWrite(ctx);
  let pollTimer = null;

  const heading = h('h1', { tabindex: '-1' });
  const facts = h('dl', { class: 'facts' });
  const outcome = h('div', { class: 'outcome', 'aria-live': 'polite' });
  const actions = h('div', { class: 'actions webhook-actions' });
  const deliveries = h('section', { class: 'deliveries', 'aria-labelledby': 'deliveries-heading' });

  const showSub = () => {
    heading.textContent = w.name || w.url;
    document.title = `${heading.textContent} \u00b7 Webhooks \u00b7 Switchboard`;
    put(facts,
      h('dt', { text: 'State' }), h('dd', null, enabledBadge(w)),
      h('dt', { text: 'Endpoint' }), h('dd', null, h('code', { class: 'url', text: w.url })),
      h('dt', { text: 'Event type' }), h('dd', null, h('code', { text: w.type })),
      w.description ? [h('dt', { text: 'Description' }), h('dd', { text: w.description })] : null,
      h('dt', { text: 'Created' }), h('dd', { text: when(w.createdAt) }),
      h('dt', { text: 'Updated' }), h('dd', { text: when(w.updatedAt) }));
    if (!writer) { put(actions); return; }
    put(actions,
      button(w.enabled ? 'Disable' : 'Enable', w.enabled ? 'btn' : 'btn btn-primary', toggle),
      button('Send a test event', 'btn', test),
      button('Rotate secret\u2026', 'btn', rotate),
      button('Delete\u2026', 'btn btn-danger', remove));
  };

  const button = (label, cls, fn) => {
    const b = h('button', { type: 'button', class: cls || 'btn', text: label });
    b.addEventListener('click', async () => {
      b.disabled = true;
      b.setAttribute('aria-busy', 'true');
      try {
        await fn();
      } catch (err) {
        put(outcome);
        showError(outcome, err);
      } finally {
        b.disabled = false;
        b.removeAttribute('aria-busy');
      }
    });
    return b;
  };

  const toggle = async () => {
    w = await ctx.api('POST', `${base}/${w.enabled ? 'disable' : 'enable'}`);
    showSub();
    const text = w.enabled ? 'Enabled: new events are delivered to this endpoint.' : 'Disabled: this endpoint receives nothing until enabled again.';
    put(outcome, h('p', { class: 'success', text }));
    actions.querySelector('button').focus();
  };

  const test = async () => {
    put(outcome, spinner('Sending a test event\u2026'));
    const d = await ctx.api('POST', `${base}/test`);
    const a = d.lastAttempt;
    put(outcome, d.state === 'succeeded'
      ? h('p', { class: 'success' }, `Test event delivered: the endpoint answered ${attemptSummary(a)}.`)
      : h('p', { class: 'error' }, `Test event not delivered: ${attemptSummary(a)}. `, a && a.error ? errorParts(a.error) : null));
    await loadDeliveries(true);
  };

  const rotate = async () => {
    const yes = await confirmDialog('Rotate the signing secret?',
      'A new secret signs every delivery from now on. The current one keeps signing beside it for 24 hours, so your receiver can switch over.',
      'Rotate secret');
    if (!yes) return;
    const s = await ctx.api('POST', `${base}/secret/rotate`);
    const box = secretBox(s.secret, 'The new signing secret.');
    const prev = (s.previousSecrets || []).map((p) => p.expiresAt).filter(Boolean);
    put(outcome, box, prev.length ? h('p', { class: 'muted', text: `The previous secret signs until ${when(prev[0])}.` }) : null);
    box.focus();
  };

  const remove = async () => {
    const yes = await confirmDialog('Delete this subscription?',
      `${w.url} will receive no more events, and deliveries not yet made are dropped. This cannot be undone.`,
      'Delete subscription');
    if (!yes) return;
    await ctx.api('DELETE', base);
    announce('Subscription deleted.');
    ctx.navigate('/webhooks');
  };

  // ---- deliveries, paged with `before` ----
  let pages = []; // the deliveries shown, newest first
  let next = null;

  const loadDeliveries = async (fresh) => {
    const query = { limit: 20 };
    if (!fresh && next) query.before = next;
    const env = await ctx.api('GET', `${base}/deliveries`, { query, signal, raw: true });
    const json = await env.json();
    if (!env.ok) throw errorFrom(env, json);
    pages = fresh ? json.data : pages.concat(json.data);
    next = json.next || null;
    showDeliveries();
    schedulePoll();
  };

  // While a delivery on screen is pending (a redelivery, a retry), look again
  // shortly, so its outcome shows without a reload.
  const schedulePoll = () => {
    clearTimeout(pollTimer);
    if (signal.aborted || !pages.slice(0, 20).some((d) => d.state === 'pending')) return;
    pollTimer = setTimeout(() => {
      refreshFirstPage().catch(() => {});
    }, 1500);
  };
  const refreshFirstPage = async () => {
    const env = await ctx.api('GET', `${base}/deliveries`, { query: { limit: 20 }, signal, raw: true });
    if (!env.ok) return;
    const json = await env.json();
    const fresh = new Map(json.data.map((d) => [d.id, d]));
    const known = new Set(pages.map((d) => d.id));
    pages = json.data.filter((d) => !known.has(d.id)).concat(pages.map((d) => fresh.get(d.id) || d));
    showDeliveries();
    schedulePoll();
  };

  const open = new Set(); // deliveries whose attempts are shown (kept across refreshes)
  const showDeliveries = () => {
    const head = h('h2', { id: 'deliveries-heading', text: 'Deliveries' });
    const refresh = h('button', { type: 'button', class: 'btn btn-small', text: 'Refresh', on: { click: () => loadDeliveries(true).catch((err) => showError(deliveries, err)) } });
    if (!pages.length) {
      put(deliveries, h('div', { class: 'section-head' }, head, refresh),
        emptyState('No deliveries yet', 'Events of this type will appear here as they are sent. Send a test event to try the endpoint.'));
      return;
    }
    const more = next
      ? h('button', { type: 'button', class: 'btn', text: 'Older deliveries', on: { click: () => loadDeliveries(false).catch((err) => showError(deliveries, err)) } })
      : null;
    put(deliveries, h('div', { class: 'section-head' }, head, refresh),
      h('ul', { class: 'delivery-list' }, pages.map((d) => deliveryItem(d))), more);
  };

  const deliveryItem = (d) => {
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
        writer ? h('div', { class: 'actions' }, button('Redeliver', 'btn', async () => {
          const nd = await ctx.api('POST', `${base}/deliveries/${d.id}/redeliver`);
          pages = [nd, ...pages];
          showDeliveries();
          put(outcome, h('p', { class: 'success', text: `Queued again as delivery ${nd.id}; it is sent now.` }));
          announce('Delivery queued again.');
          schedulePoll();
        })) : null,
        attemptsBox));
    details.open = open.has(d.id);
    if (details.open) loadAttempts(d, attemptsBox);
    details.addEventListener('toggle', () => {
      if (details.open) { open.add(d.id); loadAttempts(d, attemptsBox); } else open.delete(d.id);
    });
    return h('li', null, details);
  };

  const loadAttempts = async (d, box, before, shown = []) => {
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
  };

  put(main, backLink, heading, facts, actions, outcome, deliveries);
  showSub();
  put(deliveries, h('h2', { id: 'deliveries-heading', text: 'Deliveries' }), spinner('Loading deliveries\u2026'));
  loadDeliveries(true).catch((err) => { if (!signal.aborted) { put(deliveries, h('h2', { id: 'deliveries-heading', text: 'Deliveries' })); showError(deliveries, err); } });
  heading.focus();
  return () => { controller.abort(); clearTimeout(pollTimer); };
}


function attemptsTable(d, attempts) {
  if (!attempts.length) return h('p', { class: 'muted', text: 'No attempt yet.' });
  return h('table', { class: 'attempts-table' },
    h('caption', { text: `Attempts of delivery ${d.id}, newest first` }),
    h('thead', null, h('tr', null, ['When', 'Status', 'Latency', 'Error', 'Response (start)'].map((c) => h('th', { scope: 'col', text: c })))),
    h('tbody', null, attempts.map((a) => h('tr', null,
      h('td', { 'data-label': 'When', text: when(a.at) }),
      h('td', { 'data-label': 'Status', text: a.statusCode ? String(a.statusCode) : 'none' }),
      h('td', { 'data-label': 'Latency', text: `${a.latencyMs} ms` }),
      h('td', { 'data-label': 'Error' }, a.error ? errorParts(a.error) : h('span', { class: 'muted', text: '\u2014' })),
      h('td', { 'data-label': 'Response' }, a.response ? h('pre', { class: 'excerpt', text: a.response }) : h('span', { class: 'muted', text: 'empty' }))))));
}

// errorFrom turns a raw error response into the ApiError api() would have
// thrown (raw responses are used where `next`, beside `data`, is needed).
function errorFrom(resp, json) {
  const e = (json && json.error) || {};
  return new ApiError(resp.status, e.type || 'http_' + resp.status, e.message || resp.statusText, json);
}
