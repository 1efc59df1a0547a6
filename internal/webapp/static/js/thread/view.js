// The thread's elements: its header (title, line, state, the actions; on
// a phone the actions fold into a menu), the scrolling timeline and the
// note box. Behaviour is wired by the other thread modules.
import { h, formatPhone } from '../ui.js';
import { lineName, whoLabel, contactHref } from '../names.js';
import { composer } from '../composer.js';
import { editContact } from '../contacts/form.js';

// buildThread makes the elements of thread t; on are the handlers of its
// buttons and forms.
export function buildThread(t, on) {
  const { ctx, line, group } = t;
  const title = h('h2', { id: 'thread-title', tabindex: '-1', text: t.who });
  // A named thread shows its number beneath the name, linked to the
  // contact's page (nameThread).
  const contactLink = h('span', { class: 'thread-contact' });
  const stateLine = h('p', { class: 'thread-state', role: 'status' });
  const resolveBtn = h('button', { type: 'button', class: 'btn', 'aria-keyshortcuts': 'e' });
  const assignSel = h('select', { id: 'assign-select', name: 'assignee', 'aria-keyshortcuts': 'a' });
  const noteText = h('textarea', { id: 'note-text', name: 'comment', rows: 2, maxlength: 2000, required: true });
  const noteBox = h('details', { class: 'note-box' }, h('summary', { 'aria-keyshortcuts': 'n' }, 'Add internal note'),
    h('form', { class: 'note-form', on: { submit: on.addNote } },
      h('label', { for: 'note-text', text: 'Internal note (only your team sees it)' }), noteText,
      h('div', { class: 'note-actions' }, h('button', { type: 'submit', class: 'btn' }, 'Add note'))));
  const actions = h('div', { class: 'thread-actions', id: 'thread-actions' },
    ctx.can.write ? resolveBtn : null,
    ctx.can.write ? h('span', { class: 'assign' }, h('label', { for: 'assign-select', text: 'Assigned to' }), assignSel) : null,
    // On a phone the note box's own line gives its room to the messages:
    // the menu opens it.
    ctx.can.write ? h('button', { type: 'button', class: 'btn only-phone', on: { click: () => { closeMenu(); noteBox.open = true; noteText.focus(); } } }, 'Add note') : null,
    h('button', { type: 'button', class: 'btn', 'aria-keyshortcuts': 'u', on: { click: on.markUnread } }, 'Mark unread'),
    ctx.can.delete ? h('button', { type: 'button', class: 'btn btn-danger-quiet', on: { click: on.deleteConversation } }, 'Delete…') : null);
  const menuBtn = h('button', { type: 'button', class: 'btn thread-menu-btn', 'aria-expanded': 'false', 'aria-controls': 'thread-actions' }, 'Actions');
  const earlier = h('button', { type: 'button', class: 'btn btn-quiet earlier', hidden: true, on: { click: on.loadEarlier } }, 'Load earlier messages');
  const timeline = h('ol', { class: 'timeline', 'aria-label': 'Messages and notes' });
  const jump = h('button', { type: 'button', class: 'btn jump-new', hidden: true }, 'New messages ↓');
  const scroller = h('div', { class: 'timeline-scroll', tabindex: '0', 'aria-label': 'Conversation history' }, earlier, timeline);
  const reply = composer(ctx, {
    line, number: t.number, groupParticipants: group && group.length ? group : undefined,
    onSent: on.sent, contact: () => t.contact,
  });
  const label = lineName(line);
  const section = h('article', { class: 'thread', 'aria-labelledby': 'thread-title' },
    h('header', { class: 'thread-head' },
      // On a phone the list, and its "Inbox" heading, leave the screen to
      // the thread: the page keeps a level-one heading for screen readers.
      h('h1', { class: 'phone-heading', text: 'Inbox' }),
      h('a', { class: 'back', href: t.hooks.backHref }, h('span', { 'aria-hidden': 'true' }, '← '), 'Conversations'),
      h('div', { class: 'thread-title' }, title,
        h('p', { class: 'thread-sub' }, contactLink,
          group && group.length > 1 ? `Group with ${group.map(formatPhone).join(', ')} · ` : '',
          `on ${label ? label + ' · ' : ''}${formatPhone(line)}`),
        stateLine),
      menuBtn, actions),
    h('div', { class: 'timeline-wrap' }, scroller, jump),
    ctx.can.write ? noteBox : null,
    reply);
  function closeMenu() {
    section.classList.remove('menu-open');
    menuBtn.setAttribute('aria-expanded', 'false');
  }
  menuBtn.addEventListener('click', () => {
    const open = !section.classList.contains('menu-open');
    section.classList.toggle('menu-open', open);
    menuBtn.setAttribute('aria-expanded', String(open));
  });
  actions.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && section.classList.contains('menu-open')) { e.stopPropagation(); closeMenu(); menuBtn.focus(); }
  });
  return { section, title, contactLink, stateLine, resolveBtn, assignSel, noteBox, noteText, actions, earlier, timeline, scroller, jump, reply, closeMenu };
}

// nameThread shows who the thread is with: the contact that holds its
// number (the thread's read says), or the number alone.
export function nameThread(t, contact) {
  if (t.group && t.group.length > 1) return;
  t.contact = contact || null;
  t.who = whoLabel(t.number, t.group, t.contact);
  t.el.title.textContent = t.who;
  // A number no contact holds can become one here.
  const add = async () => {
    const c = await editContact(t.ctx, { numbers: [{ number: t.number }] });
    if (c && !t.closed) nameThread(t, { id: c.id, name: c.name });
  };
  t.el.contactLink.replaceChildren(...(t.contact
    ? [h('a', { href: contactHref(t.contact.id), text: formatPhone(t.number) }), ' · ']
    : t.ctx.can.contactsWrite ? [h('button', { type: 'button', class: 'link-btn add-contact', on: { click: add } }, 'Add to contacts'), ' · '] : []));
  document.title = `${t.who} · Inbox · Switchboard`;
}
