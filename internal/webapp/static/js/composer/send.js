// Sending (POST /sms/messages) and scheduling (POST
// /sms/lines/{line}/scheduled) what the composer holds, once: a retry of
// the same body reuses its Idempotency-Key, so a lost answer never sends a
// second copy.
import { newIdempotencyKey } from '../api.js';
import { h, formatPhone, announce } from '../ui.js';
import { explain, formatWhen, price, plural } from './words.js';

function sentText(result) {
  const msgs = result.messages || [];
  const b = result.billing || {};
  if (!msgs.length) {
    return 'Nothing was sent: every recipient was skipped (' +
      (result.skipped || []).map((s) => `${formatPhone(s.to)}: ${s.reason.replace(/_/g, ' ')}`).join(', ') + '). Nothing was charged.';
  }
  if (msgs.some((m) => m.status === 'pending')) {
    return `Handed to the carrier, which has not confirmed it yet; it is charged (${price(b.totalPrice, b.currency)}) only if the carrier took it. Do not send it again.`;
  }
  return h('span', { class: 'cmp-sent', 'data-charge': String(b.totalPrice) },
    `Sent. Charged ${price(b.totalPrice, b.currency)} (${plural(b.units, b.type === 'mms' ? 'MMS' : 'segment', b.type === 'mms' ? 'MMS' : 'segments')}).`);
}

// sender works for composer c: c.api, c.line, c.to, c.textarea, c.when,
// c.schedule (the menu), c.attachments, c.draft, c.sendBody(), c.isEmpty(),
// c.reset(), c.setStatus, c.showProblem, c.setSending(on, what), c.onSent.
export function sender(c) {
  // The Idempotency-Key of the message being composed: made on the first
  // attempt and reused while the same body is retried. A changed body is
  // a new message (the server refuses a key reused with another body).
  let attempt = null; // {key, body}
  let busy = false;
  function keyFor(body) {
    const json = JSON.stringify(body);
    if (!attempt || attempt.body !== json) attempt = { key: newIdempotencyKey(), body: json };
    return attempt.key;
  }
  async function ready() {
    await c.attachments.ready();
    if (c.attachments.all.some((a) => a.error)) {
      c.showProblem('Remove the attachment that could not be attached, then try again.');
      return false;
    }
    if (c.isEmpty()) {
      c.showProblem('Write a message or attach an image first.');
      c.textarea.focus();
      return false;
    }
    return true;
  }
  // run does one send or schedule: what names it in messages; go returns
  // the status to show.
  async function run(what, label, go) {
    if (busy) return; // a second click or Ctrl+Enter while one is in flight
    busy = true;
    c.setSending(true, label);
    c.showProblem('');
    try {
      if (!(await ready())) return;
      await go();
    } catch (err) {
      c.showProblem(explain(err, what));
      c.setStatus('');
    } finally {
      busy = false;
      c.setSending(false);
    }
  }
  function send() {
    return run('message', 'send', async () => {
      const body = c.sendBody();
      const key = keyFor(body);
      c.setStatus('Sending…');
      const result = await c.api('POST', '/sms/messages', { body, idempotencyKey: key });
      c.reset();
      attempt = null;
      // The draft is gone before the confirmation shows, so that a reload
      // (or another device) right after it never brings the text back.
      await c.draft.discard();
      c.setStatus(sentText(result));
      announce((result.messages || []).length ? 'Message sent.' : 'Message not sent.');
      c.onSent?.(result, { scheduled: false });
      c.textarea.focus();
    });
  }
  function whenChosen() {
    if (!c.when.value) return 'Choose when to send it.';
    const at = new Date(c.when.value);
    if (Number.isNaN(at.getTime()) || at.getTime() <= Date.now()) return 'Choose a time in the future.';
    return '';
  }
  function schedule() {
    if (busy) return;
    const wrong = whenChosen();
    if (wrong) { c.showProblem(wrong); c.when.focus(); return; }
    return run('scheduled message', 'schedule', async () => {
      const body = { to: c.to, sendAt: new Date(c.when.value).toISOString() };
      if (c.textarea.value !== '') body.message = c.textarea.value;
      const media = c.attachments.all.filter((a) => a.hosted).map((a) => a.hosted);
      if (media.length) body.media = media;
      const key = keyFor(body);
      c.setStatus('Scheduling…');
      const s = await c.api('POST', `/sms/lines/${encodeURIComponent(c.line)}/scheduled`, { body, idempotencyKey: key });
      c.reset();
      attempt = null;
      await c.draft.discard(); // before the confirmation, as for a send
      c.when.value = '';
      c.schedule.open = false;
      c.setStatus(h('span', { class: 'cmp-scheduled' }, `Scheduled for ${formatWhen(s.sendAt)}, ${price(s.price, s.currency)} when sent. `),
        h('a', { href: `/app/lines/${encodeURIComponent(c.line)}` }, 'See or cancel scheduled messages'));
      announce(`Message scheduled for ${formatWhen(s.sendAt)}.`);
      c.onSent?.(s, { scheduled: true });
    });
  }
  return { send, schedule, busy: () => busy };
}
