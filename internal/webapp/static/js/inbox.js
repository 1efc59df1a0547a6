// The inbox: the conversation list (filters, line selector, unread badges,
// paging) and, beside it or instead of it on a phone, the open thread
// (thread.js). The list stays while threads change (update()).
import { h, timeEl, formatPhone, emptyState, spinner, showError, announce, dialog, typing } from './ui.js';
import { openThread, convKey, peopleLabel, userLabel } from './thread.js';

const APP = new URL('../', import.meta.url).pathname;
const PAGE = 50;
const VIEWS = [
  ['all', 'All', {}],
  ['unread', 'Unread', { unread: 'true' }],
  ['mine', 'Mine', { assignedToMe: 'true' }],
  ['unassigned', 'Unassigned', { unassigned: 'true' }],
  ['open', 'Open', { unresolved: 'true' }],
  ['resolved', 'Resolved', { resolved: 'true' }],
];
const EMPTY = {
  all: ['No conversations yet', 'Texts your lines send or receive will show up here as they arrive.'],
  unread: ['Nothing unread', 'You have read every text. New ones show up here as they arrive.'],
  mine: ['Nothing assigned to you', 'Conversations assigned to you show up here.'],
  unassigned: ['Every conversation has an owner', 'Conversations nobody is assigned to show up here.'],
  open: ['Nothing open', 'Every conversation is resolved. A new text reopens its conversation.'],
  resolved: ['Nothing resolved', 'Conversations you resolve show up here until a new text reopens them.'],
};

export const HELP = [
  ['j or ↓', 'Next conversation'],
  ['k or ↑', 'Previous conversation'],
  ['Enter', 'Open the conversation'],
  ['/', 'Choose the line'],
  ['1 … 6', 'Filters: All, Unread, Mine, Unassigned, Open, Resolved'],
  ['r', 'Reply (in a conversation)'],
  ['n', 'Add an internal note'],
  ['e', 'Resolve or reopen'],
  ['a', 'Assign'],
  ['u', 'Mark unread and go back'],
  ['Esc', 'Back to the list'],
  ['?', 'This help'],
];

export async function render(main, params, ctx) {
  if (!ctx.can.inbox) {
    main.append(h('div', { class: 'page' }, h('h1', { text: 'Inbox' }),
      emptyState('The inbox is not available', ctx.me?.permissions?.numbers === 'none'
        ? 'Your role gives you no phone numbers, so there are no conversations to show. Ask an administrator for access.'
        : 'This sign-in was not granted reading messages. Ask an administrator for access.')));
    return;
  }
  document.title = 'Inbox · Switchboard';
  const state = {
    view: 'all', line: '', items: [], done: false, loading: false, error: null,
    thread: null, threadKey: '', params,
  };

  const lineSelect = h('select', { id: 'line-select', name: 'line' });
  const viewNav = h('ul', { class: 'views' });
  const list = h('ul', { class: 'conv-list', 'aria-label': 'Conversations' });
  const status = h('div', { class: 'list-status' });
  const more = h('button', { type: 'button', class: 'btn more', hidden: true, on: { click: () => load(true) } }, 'Load more');
  const lineLink = h('a', { class: 'line-settings', href: APP + 'lines', hidden: true }, 'Line settings');
  const listPane = h('section', { class: 'list-pane', 'aria-labelledby': 'inbox-title' },
    h('div', { class: 'list-head' },
      h('div', { class: 'list-title' }, h('h1', { id: 'inbox-title', text: 'Inbox' }),
        h('button', { type: 'button', class: 'btn btn-quiet help-btn', 'aria-label': 'Keyboard shortcuts', title: 'Keyboard shortcuts (?)', on: { click: showHelp } }, '?')),
      h('div', { class: 'line-pick' }, h('label', { for: 'line-select', text: 'Line' }), lineSelect, lineLink),
      h('nav', { 'aria-label': 'Filter conversations' }, viewNav)),
    status, list, more);
  const threadPane = h('section', { class: 'thread-pane', 'aria-label': 'Conversation' });
  const root = h('div', { class: 'inbox' }, listPane, threadPane);
  main.append(root);

  lineSelect.addEventListener('change', () => {
    ctx.navigate(listURL({ line: lineSelect.value }));
  });

  // ---- lines and unread counts ----
  let lines = [];
  try {
    lines = await ctx.lines();
  } catch (err) {
    showError(listPane, err);
  }
  const lineName = new Map(lines.map((l) => [l.number, l.name]));
  ctx.lineName = (n) => lineName.get(n) || '';
  let users = [];
  ctx.users().then((u) => { users = u; paintRows(); }).catch(() => {});
  const userName = (id) => userLabel(id, users, ctx.me);

  function paintLines(u) {
    const counts = new Map((u?.lines || []).map((l) => [l.line, l.count]));
    const total = u?.total || 0;
    const opts = [h('option', { value: '', text: `All lines${total ? ` (${total} unread)` : ''}` })];
    for (const l of lines) {
      const c = counts.get(l.number) || 0;
      opts.push(h('option', { value: l.number, text: `${l.name || formatPhone(l.number)}${l.name ? ' · ' + formatPhone(l.number) : ''}${c ? ` (${c} unread)` : ''}` }));
    }
    lineSelect.replaceChildren(...opts);
    lineSelect.value = state.line;
  }
  paintLines(ctx.unread.get());
  const offUnread = ctx.unread.on(paintLines);

  // ---- the list ----
  function listQuery(over = {}) {
    const q = new URLSearchParams();
    const view = over.view ?? state.view;
    const line = over.line ?? state.line;
    if (view !== 'all') q.set('view', view);
    if (line) q.set('line', line);
    return q.toString();
  }
  function listURL(over) {
    const q = listQuery(over);
    return APP + 'inbox' + (q ? '?' + q : '');
  }
  function threadURL(item) {
    const q = new URLSearchParams(listQuery());
    if (item.groupParticipants?.length) q.set('group', item.groupParticipants.join(','));
    const s = q.toString();
    return `${APP}inbox/${encodeURIComponent(item.line)}/${encodeURIComponent(item.number)}${s ? '?' + s : ''}`;
  }

  function paintViews() {
    viewNav.replaceChildren(...VIEWS.map(([v, label], i) => h('li', null,
      h('a', { href: listURL({ view: v }), class: 'view', 'aria-current': v === state.view ? 'page' : null, 'aria-keyshortcuts': String(i + 1) }, label))));
    lineLink.hidden = !state.line;
    lineLink.href = state.line ? APP + 'lines/' + encodeURIComponent(state.line) : APP + 'lines';
  }

  function row(item) {
    const key = convKey(item.line, item.number, item.groupParticipants);
    const who = peopleLabel(item.number, item.groupParticipants);
    const excerpt = item.lastMessage || (item.hasMedia ? 'Attachment' : '');
    const unread = item.unreadCount > 0 || (item.unread && item.unreadCount === undefined);
    const meta = [];
    if (lines.length > 1) meta.push(h('span', { class: 'tag tag-line', text: lineName.get(item.line) || formatPhone(item.line) }));
    meta.push(item.assignedTo
      ? h('span', { class: 'tag tag-owner', text: '→ ' + userName(item.assignedTo) })
      : h('span', { class: 'tag tag-none', text: 'Unassigned' }));
    if (item.resolved) meta.push(h('span', { class: 'tag tag-resolved', text: '✓ Resolved' }));
    return h('li', { 'data-key': key },
      h('a', {
        href: threadURL(item), class: ['conv', unread && 'unread'], 'data-key': key,
        'aria-current': key === state.threadKey ? 'true' : null,
      },
      h('span', { class: 'conv-top' },
        h('span', { class: 'unread-dot', 'aria-hidden': 'true' }),
        h('span', { class: 'conv-who', text: who }),
        item.unreadCount > 0 ? h('span', { class: 'badge' }, String(item.unreadCount), h('span', { class: 'visually-hidden', text: ' unread' })) : (unread ? h('span', { class: 'visually-hidden', text: ' unread' }) : null),
        timeEl(item.lastMessageAt, 'conv-time')),
      h('span', { class: 'conv-excerpt' }, item.direction === 'out' ? h('span', { class: 'you', text: 'You: ' }) : null, excerpt),
      h('span', { class: 'conv-meta' }, meta)));
  }

  function paintRows() {
    if (state.thread) state.thread.known(state.items.find((i) => convKey(i.line, i.number, i.groupParticipants) === state.threadKey));
    const focusedKey = list.contains(document.activeElement) ? document.activeElement.dataset.key : null;
    list.replaceChildren(...state.items.map(row));
    if (focusedKey) list.querySelector(`a[data-key="${CSS.escape(focusedKey)}"]`)?.focus();
    status.replaceChildren();
    if (state.error) showError(status, state.error);
    else if (!state.items.length && !state.loading) status.append(emptyState(...EMPTY[state.view]));
    more.hidden = state.done || !state.items.length;
    more.disabled = state.loading;
    more.textContent = state.loading ? 'Loading…' : 'Load more';
  }

  function filterQuery(offset, limit) {
    const q = { limit, offset, ...VIEWS.find(([v]) => v === state.view)[2] };
    if (state.line) q.lines = state.line;
    return q;
  }

  // load reads the first page, or (more) the next one.
  let loadSeq = 0;
  async function load(moreItems = false) {
    const my = ++loadSeq;
    state.loading = true;
    state.error = null;
    if (!moreItems) { state.items = []; state.done = false; list.replaceChildren(); status.replaceChildren(spinner('Loading conversations…')); }
    else paintRows();
    try {
      const offset = moreItems ? state.items.length : 0;
      const page = await ctx.api('GET', '/sms/conversations', { query: filterQuery(offset, PAGE) });
      if (my !== loadSeq) return;
      const have = new Set(state.items.map((i) => convKey(i.line, i.number, i.groupParticipants)));
      state.items = state.items.concat(page.filter((i) => !have.has(convKey(i.line, i.number, i.groupParticipants))));
      state.done = page.length < PAGE;
      if (moreItems) announce(`${page.length} more conversations loaded.`);
    } catch (err) {
      if (my !== loadSeq) return;
      state.error = err;
    }
    state.loading = false;
    paintRows();
  }

  // refresh reads again what the list shows (up to 200 rows in one
  // request), after the stream said something changed: new texts move
  // their conversation to the top, and rows that left the filter go.
  let refreshTimer = 0;
  function refreshSoon() {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(refresh, 80);
  }
  async function refresh() {
    if (state.loading) { refreshSoon(); return; }
    const my = ++loadSeq;
    const shown = Math.max(PAGE, Math.min(200, state.items.length));
    try {
      const page = await ctx.api('GET', '/sms/conversations', { query: filterQuery(0, shown) });
      if (my !== loadSeq) return;
      const fresh = new Set(page.map((i) => convKey(i.line, i.number, i.groupParticipants)));
      // Rows beyond what was read again stay (only past 200 loaded rows).
      const rest = state.items.slice(shown).filter((i) => !fresh.has(convKey(i.line, i.number, i.groupParticipants)));
      state.items = page.concat(rest);
      if (state.items.length <= shown) state.done = page.length < shown;
      state.error = null;
      paintRows();
    } catch { /* keep what is shown; the next event tries again */ }
  }

  function onSMS(ev) {
    const d = ev.data || {};
    if (state.line && d.line !== state.line) return;
    // A receipt changes no row of the list (rows show no delivery status;
    // the open thread follows its own): reading the list again for each
    // would cost a read per person per receipt.
    if (d.event === 'message.delivery') return;
    refreshSoon();
    if (d.event === 'message.received') {
      const key = convKey(d.line, d.number, d.groupParticipants);
      if (key !== state.threadKey) announce(`New text from ${peopleLabel(d.number, d.groupParticipants)}.`);
    }
  }
  function onConversation(ev) {
    const d = ev.data || {};
    if (state.line && d.line !== state.line) return;
    const key = convKey(d.line, d.number, d.groupParticipants);
    const item = state.items.find((i) => convKey(i.line, i.number, i.groupParticipants) === key);
    if (item && d.state) {
      // Show the change at once; the refresh then applies the filter.
      item.resolved = !!d.state.resolved;
      item.assignedTo = d.state.assignedTo ?? undefined;
      paintRows();
    }
    refreshSoon();
  }
  const offs = [
    ctx.stream.on('AccountSMS', onSMS),
    ctx.stream.on('AccountConversations', onConversation),
  ];

  // ---- the thread pane ----
  async function showThread(p) {
    const line = p.line, number = p.number;
    const group = (p.query.get('group') || '').split(',').filter(Boolean).sort();
    const key = line && number ? convKey(line, number, group) : '';
    if (key === state.threadKey && state.thread) return;
    state.thread?.cleanup();
    state.thread = null;
    state.threadKey = key;
    list.querySelectorAll('a.conv').forEach((a) => a.setAttribute('aria-current', a.dataset.key === key ? 'true' : 'false'));
    root.classList.toggle('has-thread', !!key);
    threadPane.replaceChildren();
    if (!key) {
      threadPane.append(emptyState('No conversation open', 'Choose a conversation from the list to read it and reply.'));
      document.title = 'Inbox · Switchboard';
      return;
    }
    const item = state.items.find((i) => convKey(i.line, i.number, i.groupParticipants) === key);
    state.thread = openThread(threadPane, { line, number, group }, ctx, {
      item,
      backHref: listURL({}),
      onRead: () => { refreshSoon(); ctx.unread.soon(); },
      onState: (st) => {
        const it = state.items.find((i) => convKey(i.line, i.number, i.groupParticipants) === key);
        if (it) { it.resolved = st.resolved; it.assignedTo = st.assignedTo ?? undefined; paintRows(); }
        refreshSoon();
      },
      onGone: () => { ctx.navigate(listURL({})); refreshSoon(); },
      userName,
    });
    // On a phone the list just left the screen with the focused row: the
    // thread's title takes the focus, so the keyboard and screen readers
    // start there.
    if (getComputedStyle(listPane).display === 'none') threadPane.querySelector('#thread-title')?.focus();
  }

  async function update(p) {
    state.params = p;
    const view = p.query.get('view') || 'all';
    const line = p.query.get('line') || '';
    const listChanged = view !== state.view || line !== state.line || !state.started;
    state.view = VIEWS.some(([v]) => v === view) ? view : 'all';
    state.line = line;
    state.started = true;
    if (listChanged) {
      paintViews();
      lineSelect.value = state.line;
      await Promise.all([load(false), showThread(p)]);
    } else {
      await showThread(p);
    }
    if (!p.number && list.contains(document.activeElement) === false && state.lastKey) {
      list.querySelector(`a[data-key="${CSS.escape(state.lastKey)}"]`)?.focus();
    }
    state.lastKey = state.threadKey || state.lastKey;
  }

  // ---- keyboard ----
  function rows() { return [...list.querySelectorAll('a.conv')]; }
  function move(delta) {
    const all = rows();
    if (!all.length) return;
    let i = all.indexOf(document.activeElement);
    if (i < 0) i = all.findIndex((a) => a.getAttribute('aria-current') === 'true');
    const next = all[Math.max(0, Math.min(all.length - 1, i < 0 ? 0 : i + delta))];
    next.focus();
    next.scrollIntoView({ block: 'nearest' });
  }
  function showHelp() {
    dialog('Keyboard shortcuts', h('dl', { class: 'shortcuts' }, HELP.map(([k, d]) => [h('dt', null, h('kbd', { text: k })), h('dd', { text: d })])));
  }
  function onKey(e) {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || document.querySelector('dialog[open]')) return;
    if (typing(e)) {
      if (e.key === 'Escape') e.target.blur();
      return;
    }
    const inList = list.contains(document.activeElement);
    switch (e.key) {
      case 'j': move(1); break;
      case 'k': move(-1); break;
      case 'ArrowDown': if (!inList) return; move(1); break;
      case 'ArrowUp': if (!inList) return; move(-1); break;
      case '/': lineSelect.focus(); break;
      case '?': showHelp(); break;
      case 'Escape':
        if (!state.threadKey) return;
        ctx.navigate(listURL({}));
        break;
      case '1': case '2': case '3': case '4': case '5': case '6':
        ctx.navigate(listURL({ view: VIEWS[Number(e.key) - 1][0] }));
        break;
      default:
        if (state.thread && state.thread.key(e.key)) break;
        return;
    }
    e.preventDefault();
  }
  document.addEventListener('keydown', onKey);

  await update(params);
  return {
    update,
    cleanup() {
      document.removeEventListener('keydown', onKey);
      offs.forEach((f) => f());
      offUnread();
      clearTimeout(refreshTimer);
      state.thread?.cleanup();
    },
  };
}
