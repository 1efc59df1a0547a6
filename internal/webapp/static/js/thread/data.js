// Reading a thread: its newest page (marking it read when the person can
// see it), its notes, earlier pages, and the newest page again when the
// stream says something changed.
import { h, formatPhone, emptyState, showError, announce } from '../ui.js';
import { setState } from './state.js';
import { nameThread } from './view.js';

export const PAGE = 50;

const visible = () => document.visibilityState === 'visible';

export function threadData(t, view) {
  const fetchPage = (off, limit, markRead) => t.ctx.api('GET', t.base, {
    query: { groupParticipants: t.gp, limit, offset: off, markRead: markRead ? 'true' : undefined },
  });

  // loadComments reads the notes and what the team did (history, the
  // newest 50), both shown between the messages.
  async function loadComments(repaint = true) {
    const q = { query: { groupParticipants: t.gp } };
    const [comments, history] = await Promise.all([
      t.ctx.api('GET', t.base + '/comments', q).catch(() => []),
      t.ctx.api('GET', t.base + '/history', q).catch(() => []),
    ]);
    t.comments = comments;
    t.history = history.filter((e) => e.kind !== 'commented'); // a note shows as itself
    if (repaint && !t.closed) view.paint();
  }

  function gone(title, text) {
    t.el.pane.replaceChildren(h('div', { class: 'thread' }, h('header', { class: 'thread-head' }, h('a', { class: 'back', href: t.hooks.backHref }, '← Conversations')),
      emptyState(title, text)));
  }

  async function first() {
    try {
      const [page] = await Promise.all([fetchPage(0, PAGE, visible()), loadComments(false)]);
      if (t.closed) return;
      t.messages = page.messages;
      if (page.state) setState(t, page.state, true);
      nameThread(t, page.contact);
      t.offset = t.messages.length;
      t.done = t.messages.length < PAGE;
      t.el.pane.querySelector(':scope > .spinner')?.remove();
      view.paint();
      view.toEnd();
      if (page.markedRead) t.hooks.onRead();
      if (t.hooks.at) await showMessage(t.hooks.at);
    } catch (err) {
      if (t.closed) return;
      t.el.pane.querySelector(':scope > .spinner')?.remove();
      if (err.status === 404 && t.isNew) {
        // A conversation to start ("New text"): nothing to read yet.
        t.messages = [];
        t.done = true;
        view.paint();
        t.el.reply.querySelector('textarea')?.focus();
      } else if (err.status === 404) {
        gone('No such conversation', 'It was deleted, or it is not on a line you can use.');
      } else showError(t.el.pane, err);
    }
  }

  // showMessage brings message id into view (search opens a thread at the
  // message it found), reading earlier pages until it is loaded: at most
  // 20 more pages, then the thread stays at its end.
  async function showMessage(id) {
    for (let i = 0; i < 20 && !t.closed && !t.done && !t.messages.some((m) => m.id === id); i++) await loadEarlier();
    const el = t.el.timeline.querySelector(`li[data-id="${id}"]`);
    if (!el) return;
    el.classList.add('msg-found');
    el.scrollIntoView({ block: 'center' });
  }

  async function loadEarlier() {
    const { earlier, scroller } = t.el;
    earlier.disabled = true;
    earlier.textContent = 'Loading…';
    try {
      const page = await fetchPage(t.offset, PAGE, false);
      const have = new Set(t.messages.map((m) => m.id));
      const before = scroller.scrollHeight - scroller.scrollTop;
      t.messages = t.messages.concat(page.messages.filter((m) => !have.has(m.id)));
      t.offset += page.messages.length;
      t.done = page.messages.length < PAGE;
      view.paint();
      scroller.scrollTop = scroller.scrollHeight - before; // keep the place
    } catch (err) {
      showError(scroller, err);
    }
    earlier.disabled = false;
    earlier.textContent = 'Load earlier messages';
  }

  // refresh reads the newest page again and merges it: new messages, new
  // delivery receipts. It marks read only when the person can see the
  // thread. Calls while one runs make it run once more.
  let running = null, again = false;
  async function refresh() {
    if (running) { again = true; return running; }
    running = (async () => {
      do {
        again = false;
        try {
          const page = await fetchPage(0, PAGE, visible() && !t.holdUnread);
          if (t.closed) return;
          const byId = new Map(page.messages.map((m) => [m.id, m]));
          const fresh = page.messages.filter((m) => !t.messages.some((x) => x.id === m.id));
          t.messages = page.messages.concat(t.messages.filter((m) => !byId.has(m.id) && m.id < (page.messages.at(-1)?.id ?? Infinity)));
          t.offset += fresh.length;
          view.paint();
          view.reveal(fresh);
          for (const m of fresh.filter((x) => x.direction === 'in').reverse()) {
            announce(`New text from ${formatPhone(m.from)}: ${m.text || 'an attachment'}`);
          }
          if (page.markedRead) t.hooks.onRead();
        } catch { /* the next event tries again */ }
      } while (again && !t.closed);
    })();
    try { await running; } finally { running = null; }
  }

  return { first, loadComments, loadEarlier, refresh, gone };
}
