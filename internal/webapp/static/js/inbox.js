// The inbox: the conversation list (filters, line selector, unread badges,
// paging) and, beside it or instead of it on a phone, the open thread
// (thread.js). The list stays while threads change (update()). The parts
// are in inbox/: the filters and addresses (views.js), the list
// (list.js), its rows (rows.js) and the keyboard (keys.js).
import { h, formatPhone, emptyState, showError } from './ui.js';
import { store } from './store.js';
import { convKey } from './names.js';
import { openThread } from './thread.js';
import { APP, VIEWS, listURL } from './inbox/views.js';
import { conversationList } from './inbox/list.js';
import { inboxKeys, showHelp } from './inbox/keys.js';

export { HELP } from './inbox/keys.js';

function unavailable(main, ctx) {
  main.append(h('div', { class: 'page' }, h('h1', { text: 'Inbox' }),
    emptyState('The inbox is not available', ctx.me?.permissions?.numbers === 'none'
      ? 'Your role gives you no phone numbers, so there are no conversations to show. Ask an administrator for access.'
      : 'This sign-in was not granted reading messages. Ask an administrator for access.')));
}

// linePicker is the line selector, with each line's unread count.
function linePicker(ctx, current) {
  const select = h('select', { id: 'line-select', name: 'line', 'aria-keyshortcuts': 'l' });
  function paint() {
    const u = store.get('unread');
    const counts = new Map((u?.lines || []).map((l) => [l.line, l.count]));
    const total = u?.total || 0;
    const opts = [h('option', { value: '', text: `All lines${total ? ` (${total} unread)` : ''}` })];
    for (const l of store.get('lines') || []) {
      const c = counts.get(l.number) || 0;
      opts.push(h('option', { value: l.number, text: `${l.name || formatPhone(l.number)}${l.name ? ' · ' + formatPhone(l.number) : ''}${c ? ` (${c} unread)` : ''}` }));
    }
    select.replaceChildren(...opts);
    select.value = current();
  }
  const offs = [store.subscribe('unread', paint), store.subscribe('lines', paint)];
  paint();
  return { select, paint, cleanup: () => offs.forEach((f) => f()) };
}

export async function render(main, params, ctx) {
  if (!ctx.can.inbox) return unavailable(main, ctx);
  document.title = 'Inbox · Switchboard';
  let thread = null, threadKey = '', lastKey = '';

  const viewNav = h('ul', { class: 'views' });
  const list = h('ul', { class: 'conv-list', 'aria-label': 'Conversations' });
  const status = h('div', { class: 'list-status' });
  const more = h('button', { type: 'button', class: 'btn more', hidden: true }, 'Load more');
  const lineLink = h('a', { class: 'line-settings', href: APP + 'lines', hidden: true }, 'Line settings');
  const convs = conversationList(ctx, { list, status, more, onPaint: (items) => thread?.known(items.find((i) => convKey(i.line, i.number, i.groupParticipants) === threadKey)) });
  const picker = linePicker(ctx, () => convs.where.line);
  picker.select.addEventListener('change', () => ctx.navigate(listURL({ ...convs.where, line: picker.select.value })));
  const listPane = h('section', { class: 'list-pane', 'aria-labelledby': 'inbox-title' },
    h('div', { class: 'list-head' },
      h('div', { class: 'list-title' }, h('h1', { id: 'inbox-title', text: 'Inbox' }),
        h('button', { type: 'button', class: 'btn btn-quiet help-btn', 'aria-label': 'Keyboard shortcuts', title: 'Keyboard shortcuts (?)', on: { click: showHelp } }, '?')),
      h('div', { class: 'line-pick' }, h('label', { for: 'line-select', text: 'Line' }), picker.select, lineLink),
      h('nav', { 'aria-label': 'Filter conversations' }, viewNav)),
    status, list, more);
  const threadPane = h('section', { class: 'thread-pane', 'aria-label': 'Conversation' });
  const root = h('div', { class: 'inbox' }, listPane, threadPane);
  main.append(root);
  ctx.lines().catch((err) => showError(listPane, err));
  ctx.users().catch(() => {});
  ctx.teammates().catch(() => {});

  function paintViews() {
    const { view, line } = convs.where;
    viewNav.replaceChildren(...VIEWS.map(([v, label], i) => h('li', null,
      h('a', { href: listURL({ view: v, line }), class: 'view', 'aria-current': v === view ? 'page' : null, 'aria-keyshortcuts': String(i + 1) }, label))));
    lineLink.hidden = !line;
    lineLink.href = line ? APP + 'lines/' + encodeURIComponent(line) : APP + 'lines';
    picker.select.value = line;
  }

  function showThread(p) {
    const group = (p.query.get('group') || '').split(',').filter(Boolean).sort();
    const key = p.line && p.number ? convKey(p.line, p.number, group) : '';
    if (key === threadKey && thread) return;
    thread?.cleanup();
    thread = null;
    threadKey = key;
    convs.mark(key);
    root.classList.toggle('has-thread', !!key);
    threadPane.replaceChildren();
    if (!key) {
      threadPane.append(emptyState('No conversation open', 'Choose a conversation from the list to read it and reply.'));
      document.title = 'Inbox · Switchboard';
      return;
    }
    const back = listURL(convs.where);
    thread = openThread(threadPane, { line: p.line, number: p.number, group }, ctx, {
      item: convs.find(key),
      isNew: p.query.get('new') === '1',
      at: Number(p.query.get('at')) || 0, // a message to show (search)
      backHref: back,
      onRead: () => { convs.refreshSoon(); ctx.unread.soon(); },
      onState: (st) => convs.update(key, st),
      onGone: () => { ctx.navigate(back); convs.refreshSoon(); },
    });
    // On a phone the list just left the screen with the focused row: the
    // thread's title takes the focus, so the keyboard and screen readers
    // start there.
    if (getComputedStyle(listPane).display === 'none') threadPane.querySelector('#thread-title')?.focus();
  }

  async function update(p) {
    const view = p.query.get('view') || 'all';
    const where = { view: VIEWS.some(([v]) => v === view) ? view : 'all', line: p.query.get('line') || '' };
    const listing = convs.show(where);
    paintViews();
    showThread(p);
    await listing;
    if (!p.number && !list.contains(document.activeElement) && lastKey) {
      list.querySelector(`a[data-key="${CSS.escape(lastKey)}"]`)?.focus();
    }
    lastKey = threadKey || lastKey;
  }

  const offKeys = inboxKeys({
    list, lineSelect: picker.select,
    view: (v) => ctx.navigate(listURL({ ...convs.where, view: v })),
    back: () => ctx.navigate(listURL(convs.where)),
    thread: () => thread,
    hasThread: () => !!threadKey,
  });

  await update(params);
  return {
    update,
    cleanup() {
      offKeys();
      convs.cleanup();
      picker.cleanup();
      thread?.cleanup();
    },
  };
}
