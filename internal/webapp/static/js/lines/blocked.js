// A line's blocked senders (GET, POST, DELETE /sms/lines/{line}/blocked):
// the list, unblock in place, and the form that blocks a number.
import { ApiError } from '../api.js';
import { h, formatTime, formatPhone, announce, emptyState, spinner } from '../ui.js';
import { linePath, confirmRow, errorBox } from './parts.js';

function blockForm() {
  const number = h('input', { id: 'block-number', name: 'number', type: 'tel', autocomplete: 'off', inputmode: 'tel', placeholder: '+1 555 123 4567' });
  const reason = h('input', { id: 'block-reason', name: 'reason', type: 'text', maxlength: '500', placeholder: 'e.g. spam' });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Block');
  const form = h('form', { class: 'ln-block-form', 'aria-label': 'Block a sender' },
    h('div', { class: 'ln-field' }, h('label', { for: 'block-number' }, 'Number to block'), number),
    h('div', { class: 'ln-field' }, h('label', { for: 'block-reason' }, 'Reason (optional)'), reason),
    button);
  form.noValidate = true;
  return { form, number, reason, button };
}

export function blockedSection(ctx, line, { canWrite }) {
  const err = errorBox();
  const body = h('div', { class: 'ln-list' }, spinner('Loading blocked senders'));
  const f = blockForm();
  const el = h('section', { class: 'ln-section', 'aria-labelledby': 'blocked-title' },
    h('h2', { id: 'blocked-title' }, 'Blocked senders'),
    h('p', { class: 'ln-help' }, 'Texts from these numbers to this line are kept, marked blocked, and never counted as unread. The reason is for your team; the sender never sees it. This is not the STOP (opt-out) list.'),
    canWrite ? f.form : null,
    err.el, body);

  async function load() {
    try {
      const list = await ctx.api('GET', linePath(line, '/blocked'));
      err.clear();
      if (!list.length) {
        body.replaceChildren(emptyState('No blocked senders', 'Nobody is blocked on this line.'));
        return;
      }
      body.replaceChildren(h('ul', { class: 'ln-rows', 'aria-label': 'Blocked senders' }, ...list.map(row)));
    } catch (e) {
      body.replaceChildren();
      err.fail(e);
    }
  }
  async function unblock(b, restore) {
    try {
      await ctx.api('DELETE', linePath(line, `/blocked/${encodeURIComponent(b.number)}`));
      announce(`${formatPhone(b.number)} unblocked.`);
      await load();
      f.number.focus();
    } catch (e) {
      restore();
      if (e instanceof ApiError && e.status === 404) load();
      else err.fail(e);
    }
  }
  function row(b) {
    const actions = h('div', { class: 'ln-actions' });
    const li = h('li', { class: 'ln-row', 'data-number': b.number },
      h('div', { class: 'ln-main' },
        h('p', { class: 'ln-number', id: `blocked-${b.number}` }, formatPhone(b.number)),
        b.reason ? h('p', { class: 'ln-text' }, b.reason) : null,
        h('p', { class: 'ln-meta' }, 'Blocked ', h('time', { datetime: b.blockedAt }, formatTime(b.blockedAt)))),
      actions);
    if (canWrite) {
      const btn = h('button', { type: 'button', class: 'ln-unblock', 'aria-describedby': `blocked-${b.number}` }, 'Unblock…');
      btn.addEventListener('click', () => confirmRow(actions, `Unblock ${formatPhone(b.number)}?`, 'Yes, unblock', (restore) => unblock(b, restore)));
      actions.append(btn);
    }
    return li;
  }
  f.form.addEventListener('submit', async (e) => {
    e.preventDefault();
    err.clear();
    if (f.number.value.trim() === '') {
      err.fail(new Error('Enter the number to block.'));
      f.number.focus();
      return;
    }
    f.button.disabled = true;
    f.button.textContent = 'Blocking…';
    try {
      const req = { number: f.number.value.trim() };
      if (f.reason.value.trim() !== '') req.reason = f.reason.value.trim();
      const b = await ctx.api('POST', linePath(line, '/blocked'), { body: req });
      f.number.value = '';
      f.reason.value = '';
      announce(`${formatPhone(b.number)} blocked.`);
      await load();
      f.number.focus();
    } catch (e2) {
      err.fail(e2);
      f.number.focus();
    } finally {
      f.button.disabled = false;
      f.button.textContent = 'Block';
    }
  });
  return { el, load };
}
