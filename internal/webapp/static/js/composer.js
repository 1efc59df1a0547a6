// The composer (helper B replaces this placeholder): a text box and Send.
// composer(ctx, {line, number, groupParticipants, onSent}) returns the
// element the thread view mounts under its messages.
import { h, showError, announce } from './ui.js';
import { newIdempotencyKey } from './api.js';

export function composer(ctx, { line, number, groupParticipants, onSent }) {
  const id = 'compose-' + Math.random().toString(36).slice(2);
  const text = h('textarea', { id, name: 'message', rows: 3, required: true, placeholder: 'Write a reply…' });
  const send = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Send');
  const form = h('form', { class: 'composer', 'aria-label': 'Reply' },
    h('label', { for: id, class: 'visually-hidden' }, 'Reply'), text,
    h('div', { class: 'composer-actions' }, h('span', { class: 'hint', text: 'Ctrl+Enter sends' }), send));
  if (!ctx.can.send) {
    return h('p', { class: 'notice composer-off', text: 'Your sign-in cannot send texts.' });
  }
  // One key per text: a retry or a double click of the same text is one
  // send; editing the text makes it a new message.
  let key = newIdempotencyKey();
  let keyText = '';
  let busy = false;
  text.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); form.requestSubmit(); }
  });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const message = text.value.trim();
    if (!message || busy) return;
    if (message !== keyText) { key = newIdempotencyKey(); keyText = message; }
    busy = true;
    send.disabled = true;
    send.textContent = 'Sending…';
    form.querySelectorAll('.error').forEach((x) => x.remove());
    try {
      const to = groupParticipants && groupParticipants.length ? groupParticipants : [number];
      const res = await ctx.api('POST', '/sms/messages', { body: { from: line, to, message }, idempotencyKey: key });
      text.value = '';
      keyText = '';
      key = newIdempotencyKey();
      announce('Message sent.');
      onSent && onSent(res);
    } catch (err) {
      showError(form, err);
    } finally {
      busy = false;
      send.disabled = false;
      send.textContent = 'Send';
    }
  });
  return form;
}
