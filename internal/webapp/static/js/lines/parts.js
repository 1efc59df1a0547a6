// The line screen's shared pieces: a line's API path, an inline
// confirmation, and an error box.
import { h, showError } from '../ui.js';

export function linePath(line, rest) {
  return `/sms/lines/${encodeURIComponent(line)}${rest}`;
}

// confirmRow swaps a row's action for an inline question ("Cancel it?"
// Yes / No), focused on the safe answer's neighbour so a keyboard user sees
// it at once; a browser confirm() dialog would block the page and tests.
export function confirmRow(actions, question, yesLabel, onYes) {
  const previous = [...actions.childNodes];
  const opener = document.activeElement;
  const no = h('button', { type: 'button', class: 'ln-no' }, 'No, keep it');
  const yes = h('button', { type: 'button', class: 'ln-yes danger' }, yesLabel);
  const restore = () => {
    actions.replaceChildren(...previous);
    if (opener && opener.isConnected) opener.focus();
  };
  no.addEventListener('click', restore);
  yes.addEventListener('click', async () => {
    yes.disabled = no.disabled = true;
    yes.textContent = 'Working…';
    await onYes(restore);
  });
  actions.replaceChildren(h('span', { class: 'ln-question', role: 'group', 'aria-label': question },
    h('span', {}, question), yes, no));
  actions.addEventListener('keydown', function esc(e) {
    if (e.key === 'Escape' && no.isConnected) { actions.removeEventListener('keydown', esc); restore(); }
  });
  yes.focus();
}


// errorBox is a role=alert box: fail(err) shows err in it, clear() hides it.
export function errorBox() {
  const el = h('div', { class: 'ln-error', role: 'alert' });
  el.hidden = true;
  return {
    el,
    fail(err) { el.hidden = false; showError(el, err); },
    clear() { el.replaceChildren(); el.hidden = true; },
  };
}
