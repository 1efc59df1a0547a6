// The conversation list: the first page for a filter and a line, "Load
// more", and reading it again when the stream says something changed (new
// texts move their conversation to the top; rows that left the filter go).
import { emptyState, spinner, showError, announce } from '../ui.js';
import { store } from '../store.js';
import { peopleLabel, convKey } from '../names.js';
import { EMPTY, filterQuery } from './views.js';
import { row, itemKey } from './rows.js';

const PAGE = 50;

// conversationList draws into list (the rows), status (spinner, error,
// empty) and more (the button). onPaint(items) runs after each drawing.
export function conversationList(ctx, { list, status, more, onPaint }) {
  const s = { where: { view: 'all', line: '' }, items: [], done: false, loading: false, error: null, current: '' };

  function paint() {
    const focusedKey = list.contains(document.activeElement) ? document.activeElement.dataset.key : null;
    list.replaceChildren(...s.items.map((i) => row(i, s.where, s.current)));
    if (focusedKey) list.querySelector(`a[data-key="${CSS.escape(focusedKey)}"]`)?.focus();
    status.replaceChildren();
    if (s.error) showError(status, s.error);
    else if (!s.items.length && !s.loading) status.append(emptyState(...EMPTY[s.where.view]));
    more.hidden = s.done || !s.items.length;
    more.disabled = s.loading;
    more.textContent = s.loading ? 'Loading…' : 'Load more';
    onPaint?.(s.items);
  }
  // Names arrive after the rows (teammates, lines): the rows say them.
  const offs = [store.subscribe('users', paint, { now: false }), store.subscribe('lines', paint, { now: false })];

  // load reads the first page, or (next) the one after what is shown.
  let seq = 0;
  async function load(next = false) {
    const my = ++seq;
    s.loading = true;
    s.error = null;
    if (!next) { s.items = []; s.done = false; list.replaceChildren(); status.replaceChildren(spinner('Loading conversations…')); } else paint();
    try {
      const page = await ctx.api('GET', '/sms/conversations', { query: filterQuery(s.where, next ? s.items.length : 0, PAGE) });
      if (my !== seq) return;
      const have = new Set(s.items.map(itemKey));
      s.items = s.items.concat(page.filter((i) => !have.has(itemKey(i))));
      s.done = page.length < PAGE;
      if (next) announce(`${page.length} more conversations loaded.`);
    } catch (err) {
      if (my !== seq) return;
      s.error = err;
    }
    s.loading = false;
    paint();
  }
  more.addEventListener('click', () => load(true));

  // refresh reads again what the list shows (up to 200 rows in one
  // request).
  let timer = 0;
  function refreshSoon() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 80);
  }
  async function refresh() {
    if (s.loading) { refreshSoon(); return; }
    const my = ++seq;
    const shown = Math.max(PAGE, Math.min(200, s.items.length));
    try {
      const page = await ctx.api('GET', '/sms/conversations', { query: filterQuery(s.where, 0, shown) });
      if (my !== seq) return;
      const fresh = new Set(page.map(itemKey));
      // Rows beyond what was read again stay (only past 200 loaded rows).
      s.items = page.concat(s.items.slice(shown).filter((i) => !fresh.has(itemKey(i))));
      if (s.items.length <= shown) s.done = page.length < shown;
      s.error = null;
      paint();
    } catch { /* keep what is shown; the next event tries again */ }
  }

  function onSMS(ev) {
    const d = ev.data || {};
    if (s.where.line && d.line !== s.where.line) return;
    // A receipt changes no row (rows show no delivery status): reading the
    // list again for each would cost a read per person per receipt.
    if (d.event === 'message.delivery') return;
    refreshSoon();
    if (d.event === 'message.received' && convKey(d.line, d.number, d.groupParticipants) !== s.current) {
      announce(`New text from ${peopleLabel(d.number, d.groupParticipants)}.`);
    }
  }
  function onConversation(ev) {
    const d = ev.data || {};
    if (s.where.line && d.line !== s.where.line) return;
    const item = find(convKey(d.line, d.number, d.groupParticipants));
    if (item && d.state) {
      // Show the change at once; the refresh then applies the filter.
      item.resolved = !!d.state.resolved;
      item.assignedTo = d.state.assignedTo ?? undefined;
      paint();
    }
    refreshSoon();
  }
  // A contact added, renamed or removed changes the names the rows show.
  offs.push(ctx.stream.on('AccountSMS', onSMS), ctx.stream.on('AccountConversations', onConversation), ctx.stream.on('AccountContacts', refreshSoon));

  function find(key) { return s.items.find((i) => itemKey(i) === key); }

  return {
    get where() { return s.where; },
    // show reads the list for where ({view, line}) when it changed.
    show(where) {
      const changed = where.view !== s.where.view || where.line !== s.where.line || !s.started;
      s.where = where;
      s.started = true;
      return changed ? load(false) : Promise.resolve();
    },
    // mark highlights the open conversation.
    mark(key) {
      s.current = key;
      list.querySelectorAll('a.conv').forEach((a) => a.setAttribute('aria-current', a.dataset.key === key ? 'true' : 'false'));
    },
    find,
    // update changes one row's state at once (the refresh follows).
    update(key, st) {
      const it = find(key);
      if (it) { it.resolved = st.resolved; it.assignedTo = st.assignedTo ?? undefined; paint(); }
      refreshSoon();
    },
    refreshSoon,
    cleanup() {
      offs.forEach((f) => f());
      clearTimeout(timer);
    },
  };
}
