// Mentions in a note: "@" and the start of a name offer the teammates who
// work the thread's line (GET /sms/teammates); choosing one writes their
// full name after the "@", which the server reads as a mention of them
// (docs/decisions.md, "The team: mentions") and notifies.
import { h } from '../ui.js';
import { workers, fullName } from '../names.js';

const MAX = 6;

// typedMention is the "@word" just before the caret, or null.
function typedMention(ta) {
  const before = ta.value.slice(0, ta.selectionStart);
  const m = before.match(/(^|[^\p{L}\p{N}_])@([\p{L}\p{N}_]*)$/u);
  return m ? { start: before.length - m[2].length - 1, word: m[2].toLowerCase() } : null;
}

export function mentionPicker(t) {
  const ta = t.el.noteText;
  const list = h('ul', { class: 'mention-list', id: 'mention-list', hidden: true, 'aria-label': 'Teammates to mention' });
  const hint = h('p', { class: 'hint', id: 'note-hint', text: 'Type @ and a name to mention a teammate: they are notified.' });
  ta.setAttribute('aria-describedby', 'note-hint');
  ta.after(hint, list);

  function choose(at, u) {
    const end = ta.selectionStart;
    const name = fullName(u);
    ta.value = ta.value.slice(0, at.start) + '@' + name + ' ' + ta.value.slice(end);
    const caret = at.start + name.length + 2;
    ta.focus();
    ta.setSelectionRange(caret, caret);
    list.hidden = true;
  }
  function offer() {
    const at = typedMention(ta);
    const people = at ? workers(t.line).filter((u) => [u.firstName, u.lastName, u.username, fullName(u)]
      .some((n) => (n || '').toLowerCase().startsWith(at.word))).slice(0, MAX) : [];
    list.hidden = !people.length;
    list.replaceChildren(...people.map((u) => h('li', null,
      h('button', { type: 'button', class: 'link-btn mention-option', on: { click: () => choose(at, u) } }, '@' + fullName(u)))));
  }
  ta.addEventListener('input', offer);
  ta.addEventListener('keydown', (e) => {
    // Down moves to the first offer; Escape closes the offers.
    if (list.hidden) return;
    if (e.key === 'ArrowDown') { e.preventDefault(); list.querySelector('button')?.focus(); }
    if (e.key === 'Escape') { e.stopPropagation(); list.hidden = true; }
  });
}
