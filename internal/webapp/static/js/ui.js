// Small DOM helpers: every element is built with createElement and text is
// set with textContent, so data from the API can never become markup.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') el.className = Array.isArray(v) ? v.filter(Boolean).join(' ') : v;
      else if (k === 'text') el.textContent = v;
      else if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
      else if (k === 'style') throw new Error('h(): no style attributes (CSP); use a class');
      else if (k === 'value' || k === 'checked' || k === 'selected' || k === 'disabled' || k === 'hidden') {
        el[k] = v;
        if (k !== 'value' && v === true) el.setAttribute(k, '');
      } else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

const timeFmt = new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit' });
const dayFmt = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric' });
const yearFmt = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric' });
const fullFmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

// formatTime: the time for today, the day this year, the date otherwise.
export function formatTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (isNaN(d)) return '';
  const now = new Date();
  if (d.toDateString() === now.toDateString()) return timeFmt.format(d);
  if (d.getFullYear() === now.getFullYear()) return dayFmt.format(d);
  return yearFmt.format(d);
}

const dayTimeFmt = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit' });
const yearTimeFmt = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit' });

// formatStamp is a message's time: the time alone for today, the day and
// the time before (a thread reads across days), the year too when it is
// another year's.
export function formatStamp(iso) {
  const d = new Date(iso);
  if (!iso || isNaN(d)) return '';
  const now = new Date();
  if (d.toDateString() === now.toDateString()) return timeFmt.format(d);
  return (d.getFullYear() === now.getFullYear() ? dayTimeFmt : yearTimeFmt).format(d);
}

export function formatFullTime(iso) {
  const d = new Date(iso);
  return isNaN(d) ? '' : fullFmt.format(d);
}

// timeEl is a <time> with the short form shown and the full one on hover.
// With stamp, the short form keeps the time of day (formatStamp).
export function timeEl(iso, cls, { stamp = false } = {}) {
  return h('time', { class: cls, datetime: iso, title: formatFullTime(iso) }, stamp ? formatStamp(iso) : formatTime(iso));
}

// formatPhone shows North American numbers as +1 (415) 555-0100 and any
// other number as + and its digits; anything else (a short code, a name)
// as given.
export function formatPhone(n) {
  if (!n) return '';
  const s = String(n);
  const d = s.replace(/\D/g, '');
  if (d.length === 11 && d[0] === '1') return `+1 (${d.slice(1, 4)}) ${d.slice(4, 7)}-${d.slice(7)}`;
  if (d.length === 10 && !s.startsWith('+')) return `(${d.slice(0, 3)}) ${d.slice(3, 6)}-${d.slice(6)}`;
  if (d.length > 7 && d.length === s.replace(/[\s+()-]/g, '').length) return '+' + d;
  return s;
}

// formatMoney formats a decimal string exactly (no float arithmetic on
// money): "0.0075" USD -> "$0.0075"; at least two decimals.
export function formatMoney(decimalString, currency = 'USD') {
  if (decimalString === undefined || decimalString === null) return '';
  let s = String(decimalString).trim();
  let neg = false;
  if (s.startsWith('-')) { neg = true; s = s.slice(1); }
  let [int, frac = ''] = s.split('.');
  int = (int || '0').replace(/^0+(?=\d)/, '');
  while (frac.length < 2) frac += '0';
  const grouped = int.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const symbols = { USD: '$', CAD: 'CA$', EUR: '€', GBP: '£' };
  const sym = symbols[currency];
  const body = grouped + '.' + frac;
  return (neg ? '−' : '') + (sym ? sym + body : body + ' ' + (currency || ''));
}

// errorText says what an error means for the person, not the protocol.
export function errorText(err) {
  if (!err) return 'Something went wrong.';
  if (err.name !== 'ApiError') return err.message || 'Something went wrong.';
  switch (err.type) {
    case 'insufficient_scope':
      return `This sign-in was not granted ${err.body?.error?.scope ? '“' + err.body.error.scope + '”' : 'the access needed'}, so this is not available. Sign out and in again, or ask an administrator.`;
    case 'permission_denied':
      return `Your role does not allow this. ${err.detail ? '(' + err.detail + ')' : ''} Ask an administrator if you need it.`.replace('  ', ' ');
    case 'not_found':
      return 'Not found: it was deleted, or it is not on a line you can use.';
    case 'unauthenticated':
      return 'Your sign-in has ended. Sign in again.';
    case 'rate_limited':
      return 'Too many requests just now. Wait a moment and try again.';
    case 'unavailable':
    case 'internal_error':
      return 'The server had a problem. Try again in a moment.';
    case 'network':
      return err.detail;
    default:
      return err.detail || err.message || 'The request failed.';
  }
}

// showError puts an error message (role="alert") into container.
export function showError(container, err) {
  const box = h('div', { class: 'error', role: 'alert' }, h('p', { text: errorText(err) }));
  if (container) {
    container.querySelectorAll(':scope > .error').forEach((e) => e.remove());
    container.prepend(box);
  }
  return box;
}

// announce reads text out to screen readers (the polite live region).
let announceTimer;
export function announce(text) {
  const el = document.getElementById('announcer');
  if (!el) return;
  el.textContent = '';
  clearTimeout(announceTimer);
  // A change after a tick is announced even when the text repeats.
  announceTimer = setTimeout(() => { el.textContent = text; }, 50);
}

export function emptyState(title, text, ...extra) {
  return h('div', { class: 'empty' }, h('p', { class: 'empty-title', text: title }), text ? h('p', { class: 'empty-text', text }) : null, ...extra);
}

export function spinner(label = 'Loading…') {
  return h('div', { class: 'spinner', role: 'status' }, h('span', { class: 'spinner-dot', 'aria-hidden': 'true' }), h('span', { text: label }));
}

// dialog opens a modal <dialog> with a title and body; actions are
// [{label, value, class}]. Resolves to the value chosen, or null on Escape.
export function dialog(title, body, actions = [{ label: 'Close', value: null }]) {
  return new Promise((resolve) => {
    const titleId = 'dlg-' + Math.random().toString(36).slice(2);
    const buttons = actions.map((a) => h('button', { type: a.submit ? 'submit' : 'button', class: a.class || 'btn', value: a.value ?? '', on: a.submit ? {} : { click: () => close(a.value) } }, a.label));
    const form = h('form', { method: 'dialog', on: { submit: (e) => { e.preventDefault(); close(actions.find((a) => a.submit)?.value ?? true); } } },
      h('h2', { id: titleId, text: title }), body, h('div', { class: 'dialog-actions' }, buttons));
    const dlg = h('dialog', { class: 'dialog', 'aria-labelledby': titleId }, form);
    const opener = document.activeElement;
    let done = false;
    function close(v) {
      if (done) return;
      done = true;
      dlg.close();
      dlg.remove();
      if (opener && opener.focus) opener.focus();
      resolve(v);
    }
    dlg.addEventListener('cancel', (e) => { e.preventDefault(); close(null); });
    document.body.append(dlg);
    dlg.showModal();
    const first = dlg.querySelector('[autofocus]') || dlg.querySelector('input, textarea, select') || buttons[buttons.length - 1];
    first?.focus();
  });
}

export function confirmDialog(title, text, confirmLabel = 'Delete') {
  return dialog(title, h('p', { text }), [
    { label: 'Cancel', value: false, class: 'btn' },
    { label: confirmLabel, value: true, class: 'btn btn-danger', submit: true },
  ]).then((v) => v === true);
}

// typing reports whether a key press is meant for a text field.
export function typing(e) {
  const t = e.target;
  return t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
}
