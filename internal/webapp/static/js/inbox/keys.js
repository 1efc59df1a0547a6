// The inbox's keyboard: moving through the list, filters, the thread's
// shortcuts, and the help that lists them.
import { h, dialog, typing } from '../ui.js';
import { VIEWS } from './views.js';

export const HELP = [
  ['j or ↓', 'Next conversation'],
  ['k or ↑', 'Previous conversation'],
  ['Enter', 'Open the conversation'],
  ['/', 'Search'],
  ['l', 'Choose the line'],
  ['1 … 6', 'Filters: All, Unread, Mine, Unassigned, Open, Resolved'],
  ['r', 'Reply (in a conversation)'],
  ['n', 'Add an internal note'],
  ['e', 'Resolve or reopen'],
  ['a', 'Assign'],
  ['u', 'Mark unread and go back'],
  ['Esc', 'Back to the list'],
  ['?', 'This help'],
];

export function showHelp() {
  dialog('Keyboard shortcuts', h('dl', { class: 'shortcuts' }, HELP.map(([k, d]) => [h('dt', null, h('kbd', { text: k })), h('dd', { text: d })])));
}

// inboxKeys listens for the inbox's shortcuts until the returned function
// is called. on: {list (the rows' element), lineSelect, view(v), back(),
// thread() (the open thread, or null), hasThread()}.
export function inboxKeys(on) {
  const rows = () => [...on.list.querySelectorAll('a.conv')];
  function move(delta) {
    const all = rows();
    if (!all.length) return;
    let i = all.indexOf(document.activeElement);
    if (i < 0) i = all.findIndex((a) => a.getAttribute('aria-current') === 'true');
    const next = all[Math.max(0, Math.min(all.length - 1, i < 0 ? 0 : i + delta))];
    next.focus();
    next.scrollIntoView({ block: 'nearest' });
  }
  function onKey(e) {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || document.querySelector('dialog[open]')) return;
    if (typing(e)) {
      if (e.key === 'Escape') e.target.blur();
      return;
    }
    const inList = on.list.contains(document.activeElement);
    switch (e.key) {
      case 'j': move(1); break;
      case 'k': move(-1); break;
      case 'ArrowDown': if (!inList) return; move(1); break;
      case 'ArrowUp': if (!inList) return; move(-1); break;
      case 'l': on.lineSelect.focus(); break;
      case '?': showHelp(); break;
      case 'Escape':
        if (!on.hasThread()) return;
        on.back();
        break;
      case '1': case '2': case '3': case '4': case '5': case '6':
        on.view(VIEWS[Number(e.key) - 1][0]);
        break;
      default:
        if (on.thread()?.key(e.key)) break;
        return;
    }
    e.preventDefault();
  }
  document.addEventListener('keydown', onKey);
  return () => document.removeEventListener('keydown', onKey);
}
