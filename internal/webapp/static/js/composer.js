// The composer: the reply box under a thread. Everything it does is a public
// API call a person's token may make: POST /sms/quote for the live preview
// (composer/quote.js), POST /sms/media for attachments (attachments.js),
// /sms/templates for saved replies (replies.js), /sms/drafts for the draft
// (draft.js), POST /sms/messages and POST /sms/lines/{line}/scheduled to
// send (send.js). This module builds the form and wires the parts.
import { h, formatPhone } from './ui.js';
import { quotes } from './composer/quote.js';
import { drafts } from './composer/draft.js';
import { savedReplies } from './composer/replies.js';
import { attachments, dropTarget, TYPES } from './composer/attachments.js';
import { sender } from './composer/send.js';
import { toLocalInput } from './composer/words.js';

export { explain, formatWhen } from './composer/words.js';
export { draftKey } from './composer/draft.js';

// With large images attached, a keystroke does not re-post megabytes to be
// quoted: an MMS costs the same whatever its text.
const QUOTE_TEXT_BYTES = 512 * 1024;

// Ids for label/aria links; several composers never share one.
let serial = 0;

// scheduleMenu is the "Schedule" menu: a local time and its button.
function scheduleMenu(id) {
  const when = h('input', { type: 'datetime-local', id: `${id}-when`, name: 'sendAt' });
  const button = h('button', { type: 'button', class: 'cmp-schedule-button primary' }, 'Schedule send');
  const menu = h('details', { class: 'cmp-menu cmp-schedule' },
    h('summary', { class: 'cmp-tool' }, 'Schedule'),
    h('div', { class: 'cmp-panel' },
      h('label', { for: `${id}-when` }, 'Send at (your local time)'),
      h('div', { class: 'cmp-row' }, when, button)));
  menu.addEventListener('toggle', () => {
    if (!menu.open) return;
    // A sensible default: the next whole hour; at most a year ahead.
    const now = new Date();
    const next = new Date(now.getTime() + 60 * 60 * 1000);
    next.setMinutes(0, 0, 0);
    when.min = toLocalInput(new Date(now.getTime() + 60 * 1000));
    when.max = toLocalInput(new Date(now.getTime() + 364 * 24 * 60 * 60 * 1000));
    if (!when.value) when.value = toLocalInput(next);
    when.focus();
  });
  return { menu, when, button };
}

// elements builds the form of composer c.
function elements(c, recipients) {
  const id = c.id;
  c.status = h('p', { class: 'cmp-status', id: `${id}-status`, role: 'status' });
  c.errorBox = h('div', { class: 'cmp-error', role: 'alert' });
  c.textarea = h('textarea', {
    id: `${id}-text`, name: 'message', rows: '3', maxlength: '2000',
    'aria-describedby': `${id}-preview ${id}-hint`, placeholder: 'Write a reply…',
  });
  c.preview = h('p', { class: 'cmp-preview', id: `${id}-preview`, 'aria-live': 'polite' });
  c.thumbs = h('ul', { class: 'cmp-attachments', 'aria-label': 'Attachments' });
  c.fileInput = h('input', { type: 'file', id: `${id}-file`, class: 'cmp-file', accept: Object.keys(TYPES).join(',') });
  // Short words on a phone (cmp-wide / cmp-narrow): the accessible name is
  // always the words shown.
  c.attachButton = h('button', { type: 'button', class: 'cmp-tool' }, 'Attach', h('span', { class: 'cmp-wide' }, '\u00a0image'));
  c.replies = savedReplies(c);
  const sched = scheduleMenu(id);
  c.schedule = sched.menu;
  c.when = sched.when;
  c.scheduleButton = sched.button;
  c.sendButton = h('button', { type: 'submit', class: 'cmp-send primary' }, 'Send');
  c.form = h('form', { class: 'composer', 'aria-label': `Reply to ${recipients}` },
    c.errorBox,
    h('label', { for: `${id}-text`, class: 'cmp-label' }, `Reply to ${recipients}`),
    c.textarea, c.thumbs, c.preview,
    h('div', { class: 'cmp-bar' },
      h('div', { class: 'cmp-tools' }, c.attachButton, c.fileInput, c.replies, c.schedule),
      h('div', { class: 'cmp-sendbox' },
        h('span', { class: 'cmp-hint', id: `${id}-hint` }, 'Ctrl+Enter sends'),
        c.sendButton)),
    c.status);
  // Boolean properties are set directly: they are not attributes with values.
  c.errorBox.hidden = c.preview.hidden = c.thumbs.hidden = c.fileInput.hidden = true;
  c.fileInput.multiple = true;
  c.form.noValidate = true;
}

// wire connects the form's events to the parts.
function wire(c) {
  const { form, textarea, replies, schedule } = c;
  c.attachButton.addEventListener('click', () => c.fileInput.click());
  c.fileInput.addEventListener('change', () => { c.attachments.add([...c.fileInput.files]); c.fileInput.value = ''; });
  dropTarget(form, textarea, c.attachments.add);
  textarea.addEventListener('input', c.changed);
  textarea.addEventListener('blur', () => c.draft.flush());
  textarea.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); c.sender.send(); }
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    // Enter in one of the small fields (a reply's title, the send time) is
    // that field's own action, never an implicit Send.
    const from = document.activeElement;
    if (from && from.tagName === 'INPUT' && form.contains(from)) return;
    c.sender.send();
  });
  c.scheduleButton.addEventListener('click', c.sender.schedule);
  c.when.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); c.sender.schedule(); } });
  // One menu open at a time; Escape closes it and returns to its button.
  for (const [menu, other] of [[replies, schedule], [schedule, replies]]) {
    menu.addEventListener('toggle', () => { if (menu.open) other.open = false; });
    menu.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && menu.open) {
        e.stopPropagation();
        menu.open = false;
        menu.querySelector('summary').focus();
      }
    });
  }
}

// untilGone saves a pending draft when the page is left, and stops
// listening once the form leaves the page (another thread opened).
function untilGone(c) {
  const onHidden = () => { if (document.visibilityState === 'hidden') c.draft.flush(); };
  window.addEventListener('pagehide', c.draft.flush);
  document.addEventListener('visibilitychange', onHidden);
  const gone = new MutationObserver(() => {
    if (!c.form.isConnected && c.form.dataset.mounted) {
      gone.disconnect();
      window.removeEventListener('pagehide', c.draft.flush);
      document.removeEventListener('visibilitychange', onHidden);
      c.draft.flush();
      c.quote.stop();
    }
  });
  requestAnimationFrame(() => {
    if (c.form.isConnected) {
      c.form.dataset.mounted = '1';
      gone.observe(document.body, { childList: true, subtree: true });
    }
  });
}

// composer returns the reply box for one conversation. line is the sending
// number; number the other party (or, on a group thread, any participant);
// groupParticipants every other party of a group thread; onSent(result,
// {scheduled}) is called after a send or a schedule succeeded.
export function composer(ctx, { line, number, groupParticipants, onSent, contact } = {}) {
  if (ctx.can && ctx.can.send === false) {
    return h('p', { class: 'notice composer-off' }, 'This sign-in cannot send texts (it was not granted sms:send), so there is no reply box.');
  }
  const to = groupParticipants && groupParticipants.length > 1 ? [...groupParticipants] : [number];
  // c is this composer's own state, shared by its parts.
  const c = { api: ctx.api, id: `cmp${++serial}`, line, to, onSent, canWrite: !ctx.can || ctx.can.write !== false,
    // contact() is the conversation's contact ({id, name}, or null): the
    // saved replies' variables are filled from it.
    contact: contact || (() => null), mayShare: ctx.me?.kind !== 'user' || ctx.me?.permissions?.users === 'all' };
  c.showProblem = (text) => {
    c.errorBox.replaceChildren();
    c.errorBox.hidden = !text;
    if (text) c.errorBox.append(h('p', { text }));
  };
  c.setStatus = (text, ...extra) => c.status.replaceChildren(text, ...extra);
  // The request body: the same for the quote and the send.
  c.sendBody = () => {
    const body = { from: line, to };
    if (c.textarea.value !== '') body.message = c.textarea.value;
    const ready = c.attachments.all.filter((a) => a.content && !a.error);
    if (ready.length) body.attachments = ready.map((a) => ({ filename: a.name, contentType: a.type, content: a.content }));
    return body;
  };
  c.isEmpty = () => c.textarea.value.trim() === '' && !c.attachments.all.some((a) => !a.error);
  c.changed = () => {
    c.showProblem('');
    c.draft.soon();
    if (c.attachments.bytes() > QUOTE_TEXT_BYTES && !c.preview.hidden) return;
    c.quote.soon();
  };
  c.quoteSoon = () => c.quote.soon();
  c.restored = () => c.quote.soon();
  c.isSending = () => c.sender.busy();
  c.setSending = (on, what) => {
    c.sendButton.disabled = c.scheduleButton.disabled = on;
    c.form.setAttribute('aria-busy', on ? 'true' : 'false');
    c.sendButton.textContent = on && what === 'send' ? 'Sending…' : 'Send';
    c.scheduleButton.textContent = on && what === 'schedule' ? 'Scheduling…' : 'Schedule send';
  };
  c.reset = () => {
    c.textarea.value = '';
    c.attachments.clear();
    c.quote.hide();
  };
  elements(c, to.map(formatPhone).join(', '));
  c.attachments = attachments(c);
  c.quote = quotes(c);
  c.draft = drafts(c, { line, number, groupParticipants });
  c.sender = sender(c);
  wire(c);
  untilGone(c);
  return c.form;
}
