// The thread's timeline: messages and internal notes in time order, and
// where it is scrolled. New messages come into view unless the person has
// scrolled back to read (then a button offers them); a growing composer
// or a narrower window never hides the last message.
import { h, formatPhone, timeEl, emptyState } from '../ui.js';
import { userName, myId } from '../names.js';

const NEAR = 120; // px from the end that still count as "at the end"

function isImage(url) {
  return /\.(png|jpe?g|gif|webp|bmp|avif)(\?|$)/i.test(url);
}

function sameOrigin(url) {
  try { return new URL(url, location.href).origin === location.origin; } catch { return false; }
}

function deliveryText(m) {
  if (m.direction === 'in') return '';
  if (m.blocked) return `Not sent: blocked${m.blockReason ? ' (' + m.blockReason + ')' : ''}`;
  if (m.scheduled) return 'Scheduled';
  if (m.delivery) return m.delivery.error ? `${m.delivery.status}: ${m.delivery.error}` : m.delivery.status;
  return 'Sent';
}

function deliveryClass(m) {
  if (m.blocked || m.delivery?.error || /fail|undeliv|reject|error/i.test(m.delivery?.status || '')) return 'status-bad';
  if (/deliver/i.test(m.delivery?.status || '')) return 'status-ok';
  return '';
}

function mediaLinks(m) {
  return (m.media || []).map((u, i) => {
    const name = decodeURIComponent(u.split('?')[0].split('/').pop() || `attachment ${i + 1}`);
    if (isImage(u) && sameOrigin(u)) {
      return h('a', { href: u, class: 'media-img', target: '_blank', rel: 'noopener' }, h('img', { src: u, alt: `Image attachment ${i + 1}`, loading: 'lazy' }));
    }
    return h('a', { href: u, class: 'media-link', target: '_blank', rel: 'noopener noreferrer' }, `Attachment: ${name}`);
  });
}

export function messageItem(m, { canDelete, onDelete }) {
  const media = mediaLinks(m);
  const status = deliveryText(m);
  const sender = m.direction === 'in' ? formatPhone(m.from) : (m.sentBy ? userName(m.sentBy) : 'Sent by the API');
  return h('li', { class: ['msg', m.direction === 'in' ? 'msg-in' : 'msg-out', m.direction === 'in' && !m.read && 'msg-unread'], 'data-id': String(m.id) },
    h('div', { class: 'bubble' },
      m.text ? h('p', { class: 'msg-text', text: m.text }) : null,
      media.length ? h('div', { class: 'media' }, media) : null),
    h('div', { class: 'msg-meta' },
      h('span', { class: 'msg-who', text: sender }), ' · ', timeEl(m.sentAt, 'msg-time', { stamp: true }),
      m.scheduled && m.scheduledAt ? [' · ', h('span', { text: 'for ' }), timeEl(m.scheduledAt, null, { stamp: true })] : null,
      status ? [' · ', h('span', { class: ['msg-status', deliveryClass(m)], text: status })] : null,
      m.direction === 'in' && !m.read ? [' · ', h('span', { class: 'msg-status', text: 'Unread' })] : null,
      canDelete ? h('button', { type: 'button', class: 'link-btn msg-delete', 'aria-label': `Delete message sent ${new Date(m.sentAt).toLocaleString()}`, on: { click: () => onDelete(m) } }, 'Delete') : null));
}

const DID = {
  resolved: (e) => `${who(e.by)} resolved the conversation${e.userId && e.userId !== e.by ? ` for ${userName(e.userId)}` : ''}`,
  reopened: (e) => `${who(e.by)} reopened the conversation`,
  reopenedByText: () => 'A new text reopened the conversation',
  assigned: (e) => `${who(e.by)} assigned it to ${e.userId === e.by ? (e.by === myId() ? 'yourself' : 'themselves') : e.userId === myId() ? 'you' : userName(e.userId)}`,
  unassigned: (e) => `${who(e.by)} unassigned it`,
};
const who = (id) => (id === null || id === undefined ? 'An integration' : userName(id));

// historyItem is one thing the team did, between the messages.
export function historyItem(e) {
  const say = DID[e.kind];
  return say ? h('li', { class: 'did' }, h('span', { text: say(e) }), ' · ', timeEl(e.at, null, { stamp: true })) : null;
}

export function noteItem(c) {
  return h('li', { class: 'note' },
    h('p', { class: 'note-label' }, h('span', { class: 'note-tag', text: 'Internal note' }), ` ${c.authorId ? userName(c.authorId) : 'API'} · `, timeEl(c.createdAt, null, { stamp: true })),
    h('p', { class: 'note-text', text: c.comment }));
}

// timeline returns the painter of thread t's timeline: paint() draws it
// again from t.messages and t.comments; toEnd() shows the newest; reveal()
// brings new messages into view (or offers them).
export function timeline(t, { onDelete }) {
  const { scroller, timeline: list, earlier, jump } = t.el;
  // pinned: the view follows the newest message. It stays so until the
  // person scrolls away from the end.
  let pinned = true;
  const atEnd = () => scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < NEAR;
  function toEnd() {
    scroller.scrollTop = scroller.scrollHeight;
    pinned = true;
    jump.hidden = true;
  }
  scroller.addEventListener('scroll', () => {
    pinned = atEnd();
    if (pinned) jump.hidden = true;
  }, { passive: true });
  jump.addEventListener('click', toEnd);
  // The composer grows (a longer text, an attachment, a preview) and the
  // window changes: a pinned view keeps its last message in sight.
  const resized = new ResizeObserver(() => { if (pinned) scroller.scrollTop = scroller.scrollHeight; });
  resized.observe(scroller);

  function paint() {
    const oldest = t.messages.length ? t.messages[t.messages.length - 1].sentAt : null;
    // Oldest first before sorting by time: texts of the same second keep
    // the order they were sent in (the sort is stable).
    const entries = [...t.messages].reverse().map((m) => ({ t: m.sentAt, el: () => messageItem(m, { canDelete: t.ctx.can.delete, onDelete }) }))
      .concat(t.comments.filter((c) => t.done || !oldest || c.createdAt >= oldest).map((c) => ({ t: c.createdAt, el: () => noteItem(c) })))
      .concat(t.history.filter((e) => t.done || !oldest || e.at >= oldest).map((e) => ({ t: e.at, el: () => historyItem(e) })));
    entries.sort((a, b) => (a.t < b.t ? -1 : a.t > b.t ? 1 : 0));
    list.replaceChildren(...entries.map((e) => e.el()).filter(Boolean));
    earlier.hidden = t.done;
    if (!t.messages.length) list.append(h('li', null, emptyState('No messages', t.isNew ? 'Write the first text below.' : 'This conversation has no messages left.')));
    if (pinned) scroller.scrollTop = scroller.scrollHeight;
  }
  // reveal follows fresh messages: into view when the person is at the
  // end (or sent one), otherwise a button says they came.
  function reveal(fresh) {
    if (!fresh.length) return;
    if (pinned || fresh.some((m) => m.direction === 'out')) toEnd();
    else jump.hidden = false;
  }
  return { paint, toEnd, reveal, stop: () => resized.disconnect() };
}
