// The header's places for what comes next: the search field ("/" focuses
// it), "New text", and the notification permission. Each is real as far
// as the public API goes: search opens the search screen (search.js), "New
// text" finds the person to text among the contacts (GET /contacts?q=).
import { h, dialog, formatPhone, typing } from '../ui.js';
import { store } from '../store.js';
import { threadHref } from '../names.js';
import { choosePreferences } from './notify.js';

// searchField is the header's search: "/" focuses it anywhere; as one
// types, the first hits of each group show beneath it (quickResults);
// Enter opens the search screen (search.js) for the words.
export function searchField(ctx) {
  const input = h('input', { type: 'search', id: 'app-search', name: 'q', autocomplete: 'off', placeholder: 'Search', 'aria-keyshortcuts': '/' });
  const form = h('form', { class: 'app-search', role: 'search', 'aria-label': 'Search contacts, conversations and messages' },
    h('label', { for: 'app-search', class: 'visually-hidden', text: 'Search' }), input,
    h('kbd', { class: 'search-key', 'aria-hidden': 'true', text: '/' }));
  const quick = quickResults(ctx, form, input);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const q = input.value.trim();
    quick.close();
    if (q) ctx.navigate('/search?q=' + encodeURIComponent(q));
  });
  function onKey(e) {
    if (e.key !== '/' || e.ctrlKey || e.metaKey || e.altKey || typing(e) || document.querySelector('dialog[open]')) return;
    e.preventDefault();
    input.focus();
    input.select();
    // Some keyboards (and DevTools' key events) still deliver the "/" as
    // text to the field that just took the focus: it is the shortcut, not
    // the search.
    const drop = (ev) => { if (ev.data === '/') ev.preventDefault(); };
    input.addEventListener('beforeinput', drop);
    setTimeout(() => input.removeEventListener('beforeinput', drop), 50);
  }
  document.addEventListener('keydown', onKey);
  return { el: form, stop: () => { document.removeEventListener('keydown', onKey); quick.close(); } };
}

// quickResults shows, 250 ms after the last key, the first three hits of
// each group GET /search finds for what is typed (two characters or
// more), under the field; a hit opens its page, Escape or a click
// elsewhere closes them. Only the newest answer is shown.
function quickResults(ctx, form, input) {
  const panel = h('div', { class: 'quick-results', id: 'quick-results', hidden: true, 'aria-label': 'Search results as you type' });
  form.append(panel);
  input.setAttribute('aria-controls', 'quick-results');
  let timer = 0, seq = 0;
  const close = () => { clearTimeout(timer); seq++; panel.hidden = true; panel.replaceChildren(); };
  async function show(q) {
    const mine = ++seq;
    const [search, a] = await Promise.all([import('../search.js'), ctx.api('GET', '/search', { query: { q, limit: 3 } })]);
    if (mine !== seq) return;
    const groups = search.GROUPS.filter(([g]) => a[g]?.length).map(([g, title, draw]) =>
      h('section', null, h('h2', { class: 'quick-title', text: title }), h('ol', { class: 'hits' }, a[g].map(draw))));
    panel.replaceChildren(...(groups.length ? groups : [h('p', { class: 'muted', text: `Nothing found for “${q}”.` })]),
      h('p', { class: 'hint', text: 'Enter: every result' }));
    panel.hidden = false;
  }
  input.addEventListener('input', () => {
    clearTimeout(timer);
    const q = input.value.trim();
    if (q.length < 2 || !ctx.can.inbox) { close(); return; }
    timer = setTimeout(() => show(q).catch(() => close()), 250);
  });
  panel.addEventListener('click', (e) => { if (e.target.closest('a')) close(); });
  form.addEventListener('keydown', (e) => { if (e.key === 'Escape' && !panel.hidden) { e.stopPropagation(); close(); input.focus(); } });
  document.addEventListener('click', (e) => { if (!form.contains(e.target)) close(); });
  return { close };
}

// normalizeNumber keeps a number's digits; ten North American digits get
// their country code, as the send path reads them.
export function normalizeNumber(s) {
  const d = String(s).replace(/\D/g, '');
  return d.length === 10 ? '1' + d : d;
}

// newTextButton opens a dialog: a line the person may send from and a
// number; the thread for them opens, empty, ready for the first text.
export function newTextButton(ctx) {
  async function start() {
    const lines = await ctx.lines().catch(() => store.get('lines') || []);
    const line = h('select', { id: 'new-text-line', name: 'line' },
      lines.map((l) => h('option', { value: l.number, text: l.name ? `${l.name} · ${formatPhone(l.number)}` : formatPhone(l.number) })));
    const number = h('input', { id: 'new-text-number', name: 'number', autocomplete: 'off', required: true, list: 'new-text-contacts', 'aria-describedby': 'new-text-shown' });
    const found = h('datalist', { id: 'new-text-contacts' });
    const shown = h('p', { id: 'new-text-shown', class: 'hint', 'aria-live': 'polite' });
    // A name typed finds the contacts it begins; choosing one puts its
    // number in the field (the option's value), its name beside it.
    const names = new Map();
    let timer = 0, asked = '';
    number.addEventListener('input', () => {
      const v = number.value.trim();
      const n = normalizeNumber(v);
      const who = names.get(v);
      shown.textContent = n.length >= 7 ? `To ${who ? who + ', ' : ''}${formatPhone(n)}` : '';
      clearTimeout(timer);
      if (!/\p{L}/u.test(v) || v === asked || !ctx.can.inbox) return;
      timer = setTimeout(async () => {
        asked = v;
        const page = await ctx.api('GET', '/contacts', { query: { q: v, limit: 8 } }).catch(() => []);
        found.replaceChildren(...page.flatMap((c) => c.numbers.map((x) => {
          names.set(formatPhone(x.number), c.name);
          return h('option', { value: formatPhone(x.number), label: `${c.name}${x.label ? ' · ' + x.label : ''}` });
        })));
      }, 150);
    });
    const body = lines.length
      ? [h('label', { for: 'new-text-line', text: 'From' }), line, h('label', { for: 'new-text-number', text: 'To (a contact’s name or a phone number)' }), number, found, shown]
      : h('p', { text: 'You have no line to text from. Ask an administrator for one.' });
    const ok = await dialog('New text', body, lines.length
      ? [{ label: 'Cancel', value: false }, { label: 'Write the text', value: true, class: 'btn btn-primary', submit: true }]
      : [{ label: 'Close', value: false }]);
    const to = normalizeNumber(number.value);
    if (!ok || to.length < 7) return;
    ctx.navigate(threadHref(line.value, to) + '?new=1');
  }
  return h('button', { type: 'button', class: 'btn btn-new', 'aria-label': 'New text', on: { click: start } }, h('span', { 'aria-hidden': 'true' }, '+\u00a0'), 'New', h('span', { class: 'label-wide', text: '\u00a0text' }));
}

// notifyButton asks for the browser's permission to notify, on a click
// only (never on load), and says what was decided; once allowed, it opens
// the choice of what to be notified of (shell/notify.js).
export function notifyButton(ctx) {
  if (typeof Notification !== 'function' || ctx.me?.kind !== 'user' || !ctx.can.inbox) return null;
  const btn = h('button', { type: 'button', class: 'btn btn-quiet notify-btn' });
  function paint() {
    const p = Notification.permission;
    if (p === 'default') btn.replaceChildren('Notify', h('span', { class: 'label-wide', text: ' me' }));
    else btn.textContent = p === 'granted' ? 'Notifications' : 'Notifications blocked';
    btn.disabled = p === 'denied';
    btn.title = p === 'denied' ? 'The browser blocks notifications for this site: allow them in its site settings.'
      : p === 'default' ? 'Let this browser show a notification when a text arrives' : 'Choose what to be notified of';
  }
  btn.addEventListener('click', async () => {
    if (Notification.permission === 'granted') { choosePreferences(ctx); return; }
    try { await Notification.requestPermission(); } catch { /* an old browser: the answer shows below */ }
    paint();
    if (Notification.permission === 'granted') choosePreferences(ctx);
  });
  paint();
  return btn;
}
