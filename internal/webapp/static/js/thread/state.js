// A thread's state (open or resolved, and its owner) and the actions that
// change it: resolve (with a note), reopen, assign, add a note, mark
// unread, delete the conversation or a message.
import { h, showError, errorText, announce, dialog, confirmDialog } from '../ui.js';
import { store } from '../store.js';
import { userName, myId, workers } from '../names.js';

// paintState shows t.convState in the header and the assignee picker.
export function paintState(t) {
  const { stateLine, resolveBtn, assignSel } = t.el;
  const st = t.convState;
  if (!st) {
    stateLine.textContent = '';
    resolveBtn.textContent = 'Resolve';
  } else {
    stateLine.replaceChildren(
      h('span', { class: st.resolved ? 'pill pill-resolved' : 'pill pill-open', text: st.resolved ? 'Resolved' : 'Open' }),
      ' ', st.assignedTo ? `Assigned to ${userName(st.assignedTo)}` : 'Unassigned');
    resolveBtn.textContent = st.resolved ? 'Reopen' : 'Resolve';
  }
  const current = st?.assignedTo ?? null;
  // Whom the person may give it to: the teammates who work the line (GET
  // /sms/teammates), else the users GET /users shows, and always themselves.
  const team = workers(t.line);
  const users = team.length ? team : store.get('users') || [];
  const opts = [h('option', { value: '', text: 'Nobody' })];
  const me = myId();
  for (const u of users) opts.push(h('option', { value: String(u.id), text: userName(u.id) }));
  if (me !== null && !users.some((u) => u.id === me)) opts.push(h('option', { value: String(me), text: 'You' }));
  if (current !== null && current !== me && !users.some((u) => u.id === current)) {
    opts.push(h('option', { value: String(current), text: userName(current), disabled: true }));
  }
  assignSel.replaceChildren(...opts);
  assignSel.value = current === null ? '' : String(current);
}

// setState records a new state; unless quiet, the inbox hears of it.
export function setState(t, st, quiet) {
  t.convState = { resolved: !!st.resolved, assignedTo: st.assignedTo ?? undefined };
  paintState(t);
  if (!quiet) t.hooks.onState(t.convState);
}

// act runs one change; a failure is said in the thread's header.
async function act(t, what, fn) {
  t.el.section.querySelectorAll('.thread-head .error').forEach((e) => e.remove());
  try {
    return await fn();
  } catch (err) {
    const box = showError(null, err);
    box.querySelector('p').textContent = `Could not ${what}: ${errorText(err)}`;
    t.el.section.querySelector('.thread-head').append(box);
    return null;
  }
}

function post(t, path, body) {
  return t.ctx.api('POST', t.base + path, { query: { groupParticipants: t.gp }, body });
}

export function stateActions(t, { loadComments, paint, back }) {
  async function resolve() {
    const note = h('textarea', { id: 'resolve-note', rows: 3, maxlength: 2000 });
    const ok = await dialog('Resolve this conversation', [
      h('label', { for: 'resolve-note', text: 'Note for your team (optional)' }), note,
    ], [{ label: 'Cancel', value: false }, { label: 'Resolve', value: true, class: 'btn btn-primary', submit: true }]);
    if (!ok) return;
    const body = note.value.trim() ? { comment: note.value.trim() } : {};
    const st = await act(t, 'resolve', () => post(t, '/resolve', body));
    if (st) {
      setState(t, st);
      announce('Conversation resolved.');
      if (body.comment) loadComments();
    }
  }
  async function reopen() {
    const st = await act(t, 'reopen', () => post(t, '/reopen', {}));
    if (st) { setState(t, st); announce('Conversation reopened.'); }
  }
  async function assign() {
    const v = t.el.assignSel.value;
    const userId = v === '' ? null : Number(v);
    const st = await act(t, 'assign', () => post(t, '/assign', { userId }));
    if (st) { setState(t, st); announce(userId === null ? 'Unassigned.' : `Assigned to ${userName(userId)}.`); } else paintState(t);
  }
  async function addNote(e) {
    e.preventDefault();
    const comment = t.el.noteText.value.trim();
    if (!comment) return;
    const st = await act(t, 'add the note', () => post(t, '/comments', { comment }));
    if (st) {
      t.el.noteText.value = '';
      t.el.noteBox.open = false;
      setState(t, st, true);
      await loadComments();
      announce('Note added.');
    }
  }
  // Mark unread: the newest received text becomes unread again, and the
  // person goes back to the list, so reading it here does not mark it read
  // at once (docs/decisions.md, "When the app marks a thread read").
  async function markUnread() {
    const lastIn = t.messages.find((m) => m.direction === 'in');
    if (!lastIn) { announce('There is no received text to mark unread.'); return; }
    t.holdUnread = true;
    const ok = await act(t, 'mark it unread', () => post(t, '/read', { messageIds: [lastIn.id], read: false }).then(() => true));
    if (!ok) { t.holdUnread = false; return; }
    announce('Marked unread.');
    t.hooks.onRead();
    back();
  }
  async function deleteConversation() {
    if (!(await confirmDialog('Delete this conversation?', `Every message with ${t.who} and its attachments, notes, resolution and owner are deleted for good. This cannot be undone.`, 'Delete conversation'))) return;
    const r = await act(t, 'delete the conversation', () => t.ctx.api('DELETE', t.base, { query: { groupParticipants: t.gp } }).then(() => true));
    if (r) { announce('Conversation deleted.'); t.hooks.onGone(); }
  }
  async function deleteMessage(m) {
    if (!(await confirmDialog('Delete this message?', 'The message and its attachments are deleted for good. This cannot be undone.', 'Delete message'))) return;
    const r = await act(t, 'delete the message', () => t.ctx.api('DELETE', `${t.base}/messages/${m.id}`, { query: { groupParticipants: t.gp } }).then(() => true));
    if (r) {
      t.messages = t.messages.filter((x) => x.id !== m.id);
      t.offset = Math.max(0, t.offset - 1);
      paint();
      announce('Message deleted.');
    }
  }
  const toggleResolved = () => (t.convState?.resolved ? reopen() : resolve());
  return { resolve, reopen, assign, addNote, markUnread, deleteConversation, deleteMessage, toggleResolved };
}
