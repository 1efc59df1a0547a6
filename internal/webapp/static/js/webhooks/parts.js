// The pieces of the webhook screens: the signing secret shown once,
// state badges, an attempt's error and summary, the attempts table.
import { ApiError } from '../api.js';
import { h } from '../ui.js';


// put replaces el's children with kids, flattened, leaving out null and
// false (replaceChildren alone would show them as text).
export function put(el, ...kids) {
  el.replaceChildren(...kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false));
  return el;
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
export const when = (iso) => (iso ? dateTime.format(new Date(iso)) : '\u2014');

// canWrite: reading needs webhooks:read (ctx.can.webhooks); changing anything
// needs webhooks:write, so without it the buttons are not offered. When the
// scopes are not known (no /me), offer them and let a 403 say why.
export function canWrite(ctx) {
  const scopes = ctx.me && ctx.me.scopes;
  return Array.isArray(scopes) ? scopes.includes('webhooks:write') : true;
}

// ---- small pieces ----

// secretBox shows a signing secret with a copy button and the warning that
// goes with it. It is shown when the API answers it (create, rotate) only.
export function secretBox(secret, lead) {
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

export function enabledBadge(w) {
  return h('span', { class: `badge ${w.enabled ? 'state-on' : 'state-off'}`, text: w.enabled ? 'Enabled' : 'Disabled' });
}

export function stateBadge(state) {
  const label = { pending: 'Pending', succeeded: 'Succeeded', failed: 'Failed', skipped: 'Skipped' }[state] || state;
  return h('span', { class: `badge delivery-${state}`, text: label });
}

// errorParts splits "category: sentence" (the API's attempt error) so the
// category, which integrators branch on, stands out.
export function errorParts(err) {
  if (!err) return null;
  const i = err.indexOf(':');
  if (i < 0) return h('span', { text: err });
  return h('span', null, h('code', { class: 'category', text: err.slice(0, i) }), ' ', err.slice(i + 1).trim());
}

export function attemptSummary(a) {
  if (!a) return 'Not tried yet';
  const status = a.statusCode ? `HTTP ${a.statusCode}` : 'No answer';
  return `${status} in ${a.latencyMs} ms`;
}

export function attemptsTable(d, attempts) {
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
export function errorFrom(resp, json) {
  const e = (json && json.error) || {};
  return new ApiError(resp.status, e.type || 'http_' + resp.status, e.message || resp.statusText, json);
}

