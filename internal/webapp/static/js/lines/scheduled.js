// A line's scheduled messages (GET, DELETE /sms/lines/{line}/scheduled),
// soonest first, each cancellable in place.
import { ApiError } from '../api.js';
import { h, formatPhone, formatMoney, announce, emptyState, spinner } from '../ui.js';
import { formatWhen } from '../composer/words.js';
import { linePath, confirmRow, errorBox } from './parts.js';

// scheduledSection returns the section for line and its load(); after a
// cancel the focus goes to focusAfter.
export function scheduledSection(ctx, line, { canWrite, focusAfter }) {
  const err = errorBox();
  const body = h('div', { class: 'ln-list' }, spinner('Loading scheduled messages'));
  const el = h('section', { class: 'ln-section', 'aria-labelledby': 'scheduled-title' },
    h('h2', { id: 'scheduled-title' }, 'Scheduled messages'),
    h('p', { class: 'ln-help' }, 'Messages waiting to be sent from this line, soonest first. A cancelled message is never sent or charged.'),
    err.el, body);

  async function load() {
    try {
      const list = await ctx.api('GET', linePath(line, '/scheduled'));
      err.clear();
      if (!list.length) {
        body.replaceChildren(emptyState('Nothing scheduled', 'Schedule a message from a conversation\'s reply box ("Schedule").'));
        return;
      }
      // The API answers soonest first; keep that order.
      body.replaceChildren(h('ul', { class: 'ln-rows', 'aria-label': 'Scheduled messages' }, ...list.map(row)));
    } catch (e) {
      body.replaceChildren();
      err.fail(e);
    }
  }
  async function cancel(s, restore) {
    try {
      await ctx.api('DELETE', linePath(line, `/scheduled/${s.id}`));
      announce('Scheduled message cancelled.');
      await load();
      focusAfter.focus();
    } catch (e) {
      restore();
      if (e instanceof ApiError && e.status === 404) {
        err.fail(new Error('That message is no longer scheduled: it was sent or cancelled meanwhile.'));
        load();
      } else {
        err.fail(e);
      }
    }
  }
  function row(s) {
    const actions = h('div', { class: 'ln-actions' });
    const text = s.text || (s.media.length ? '(picture only)' : '');
    const li = h('li', { class: 'ln-row', 'data-id': String(s.id) },
      h('div', { class: 'ln-main' },
        h('p', { class: 'ln-when', id: `sched-${s.id}` }, h('time', { datetime: s.sendAt }, formatWhen(s.sendAt)),
          ' to ', s.recipients.map((r, i) => [i ? ', ' : '', h('span', { class: 'ln-nowrap' }, formatPhone(r))])),
        h('p', { class: 'ln-text' }, text),
        h('p', { class: 'ln-meta' },
          s.media.length ? `${s.media.length} image${s.media.length === 1 ? '' : 's'} · ` : '',
          `${formatMoney(String(s.price), s.currency)} when sent`)),
      actions);
    if (canWrite) {
      const btn = h('button', { type: 'button', class: 'ln-cancel', 'aria-describedby': `sched-${s.id}` }, 'Cancel message…');
      btn.addEventListener('click', () => confirmRow(actions, 'Cancel this message?', 'Yes, cancel it', (restore) => cancel(s, restore)));
      actions.append(btn);
    }
    return li;
  }
  return { el, load };
}
