// The composer's live preview (POST /sms/quote): encoding, characters,
// segments and price of what the box would send, asked 300 ms after the
// last change (an older question is abandoned for a newer one).
import { ApiError } from '../api.js';
import { h, formatPhone } from '../ui.js';
import { price, plural } from './words.js';

const QUOTE_DELAY = 300;

// Whether POST /sms/quote exists on this server: learnt from the first
// answer (404 or 405 means an older server) and kept for the page's life.
let quoteSupported = true;

function kind(m, group) {
  if (m.type === 'mms') return h('span', { class: 'cmp-q-kind' }, group ? 'MMS (group)' : 'MMS (picture message)');
  if (m.encoding === 'UCS-2') {
    const chars = (m.ucs2Characters || []).join(' ');
    return h('span', { class: 'cmp-q-kind cmp-q-ucs2' }, 'UCS-2', chars ? ` (because of ${chars})` : '');
  }
  return h('span', { class: 'cmp-q-kind' }, m.encoding || 'GSM-7');
}

function quoteParts(q, group) {
  const parts = [];
  const m = (q.messages || [])[0];
  const b = q.billing || {};
  if (m) {
    parts.push(kind(m, group));
    if (m.type !== 'mms') {
      // One segment holds 160 GSM-7 or 70 UCS-2 characters (as the API
      // counts them: an emoji is 2): shown so the person sees the room left.
      if (typeof m.length === 'number') {
        const single = m.encoding === 'UCS-2' ? 70 : 160;
        parts.push(h('span', {}, m.units <= 1 ? `${m.length}/${single} characters` : plural(m.length, 'character', 'characters')));
      }
      parts.push(h('span', { class: 'cmp-q-units' }, plural(m.units, 'segment', 'segments')));
    }
  }
  parts.push(h('span', { class: 'cmp-q-price', 'data-price': String(b.totalPrice) },
    b.recipientCount === 0 ? 'nothing to send' : price(b.totalPrice, b.currency)));
  if (q.skipped && q.skipped.length) {
    parts.push(h('span', { class: 'cmp-q-skipped' },
      'skipped: ' + q.skipped.map((s) => `${formatPhone(s.to)} (${s.reason.replace(/_/g, ' ')})`).join(', ')));
  }
  return parts;
}

// quotes wires composer c's preview: c.api, c.preview, c.sendBody(),
// c.isEmpty(), c.to.
export function quotes(c) {
  let timer = 0;
  let abort = null;
  const hide = () => { c.preview.hidden = true; c.preview.replaceChildren(); };
  async function run() {
    abort?.abort(); // a newer text makes the older answer useless
    const mine = abort = new AbortController();
    const body = c.sendBody();
    if (!body.message && !body.attachments) return;
    try {
      const q = await c.api('POST', '/sms/quote', { body, signal: mine.signal });
      if (mine.signal.aborted) return;
      const children = [];
      quoteParts(q, c.to.length > 1).forEach((p, i) => { if (i) children.push(' · '); children.push(p); });
      c.preview.replaceChildren(h('span', { class: 'visually-hidden' }, 'Preview: '), ...children);
      c.preview.hidden = false;
    } catch (err) {
      if (mine.signal.aborted || err?.name === 'AbortError') return;
      if (err instanceof ApiError && (err.status === 404 || err.status === 405)) {
        quoteSupported = false;
        c.preview.hidden = true;
        return;
      }
      c.preview.replaceChildren(h('span', { class: 'cmp-preview-error' },
        err instanceof ApiError ? `Cannot be sent as it is: ${err.detail || err.message}` : 'No price preview: Switchboard is not reachable.'));
      c.preview.hidden = false;
    }
  }
  return {
    soon() {
      clearTimeout(timer);
      if (!quoteSupported) return;
      if (c.isEmpty()) { abort?.abort(); hide(); return; }
      timer = setTimeout(run, QUOTE_DELAY);
    },
    hide,
    stop() { abort?.abort(); clearTimeout(timer); },
  };
}
