// The inbox's filters and what an empty one says, and the addresses of
// the list and of a thread in it (the filter and line ride along).
export const APP = '/app/';
export const VIEWS = [
  ['all', 'All', {}],
  ['unread', 'Unread', { unread: 'true' }],
  ['mine', 'Mine', { assignedToMe: 'true' }],
  ['unassigned', 'Unassigned', { unassigned: 'true' }],
  ['open', 'Open', { unresolved: 'true' }],
  ['resolved', 'Resolved', { resolved: 'true' }],
];
export const EMPTY = {
  all: ['No conversations yet', 'Texts your lines send or receive will show up here as they arrive.'],
  unread: ['Nothing unread', 'You have read every text. New ones show up here as they arrive.'],
  mine: ['Nothing assigned to you', 'Conversations assigned to you show up here.'],
  unassigned: ['Every conversation has an owner', 'Conversations nobody is assigned to show up here.'],
  open: ['Nothing open', 'Every conversation is resolved. A new text reopens its conversation.'],
  resolved: ['Nothing resolved', 'Conversations you resolve show up here until a new text reopens them.'],
};

export function listQuery({ view, line }) {
  const q = new URLSearchParams();
  if (view && view !== 'all') q.set('view', view);
  if (line) q.set('line', line);
  return q;
}

export function listURL(where) {
  const q = listQuery(where).toString();
  return APP + 'inbox' + (q ? '?' + q : '');
}

export function threadURL(item, where) {
  const q = listQuery(where);
  if (item.groupParticipants?.length) q.set('group', item.groupParticipants.join(','));
  const s = q.toString();
  return `${APP}inbox/${encodeURIComponent(item.line)}/${encodeURIComponent(item.number)}${s ? '?' + s : ''}`;
}

// filterQuery is GET /sms/conversations' query for a filter, a line and a
// page.
export function filterQuery({ view, line }, offset, limit) {
  const q = { limit, offset, ...VIEWS.find(([v]) => v === view)[2] };
  if (line) q.lines = line;
  return q;
}
