// What the stream says about an open thread: new messages and receipts,
// another person's resolve, assignment, note or deletion.
import { announce } from '../ui.js';
import { convKey, userName, myId } from '../names.js';
import { setState } from './state.js';

export function followThread(t, { refresh, loadComments, paint, gone }) {
  const mine = (d) => d.line === t.line && convKey(d.line, d.number, d.groupParticipants) === t.key;
  function onConversation(ev) {
    const d = ev.data || {};
    if (!mine(d)) return;
    const by = d.by && d.by !== myId() ? userName(d.by) : null;
    switch (d.event) {
      case 'conversation.resolved':
      case 'conversation.reopened':
      case 'conversation.assigned':
        setState(t, d.state, true);
        if (by) {
          announce(d.event === 'conversation.assigned'
            ? `${by} assigned this conversation to ${userName(d.state.assignedTo)}.`
            : `${by} ${d.event === 'conversation.resolved' ? 'resolved' : 'reopened'} this conversation.`);
        }
        loadComments(); // the history shows it (and the note, if any)
        break;
      case 'conversation.commented':
        setState(t, d.state, true);
        loadComments();
        if (by) announce(`${by} added a note.`);
        break;
      case 'message.deleted':
        t.messages = t.messages.filter((m) => m.id !== d.messageId);
        paint();
        break;
      case 'conversation.deleted':
        gone('This conversation was deleted', by ? `${by} deleted it.` : 'It was deleted.');
        t.closed = true;
        break;
    }
  }
  // A thread opened in a hidden tab is marked read when the person looks.
  function onVisible() {
    if (document.visibilityState === 'visible' && !t.holdUnread && t.messages.some((m) => m.direction === 'in' && !m.read)) refresh();
  }
  const offs = [
    t.ctx.stream.on('AccountSMS', (ev) => { if (mine(ev.data || {})) refresh(); }),
    t.ctx.stream.on('AccountConversations', onConversation),
  ];
  document.addEventListener('visibilitychange', onVisible);
  return () => {
    offs.forEach((f) => f());
    document.removeEventListener('visibilitychange', onVisible);
  };
}
