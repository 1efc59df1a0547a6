// The thread view: a conversation's messages (oldest at the top), its
// internal notes between them, its state (resolved, owner) and the actions
// on it, with the composer (composer.js) under it. Kept live by the stream.
// The parts are in thread/: the elements (view.js), the timeline and its
// scrolling (timeline.js), the state and actions (state.js), reading
// (data.js) and the stream (live.js).
import { spinner } from './ui.js';
import { store } from './store.js';
import { convKey, whoLabel } from './names.js';
import { buildThread, nameThread } from './thread/view.js';
import { timeline } from './thread/timeline.js';
import { paintState, setState, stateActions } from './thread/state.js';
import { threadData } from './thread/data.js';
import { followThread } from './thread/live.js';
import { mentionPicker } from './thread/mentions.js';

// openThread fills pane with the thread and returns {cleanup, key(k),
// known(item)}: key handles a thread shortcut and says whether it did.
// hooks: backHref, isNew (a conversation being started), onRead, onState,
// onGone.
export function openThread(pane, { line, number, group }, ctx, hooks) {
  // t is this thread's own state, shared by its parts (and nothing else).
  const t = {
    ctx, hooks, line, number, group,
    key: convKey(line, number, group),
    gp: group && group.length ? group.join(',') : undefined,
    base: `/sms/conversations/${encodeURIComponent(line)}/${encodeURIComponent(number)}`,
    who: whoLabel(number, group, hooks.item?.contact),
    contact: hooks.item?.contact || null,
    isNew: !!hooks.isNew,
    closed: false,
    messages: [], // newest first, as the API pages them
    comments: [],
    history: [],  // resolved, reopened, assigned… (GET …/history)
    offset: 0,    // how many messages are loaded
    done: false,
    convState: hooks.item ? { resolved: hooks.item.resolved, assignedTo: hooks.item.assignedTo } : null,
    holdUnread: false,
    el: null,
  };
  document.title = `${t.who} · Inbox · Switchboard`;
  // The parts refer to each other through these (set just below).
  const view = {}, data = {}, acts = {};
  t.el = buildThread(t, {
    addNote: (e) => acts.addNote(e),
    markUnread: () => acts.markUnread(),
    deleteConversation: () => acts.deleteConversation(),
    loadEarlier: () => data.loadEarlier(),
    sent: () => data.refresh(),
  });
  t.el.pane = pane;
  nameThread(t, t.contact);
  if (ctx.can.write) mentionPicker(t);
  Object.assign(view, timeline(t, { onDelete: (m) => acts.deleteMessage(m) }));
  Object.assign(data, threadData(t, view));
  Object.assign(acts, stateActions(t, { loadComments: data.loadComments, paint: view.paint, back: () => ctx.navigate(hooks.backHref) }));
  t.el.resolveBtn.addEventListener('click', acts.toggleResolved);
  t.el.assignSel.addEventListener('change', acts.assign);
  pane.replaceChildren(t.el.section, spinner('Loading messages…'));
  paintState(t);
  const offUsers = store.subscribe('users', () => paintState(t), { now: false });
  const offTeam = store.subscribe('teammates', () => paintState(t), { now: false });
  const unfollow = followThread(t, { refresh: data.refresh, loadComments: data.loadComments, paint: view.paint, gone: data.gone });
  data.first();

  return {
    // known gives the state from the list when it loads before the
    // thread's own read (which carries the state too).
    known(item) {
      if (!t.convState && item && !t.closed) setState(t, { resolved: item.resolved, assignedTo: item.assignedTo }, true);
    },
    cleanup() {
      t.closed = true;
      unfollow();
      offUsers();
      offTeam();
      view.stop();
    },
    key(k) {
      const { reply, noteBox, noteText, resolveBtn, assignSel, actions, section } = t.el;
      // On a phone the actions are in a menu: the shortcut opens it.
      const reveal = () => { if (getComputedStyle(actions).display === 'none') section.querySelector('.thread-menu-btn')?.click(); };
      switch (k) {
        case 'r': { const ta = reply.querySelector('textarea'); if (!ta) return false; ta.focus(); return true; }
        case 'n': if (!ctx.can.write) return false; noteBox.open = true; noteText.focus(); return true;
        case 'e': if (!ctx.can.write) return false; resolveBtn.click(); return true;
        case 'a': if (!ctx.can.write) return false; reveal(); assignSel.focus(); return true;
        case 'u': acts.markUnread(); return true;
        default: return false;
      }
    },
  };
}
