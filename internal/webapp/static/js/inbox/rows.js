// One row of the conversation list.
import { h, timeEl, formatPhone } from '../ui.js';
import { store } from '../store.js';
import { convKey, whoLabel, userName, lineName, myId } from '../names.js';
import { threadURL } from './views.js';

export const itemKey = (i) => convKey(i.line, i.number, i.groupParticipants);

function meta(item) {
  const out = [];
  if ((store.get('lines') || []).length > 1) out.push(h('span', { class: 'tag tag-line', text: lineName(item.line) || formatPhone(item.line) }));
  out.push(item.assignedTo
    ? h('span', { class: 'tag tag-owner', text: '→ ' + userName(item.assignedTo) })
    : h('span', { class: 'tag tag-none', text: 'Unassigned' }));
  if (item.resolved) out.push(h('span', { class: 'tag tag-resolved', text: '✓ Resolved' }));
  return out;
}

// sender says who sent the last text when the team did: "You", a
// teammate's first name, or "API" (an integration's key sent it).
function sender(item) {
  if (item.direction !== 'out') return null;
  const by = item.lastMessageSentBy;
  const who = by === undefined || by === myId() ? 'You' : by === null ? 'API' : userName(by).split(' ')[0];
  return h('span', { class: 'you', text: `${who}: ` });
}

// row draws item; where is the list's filter and line (kept in the
// thread's address), current the open conversation's key.
export function row(item, where, current) {
  const key = itemKey(item);
  const excerpt = item.lastMessage || (item.hasMedia ? 'Attachment' : '');
  const unread = item.unreadCount > 0 || (item.unread && item.unreadCount === undefined);
  return h('li', { 'data-key': key },
    h('a', {
      href: threadURL(item, where), class: ['conv', unread && 'unread'], 'data-key': key,
      'aria-current': key === current ? 'true' : null,
    },
    h('span', { class: 'conv-top' },
      h('span', { class: 'unread-dot', 'aria-hidden': 'true' }),
      h('span', { class: 'conv-who', text: whoLabel(item.number, item.groupParticipants, item.contact) }),
      item.unreadCount > 0 ? h('span', { class: 'badge' }, String(item.unreadCount), h('span', { class: 'visually-hidden', text: ' unread' })) : (unread ? h('span', { class: 'visually-hidden', text: ' unread' }) : null),
      timeEl(item.lastMessageAt, 'conv-time')),
    item.contact ? h('span', { class: 'conv-number', text: formatPhone(item.number) }) : null,
    h('span', { class: 'conv-excerpt' }, sender(item), excerpt),
    h('span', { class: 'conv-meta' }, meta(item))));
}
