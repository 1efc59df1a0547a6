// What the app calls people, lines and conversations. Names come from the
// store (the person's lines, the teammates GET /users shows), so every
// screen names them the same way.
import { store } from './store.js';
import { formatPhone } from './ui.js';

// convKey names a conversation: its line and its other party, or for a
// group thread every other party (sorted).
export function convKey(line, number, group) {
  const g = (group || []).slice().sort();
  return g.length ? `${line}|g:${g.join(',')}` : `${line}|${number}`;
}

// whoLabel names the other party: the contact that holds the number, or
// the number (a group: its first number and how many others).
export function whoLabel(number, group, contact) {
  return contact?.name || peopleLabel(number, group);
}

// contactHref is the app's address of a contact's page.
export function contactHref(id) {
  return `/app/contacts/${encodeURIComponent(id)}`;
}

export function peopleLabel(number, group) {
  if (group && group.length > 1) {
    return `${formatPhone(group[0])} + ${group.length - 1} other${group.length > 2 ? 's' : ''}`;
  }
  return formatPhone(number);
}

// myId is the signed-in person's user id (GET /me), or null.
export function myId(me = store.get('me')) {
  return me?.userId ?? me?.user?.id ?? null;
}

export function fullName(u) {
  return [u.firstName, u.lastName].filter(Boolean).join(' ') || u.username || `User ${u.id}`;
}

// userName names a user id: "You", a teammate's name (GET /users, or GET
// /sms/teammates for a role that sees only itself in the users), or a
// number when neither knows them.
export function userName(id) {
  if (id === undefined || id === null) return 'Nobody';
  if (myId() === id) return 'You';
  const u = (store.get('users') || []).find((x) => x.id === id) || (store.get('teammates') || []).find((x) => x.id === id);
  return u ? fullName(u) : `Teammate #${id}`;
}

// workers are the people who may be given a conversation on line: the
// teammates who can work it (and are not disabled).
export function workers(line) {
  return (store.get('teammates') || []).filter((u) => !u.disabled && u.lines.includes(line));
}

// lineName is the name the account gave a line ('' when none or unknown).
export function lineName(number) {
  return (store.get('lines') || []).find((l) => l.number === number)?.name || '';
}

// digits keeps a number's last ten digits, so +1 415… and 415… match.
function digits(n) {
  return String(n || '').replace(/\D/g, '').slice(-10);
}

// findLine is the person's line with this number, if it is one.
export function findLine(number) {
  const d = digits(number);
  return d ? (store.get('lines') || []).find((l) => digits(l.number) === d) || null : null;
}

// extensionOwner is the teammate a PBX extension belongs to, if GET /users
// showed them.
export function extensionOwner(ext) {
  if (!ext || !/^\d{2,6}$/.test(String(ext))) return null;
  return (store.get('users') || []).find((u) => u.extension === ext || (u.extensions || []).includes(ext)) || null;
}

// threadHref is the app's address of a conversation.
export function threadHref(line, number, group) {
  const q = group && group.length > 1 ? '?group=' + encodeURIComponent(group.join(',')) : '';
  return `/app/inbox/${encodeURIComponent(line)}/${encodeURIComponent(number)}${q}`;
}
