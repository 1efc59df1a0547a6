// The pieces of the call screens: durations, the parties (an extension
// named as the teammate it belongs to), status and direction, the
// recorded mark, and the link to a number's texts.
import { h, formatPhone } from '../ui.js';
import { extensionOwner, findLine, fullName, threadHref, contactHref } from '../names.js';
import { store } from '../store.js';

// put replaces el's children with kids, flattened, leaving out null and
// false (replaceChildren alone would show them as text).
export function put(el, ...kids) {
  el.replaceChildren(...kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false));
  return el;
}

export function duration(seconds) {
  const s = Math.max(0, Number(seconds) || 0);
  const hh = Math.floor(s / 3600), mm = Math.floor((s % 3600) / 60), ss = s % 60;
  const p = (n) => String(n).padStart(2, '0');
  return hh ? `${hh}:${p(mm)}:${p(ss)}` : `${mm}:${p(ss)}`;
}

export function spokenDuration(seconds) {
  const s = Math.max(0, Number(seconds) || 0);
  const m = Math.floor(s / 60), r = s % 60;
  return m ? `${m} min ${r} s` : `${r} s`;
}

export function party(name, number, contact) {
  // The team's contact for the number names it, linked to its page.
  if (contact && number) return h('span', { class: 'party' }, h('a', { class: 'party-name', href: contactHref(contact.id), text: contact.name }), ' ', h('span', { class: 'party-number', text: formatPhone(number) }));
  // An extension the users list knows is its teammate's.
  const owner = extensionOwner(number);
  if (owner) return h('span', { class: 'party' }, h('span', { class: 'party-name', text: fullName(owner) }), ' ', h('span', { class: 'party-number', text: `ext. ${number}` }));
  const num = number ? formatPhone(number) : '';
  // One element per cell, so the phone layout's label-and-value grid holds.
  if (name && num && name !== number) return h('span', { class: 'party' }, h('span', { class: 'party-name', text: name }), ' ', h('span', { class: 'party-number', text: num }));
  return h('span', { class: 'party' }, h('span', { class: 'party-number', text: name || num || 'Unknown' }));
}

// sides are a call's From and To; the contact beside the call holds the
// other party's number: the caller's on an inbound call, the called one's
// otherwise.
export function sides(c, calledNumber = c.calledNumber || c.dialledNumber) {
  const inbound = c.direction === 'inbound';
  return [party(c.callerName, c.callerNumber, inbound ? c.contact : null), party(c.calledName, calledNumber, inbound ? null : c.contact)];
}

export function statusBadge(call) {
  const label = { answered: 'Answered', missed: 'Missed', voicemail: 'Voicemail', unknown: 'Unknown' }[call.status] || call.status;
  return h('span', { class: `badge status-${call.status}` }, label, call.abandoned ? ' (abandoned)' : null);
}

export function directionLabel(call) {
  return h('span', { class: `direction direction-${call.direction}` },
    h('span', { 'aria-hidden': 'true', text: call.direction === 'inbound' ? '\u2199 ' : '\u2197 ' }),
    call.direction === 'inbound' ? 'Inbound' : 'Outbound');
}

// recordedIcon is "Yes" with a small drawn tape-reel icon beside it (the
// icon is decorative: the word says it).
export function recordedIcon() {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', '18');
  svg.setAttribute('height', '18');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  svg.setAttribute('class', 'icon');
  for (const [cx, cy, r] of [[7, 12, 4], [17, 12, 4]]) {
    const c = document.createElementNS(ns, 'circle');
    c.setAttribute('cx', cx); c.setAttribute('cy', cy); c.setAttribute('r', r);
    svg.append(c);
  }
  const line = document.createElementNS(ns, 'path');
  line.setAttribute('d', 'M7 16h10');
  svg.append(line);
  return h('span', { class: 'recorded' }, svg, h('span', { text: 'Yes' }));
}


// conversationOf is the conversation a call belongs to in the inbox: the
// other party's number on the person's line the call went through, or
// null (an internal call, a line the person cannot text from).
export function conversationOf(call) {
  if (!store.get('can')?.inbox) return null;
  const inbound = call.direction === 'inbound';
  const other = String((inbound ? call.callerNumber : call.calledNumber || call.dialledNumber) || '').replace(/\D/g, '');
  if (other.length < 7) return null;
  const candidates = inbound ? [call.dialledNumber, call.calledNumber] : [call.callerIdExternal, call.callerNumber];
  const line = candidates.map(findLine).find(Boolean) || ((store.get('lines') || []).length === 1 ? store.get('lines')[0] : null);
  if (!line) return null;
  return { line: line.number, number: other.length === 10 ? '1' + other : other };
}

// textsLink links a call to its number's texts (or a first text), when
// the person has a line to text it from.
export function textsLink(call, label = 'Texts') {
  const c = conversationOf(call);
  if (!c) return null;
  // ?new=1: when the number has no conversation yet (a missed call), the
  // thread opens empty, ready for the first text.
  return h('a', { class: 'texts-link', href: threadHref(c.line, c.number) + '?new=1' }, label, h('span', { class: 'visually-hidden', text: ` with ${formatPhone(c.number)}` }));
}
