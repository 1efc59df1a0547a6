// The composer: the reply box under a thread. Everything it does is a public
// API call a person's token may make: POST /sms/quote for the live preview,
// POST /sms/media for attachments, /sms/templates for saved replies,
// /sms/drafts for the draft, POST /sms/messages and
// POST /sms/lines/{line}/scheduled to send.
import { ApiError, newIdempotencyKey } from './api.js';
import { h, formatMoney, formatPhone, announce } from './ui.js';

// The send's limits (api/openapi.yaml, Attachment and SendRequest): checked
// here too so a person learns at once, not after an upload.
const MAX_BYTES = 5 * 1024 * 1024;
const MAX_ATTACHMENTS = 10;
const TYPES = { 'image/jpeg': 'jpg', 'image/png': 'png', 'image/gif': 'gif', 'image/bmp': 'bmp' };
const DRAFT_DELAY = 1000;
const QUOTE_DELAY = 300;
const QUOTE_TEXT_BYTES = 512 * 1024;

// Whether POST /sms/quote exists on this server: learnt from the first
// answer (404 or 405 means an older server) and kept for the page's life.
let quoteSupported = true;

// Ids for label/aria links; several composers never share one.
let serial = 0;

// draftKey is the stable draftId of a conversation: the same line and the
// same party (or the same set of group participants) always give the same
// key, so the draft follows the conversation across reloads and devices.
// A group's participant list can exceed the key's 128 characters, so a group
// is named by a hash of its sorted numbers.
export async function draftKey(line, number, groupParticipants) {
  const group = (groupParticipants || []).filter(Boolean);
  if (group.length < 2) return `sms-${line}-${number}`;
  const bytes = new TextEncoder().encode([...group].sort().join(','));
  const sum = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  let hex = '';
  for (const b of sum.slice(0, 16)) hex += b.toString(16).padStart(2, '0');
  return `sms-${line}-group-${hex}`;
}

// base64 encodes bytes as the API wants attachments (standard, no breaks),
// in chunks so a 5 MB image does not overflow the call stack.
function base64(buf) {
  const bytes = new Uint8Array(buf);
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    bin += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(bin);
}

function formatSize(n) {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${Math.round(n / 1024)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

// toLocalInput formats a Date for a datetime-local input (local time).
function toLocalInput(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

// whenFmt shows a send time in full: a scheduled message needs its day and
// its hour.
const whenFmt = new Intl.DateTimeFormat(undefined, { weekday: 'short', month: 'short', day: 'numeric', hour: 'numeric', minute: '2-digit' });
export function formatWhen(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '' : whenFmt.format(d);
}

function price(n, currency) {
  // The API's prices are exact decimals in JSON numbers; String() gives back
  // the decimal the server wrote (no arithmetic is done on them here).
  return formatMoney(String(n), currency || 'USD');
}

function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

// explain turns a failed send, schedule or upload into what it means for the
// person, and whether the same request may simply be tried again.
export function explain(err, what) {
  if (err && err.name === 'AbortError') return '';
  if (!(err instanceof ApiError) || err.status === 0) {
    return `Could not reach Switchboard, so it is not known whether the ${what} went through. ` +
      `Trying again is safe: the same message is never sent twice.`;
  }
  const detail = err.detail || err.message || '';
  switch (err.status) {
    case 400:
    case 413:
      return `The ${what} was refused: ${detail}. Nothing was sent.`;
    case 402:
      return `The account's balance is too low for this ${what}. Nothing was sent or charged.`;
    case 403:
      if (err.type === 'insufficient_scope') {
        return `This sign-in does not include permission to send (${(err.body && err.body.error && err.body.error.scope) || 'sms:send'}). Nothing was sent.`;
      }
      return `Your role does not allow sending from this line: ${detail}. Nothing was sent.`;
    case 404:
      return `This line or conversation is no longer available to you. Nothing was sent.`;
    case 409:
      return `${detail}. Nothing was sent by this attempt; try again in a moment.`;
    case 422:
      return `The ${what} was refused: ${detail}. Nothing was sent.`;
    case 503:
      return `Switchboard or the carrier is unavailable right now: nothing was sent or charged. Try again shortly.`;
    default:
      return `The ${what} failed (${detail || err.status}). Nothing was charged; trying again is safe.`;
  }
}

// composer returns the reply box for one conversation. line is the sending
// number; number the other party (or, on a group thread, any participant);
// groupParticipants every other party of a group thread; onSent(result,
// {scheduled}) is called after a send or a schedule succeeded.
export function composer(ctx, { line, number, groupParticipants, onSent } = {}) {
  const api = ctx.api;
  if (ctx.can && ctx.can.send === false) {
    return h('p', { class: 'notice composer-off' }, 'This sign-in cannot send texts (it was not granted sms:send), so there is no reply box.');
  }
  const id = `cmp${++serial}`;
  const to = groupParticipants && groupParticipants.length > 1 ? [...groupParticipants] : [number];
  const recipients = to.map(formatPhone).join(', ');

  // ---- state ----
  const attachments = []; // {file, name, type, url, content, hosted, error, uploading, promise, el}
  let sending = false;
  // The Idempotency-Key of the message being composed: made on the first
  // attempt and reused while the same body is retried, so a retry after a
  // lost answer never sends a second copy. A changed body is a new message
  // (the server refuses a key reused with another body).
  let attempt = null; // {key, body}
  let draftTimer = 0;
  let draftSaved = null; // the text the server holds as the draft
  let draftId = null;
  let quoteTimer = 0;
  let quoteAbort = null;

  // ---- elements ----
  const status = h('p', { class: 'cmp-status', id: `${id}-status`, role: 'status' });
  const errorBox = h('div', { class: 'cmp-error', role: 'alert' });
  const textarea = h('textarea', {
    id: `${id}-text`, name: 'message', rows: '3', maxlength: '2000',
    'aria-describedby': `${id}-preview ${id}-hint`,
    placeholder: 'Write a reply…',
  });
  const preview = h('p', { class: 'cmp-preview', id: `${id}-preview`, 'aria-live': 'polite' });
  const thumbs = h('ul', { class: 'cmp-attachments', 'aria-label': 'Attachments' });
  const fileInput = h('input', {
    type: 'file', id: `${id}-file`, class: 'cmp-file',
    accept: Object.keys(TYPES).join(','),
  });
  // Short words on a phone (cmp-wide / cmp-narrow): the accessible name is
  // always the words shown.
  const attachButton = h('button', { type: 'button', class: 'cmp-tool' }, 'Attach', h('span', { class: 'cmp-wide' }, '\u00a0image'));
  const repliesList = h('ul', { class: 'cmp-replies-list' });
  // Saving the text in the box as a new saved reply (POST /sms/templates).
  const saveTitle = h('input', { id: `${id}-save-title`, type: 'text', maxlength: '200', autocomplete: 'off' });
  const saveNote = h('p', { class: 'cmp-muted', role: 'status' });
  const saveForm = (!ctx.can || ctx.can.write !== false) ? h('div', { class: 'cmp-save-reply' },
    h('label', { for: `${id}-save-title` }, 'Save the text above as a reply, titled'),
    h('div', { class: 'cmp-row' }, saveTitle,
      h('button', { type: 'button', class: 'cmp-tool', on: { click: () => saveReply() } }, 'Save reply')),
    saveNote) : null;
  const replies = h('details', { class: 'cmp-menu cmp-replies' },
    h('summary', { class: 'cmp-tool' }, h('span', { class: 'cmp-wide' }, 'Saved replies'), h('span', { class: 'cmp-narrow' }, 'Replies')),
    h('div', { class: 'cmp-panel' }, repliesList, saveForm));
  const when = h('input', { type: 'datetime-local', id: `${id}-when`, name: 'sendAt' });
  const scheduleButton = h('button', { type: 'button', class: 'cmp-schedule-button primary' }, 'Schedule send');
  const schedule = h('details', { class: 'cmp-menu cmp-schedule' },
    h('summary', { class: 'cmp-tool' }, 'Schedule'),
    h('div', { class: 'cmp-panel' },
      h('label', { for: `${id}-when` }, 'Send at (your local time)'),
      h('div', { class: 'cmp-row' }, when, scheduleButton)));
  const sendButton = h('button', { type: 'submit', class: 'cmp-send primary' }, 'Send');
  const form = h('form', { class: 'composer', 'aria-label': `Reply to ${recipients}` },
    errorBox,
    h('label', { for: `${id}-text`, class: 'cmp-label' }, `Reply to ${recipients}`),
    textarea,
    thumbs,
    preview,
    h('div', { class: 'cmp-bar' },
      h('div', { class: 'cmp-tools' }, attachButton, fileInput, replies, schedule),
      h('div', { class: 'cmp-sendbox' },
        h('span', { class: 'cmp-hint', id: `${id}-hint` }, 'Ctrl+Enter sends'),
        sendButton)),
    status);
  // Boolean properties are set directly: they are not attributes with values.
  errorBox.hidden = preview.hidden = thumbs.hidden = fileInput.hidden = true;
  fileInput.multiple = true;
  form.noValidate = true;

  // ---- errors and status ----
  function showProblem(text) {
    errorBox.replaceChildren();
    if (!text) { errorBox.hidden = true; return; }
    errorBox.append(h('p', { text }));
    errorBox.hidden = false;
  }
  function setStatus(text, ...extra) {
    status.replaceChildren(text, ...extra);
  }

  // ---- the request body: the same for the quote and the send ----
  function sendBody() {
    const body = { from: line, to };
    const text = textarea.value;
    if (text !== '') body.message = text;
    const ready = attachments.filter((a) => a.content && !a.error);
    if (ready.length) {
      body.attachments = ready.map((a) => ({ filename: a.name, contentType: a.type, content: a.content }));
    }
    return body;
  }
  function isEmpty() {
    return textarea.value.trim() === '' && !attachments.some((a) => !a.error);
  }

  // ---- the live preview (POST /sms/quote) ----
  function scheduleQuote() {
    clearTimeout(quoteTimer);
    if (!quoteSupported) return;
    if (isEmpty()) {
      if (quoteAbort) quoteAbort.abort();
      preview.hidden = true;
      preview.replaceChildren();
      return;
    }
    quoteTimer = setTimeout(runQuote, QUOTE_DELAY);
  }
  async function runQuote() {
    if (quoteAbort) quoteAbort.abort(); // a newer text makes the older answer useless
    const abort = new AbortController();
    quoteAbort = abort;
    const body = sendBody();
    if (!body.message && !body.attachments) return;
    try {
      const q = await api('POST', '/sms/quote', { body, signal: abort.signal });
      if (abort.signal.aborted) return;
      showQuote(q);
    } catch (err) {
      if (abort.signal.aborted || (err && err.name === 'AbortError')) return;
      if (err instanceof ApiError && (err.status === 404 || err.status === 405)) {
        quoteSupported = false;
        preview.hidden = true;
        return;
      }
      preview.replaceChildren(h('span', { class: 'cmp-preview-error' },
        err instanceof ApiError ? `Cannot be sent as it is: ${err.detail || err.message}` : 'No price preview: Switchboard is not reachable.'));
      preview.hidden = false;
    }
  }
  function showQuote(q) {
    const parts = [];
    const m = (q.messages || [])[0];
    const b = q.billing || {};
    if (m) {
      if (m.type === 'mms') {
        parts.push(h('span', { class: 'cmp-q-kind' }, to.length > 1 ? 'MMS (group)' : 'MMS (picture message)'));
      } else if (m.encoding === 'UCS-2') {
        const chars = (m.ucs2Characters || []).join(' ');
        parts.push(h('span', { class: 'cmp-q-kind cmp-q-ucs2' }, 'UCS-2', chars ? ` (because of ${chars})` : ''));
      } else {
        parts.push(h('span', { class: 'cmp-q-kind' }, m.encoding || 'GSM-7'));
      }
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
    const children = [];
    parts.forEach((p, i) => { if (i) children.push(' · '); children.push(p); });
    preview.replaceChildren(h('span', { class: 'visually-hidden' }, 'Preview: '), ...children);
    preview.hidden = false;
  }

  // ---- drafts (GET/PUT/DELETE /sms/drafts/{draftId}) ----
  const draftReady = draftKey(line, number, groupParticipants).then(async (key) => {
    draftId = key;
    try {
      const d = await api('GET', `/sms/drafts/${encodeURIComponent(key)}`);
      draftSaved = d.message;
      // Only fill an untouched box: what the person already typed wins.
      if (textarea.value === '' && d.message) {
        textarea.value = d.message;
        setStatus('Draft restored.');
        scheduleQuote();
      }
    } catch (err) {
      if (!(err instanceof ApiError && err.status === 404)) setStatus('The saved draft could not be loaded.');
      draftSaved = '';
    }
  });
  function scheduleDraft() {
    clearTimeout(draftTimer);
    draftTimer = setTimeout(saveDraft, DRAFT_DELAY);
  }
  async function saveDraft() {
    clearTimeout(draftTimer);
    await draftReady;
    const text = textarea.value;
    if (text === draftSaved) return;
    const path = `/sms/drafts/${encodeURIComponent(draftId)}`;
    try {
      if (text === '') {
        await api('DELETE', path).catch((err) => { if (!(err instanceof ApiError && err.status === 404)) throw err; });
      } else {
        await api('PUT', path, { body: { message: text } });
      }
      draftSaved = text;
      if (!sending) setStatus(text === '' ? '' : 'Draft saved.');
    } catch (err) {
      setStatus('The draft could not be saved' + (err instanceof ApiError ? `: ${err.detail || err.message}` : '.'));
    }
  }
  async function discardDraft() {
    clearTimeout(draftTimer);
    await draftReady;
    try {
      await api('DELETE', `/sms/drafts/${encodeURIComponent(draftId)}`);
    } catch (err) { /* 404: there was none; anything else: the next edit saves over it */ }
    draftSaved = '';
  }

  // ---- saved replies (GET /sms/templates) ----
  let repliesLoaded = false;
  async function loadReplies() {
    if (repliesLoaded) return;
    repliesLoaded = true;
    repliesList.replaceChildren(h('li', { class: 'cmp-muted' }, 'Loading saved replies…'));
    try {
      const list = await api('GET', '/sms/templates');
      if (!list.length) {
        repliesList.replaceChildren(h('li', { class: 'cmp-muted' }, 'No saved replies yet.'));
        return;
      }
      repliesList.replaceChildren(...list.map((t) => h('li', {},
        h('button', {
          type: 'button', class: 'cmp-reply',
          on: { click: () => insertReply(t.body) },
        }, h('span', { class: 'cmp-reply-title' }, t.title), h('span', { class: 'cmp-reply-body' }, t.body)))));
    } catch (err) {
      repliesLoaded = false;
      repliesList.replaceChildren(h('li', { class: 'cmp-muted' },
        err instanceof ApiError && err.status === 403 ? 'Your sign-in may not read saved replies.' : 'Saved replies could not be loaded.'));
    }
  }
  async function saveReply() {
    const title = saveTitle.value.trim();
    const body = textarea.value;
    if (body.trim() === '') { saveNote.textContent = 'Write the reply in the box first.'; textarea.focus(); return; }
    if (!title) { saveNote.textContent = 'Give it a title.'; saveTitle.focus(); return; }
    try {
      await api('POST', '/sms/templates', { body: { title, body } });
      saveTitle.value = '';
      saveNote.textContent = `Saved “${title}”.`;
      repliesLoaded = false;
      await loadReplies();
    } catch (err) {
      saveNote.textContent = err instanceof ApiError && err.status === 403
        ? 'Your sign-in may not save replies.'
        : `Not saved: ${(err && (err.detail || err.message)) || 'unknown error'}`;
    }
  }
  saveTitle.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); saveReply(); } });
  function insertReply(text) {
    // Insert at the caret (replacing a selection), as typing would.
    const start = textarea.selectionStart ?? textarea.value.length;
    const end = textarea.selectionEnd ?? start;
    textarea.setRangeText(text, start, end, 'end');
    replies.open = false;
    textarea.focus();
    changed();
  }
  replies.addEventListener('toggle', () => {
    if (replies.open) {
      schedule.open = false;
      loadReplies().then(() => { const first = repliesList.querySelector('button'); if (first) first.focus(); });
    }
  });

  // ---- attachments (POST /sms/media) ----
  function addFiles(files) {
    showProblem('');
    const problems = [];
    for (const file of files) {
      const type = file.type;
      if (!TYPES[type]) {
        problems.push(`${file.name}: only JPEG, PNG, GIF or BMP images can be sent.`);
        continue;
      }
      if (file.size > MAX_BYTES) {
        problems.push(`${file.name} is ${formatSize(file.size)}; an image may be at most 5 MB.`);
        continue;
      }
      if (attachments.filter((a) => !a.error).length >= MAX_ATTACHMENTS) {
        problems.push(`${file.name}: at most ${MAX_ATTACHMENTS} images per message.`);
        continue;
      }
      // The API wants a file name with an extension.
      const name = /\.[^./\\]+$/.test(file.name) ? file.name : `${file.name || 'image'}.${TYPES[type]}`;
      const a = { file, name, type, url: URL.createObjectURL(file), content: null, hosted: null, error: '', uploading: true };
      attachments.push(a);
      a.promise = upload(a);
      renderThumbs();
    }
    if (problems.length) showProblem(problems.join(' '));
    scheduleQuote();
  }
  // upload hosts the file (POST /sms/media): the server checks its type,
  // signature and size now, and a scheduled message refers to the hosted
  // URL. An immediate send carries the bytes again, as POST /sms/messages
  // takes attachments, not hosted URLs.
  async function upload(a) {
    try {
      a.content = base64(await a.file.arrayBuffer());
      const m = await api('POST', '/sms/media', { body: { filename: a.name, contentType: a.type, content: a.content } });
      a.hosted = m.url;
    } catch (err) {
      a.error = err instanceof ApiError ? (err.detail || err.message) : 'the upload did not reach Switchboard';
      if (err instanceof ApiError && err.status === 413) a.error = 'the file is too large';
      if (err instanceof ApiError && err.status === 409) a.error = err.detail || 'the account\'s media storage is full';
    }
    a.uploading = false;
    renderThumbs();
    scheduleQuote();
  }
  function removeAttachment(a) {
    const i = attachments.indexOf(a);
    if (i >= 0) attachments.splice(i, 1);
    URL.revokeObjectURL(a.url);
    renderThumbs();
    scheduleQuote();
    textarea.focus();
  }
  function renderThumbs() {
    thumbs.replaceChildren(...attachments.map((a) => h('li', { class: 'cmp-thumb' + (a.error ? ' cmp-thumb-bad' : '') },
      h('img', { src: a.url, alt: a.name, width: '64', height: '64' }),
      h('span', { class: 'cmp-thumb-name' }, a.name,
        h('span', { class: 'cmp-thumb-note' },
          a.error ? `Not attached: ${a.error}` : a.uploading ? `Uploading… ${formatSize(a.file.size)}` : formatSize(a.file.size))),
      h('button', { type: 'button', class: 'cmp-remove', 'aria-label': `Remove ${a.name}`, on: { click: () => removeAttachment(a) } }, '×'))));
    thumbs.hidden = attachments.length === 0;
  }
  attachButton.addEventListener('click', () => fileInput.click());
  fileInput.addEventListener('change', () => {
    addFiles([...fileInput.files]);
    fileInput.value = '';
  });
  form.addEventListener('dragover', (e) => {
    if (e.dataTransfer && [...e.dataTransfer.types].includes('Files')) { e.preventDefault(); form.classList.add('cmp-drop'); }
  });
  form.addEventListener('dragleave', () => form.classList.remove('cmp-drop'));
  form.addEventListener('drop', (e) => {
    form.classList.remove('cmp-drop');
    if (e.dataTransfer && e.dataTransfer.files.length) { e.preventDefault(); addFiles([...e.dataTransfer.files]); }
  });
  textarea.addEventListener('paste', (e) => {
    const files = e.clipboardData ? [...e.clipboardData.files] : [];
    if (files.length) { e.preventDefault(); addFiles(files); }
  });

  // ---- sending ----
  function keyFor(body) {
    const json = JSON.stringify(body);
    if (!attempt || attempt.body !== json) attempt = { key: newIdempotencyKey(), body: json };
    return attempt.key;
  }
  function setSending(on, label) {
    sending = on;
    sendButton.disabled = on;
    scheduleButton.disabled = on;
    form.setAttribute('aria-busy', on ? 'true' : 'false');
    sendButton.textContent = on && label === 'send' ? 'Sending…' : 'Send';
    scheduleButton.textContent = on && label === 'schedule' ? 'Scheduling…' : 'Schedule send';
  }
  async function ready() {
    await Promise.all(attachments.map((a) => a.promise));
    if (attachments.some((a) => a.error)) {
      showProblem('Remove the attachment that could not be attached, then try again.');
      return false;
    }
    if (isEmpty()) {
      showProblem('Write a message or attach an image first.');
      textarea.focus();
      return false;
    }
    return true;
  }
  function reset() {
    textarea.value = '';
    for (const a of attachments) URL.revokeObjectURL(a.url);
    attachments.length = 0;
    renderThumbs();
    attempt = null;
    preview.hidden = true;
    preview.replaceChildren();
  }

  async function send() {
    if (sending) return; // a second click or Ctrl+Enter while one is in flight
    setSending(true, 'send');
    showProblem('');
    try {
      if (!(await ready())) return;
      const body = sendBody();
      const key = keyFor(body);
      setStatus('Sending…');
      const result = await api('POST', '/sms/messages', { body, idempotencyKey: key });
      const msgs = result.messages || [];
      const b = result.billing || {};
      reset();
      // The draft is gone before the confirmation shows, so that a reload
      // (or another device) right after it never brings the text back.
      await discardDraft();
      if (!msgs.length) {
        setStatus('Nothing was sent: every recipient was skipped (' +
          (result.skipped || []).map((s) => `${formatPhone(s.to)}: ${s.reason.replace(/_/g, ' ')}`).join(', ') + '). Nothing was charged.');
      } else if (msgs.some((m) => m.status === 'pending')) {
        setStatus(`Handed to the carrier, which has not confirmed it yet; it is charged (${price(b.totalPrice, b.currency)}) only if the carrier took it. Do not send it again.`);
      } else {
        setStatus(h('span', { class: 'cmp-sent', 'data-charge': String(b.totalPrice) },
          `Sent. Charged ${price(b.totalPrice, b.currency)} (${plural(b.units, b.type === 'mms' ? 'MMS' : 'segment', b.type === 'mms' ? 'MMS' : 'segments')}).`));
      }
      announce(msgs.length ? 'Message sent.' : 'Message not sent.');
      if (onSent) onSent(result, { scheduled: false });
      textarea.focus();
    } catch (err) {
      showProblem(explain(err, 'message'));
      setStatus('');
    } finally {
      setSending(false);
    }
  }

  async function scheduleSend() {
    if (sending) return;
    showProblem('');
    if (!when.value) {
      showProblem('Choose when to send it.');
      when.focus();
      return;
    }
    const at = new Date(when.value);
    if (Number.isNaN(at.getTime()) || at.getTime() <= Date.now()) {
      showProblem('Choose a time in the future.');
      when.focus();
      return;
    }
    setSending(true, 'schedule');
    try {
      if (!(await ready())) return;
      const body = { to, sendAt: at.toISOString() };
      if (textarea.value !== '') body.message = textarea.value;
      const media = attachments.filter((a) => a.hosted).map((a) => a.hosted);
      if (media.length) body.media = media;
      const key = keyFor(body);
      setStatus('Scheduling…');
      const s = await api('POST', `/sms/lines/${encodeURIComponent(line)}/scheduled`, { body, idempotencyKey: key });
      reset();
      await discardDraft(); // before the confirmation, as for a send
      when.value = '';
      schedule.open = false;
      setStatus(h('span', { class: 'cmp-scheduled' },
        `Scheduled for ${formatWhen(s.sendAt)}, ${price(s.price, s.currency)} when sent. `),
        h('a', { href: `/app/lines/${encodeURIComponent(line)}` }, 'See or cancel scheduled messages'));
      announce(`Message scheduled for ${formatWhen(s.sendAt)}.`);
      if (onSent) onSent(s, { scheduled: true });
    } catch (err) {
      showProblem(explain(err, 'scheduled message'));
      setStatus('');
    } finally {
      setSending(false);
    }
  }

  // ---- wiring ----
  function changed() {
    showProblem('');
    scheduleDraft();
    // With large images attached, a keystroke does not re-post megabytes
    // to be quoted: an MMS costs the same whatever its text.
    const attachedBytes = attachments.reduce((n, a) => n + (a.error ? 0 : a.file.size), 0);
    if (attachedBytes > QUOTE_TEXT_BYTES && !preview.hidden) return;
    scheduleQuote();
  }
  textarea.addEventListener('input', changed);
  textarea.addEventListener('blur', () => { if (draftTimer) saveDraft(); });
  textarea.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      send();
    }
  });
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    // Enter in one of the small fields (a reply's title, the send time) is
    // that field's own action, never an implicit Send.
    const from = document.activeElement;
    if (from && from.tagName === 'INPUT' && form.contains(from)) return;
    send();
  });
  scheduleButton.addEventListener('click', scheduleSend);
  when.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); scheduleSend(); } });
  schedule.addEventListener('toggle', () => {
    if (!schedule.open) return;
    replies.open = false;
    // A sensible default: the next whole hour; at most a year ahead.
    const now = new Date();
    const next = new Date(now.getTime() + 60 * 60 * 1000);
    next.setMinutes(0, 0, 0);
    when.min = toLocalInput(new Date(now.getTime() + 60 * 1000));
    when.max = toLocalInput(new Date(now.getTime() + 364 * 24 * 60 * 60 * 1000));
    if (!when.value) when.value = toLocalInput(next);
    when.focus();
  });
  // Escape closes an open menu and returns to its button.
  for (const menu of [replies, schedule]) {
    menu.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && menu.open) {
        e.stopPropagation();
        menu.open = false;
        menu.querySelector('summary').focus();
      }
    });
  }
  // Leaving the page with an unsaved draft: save it now (best effort).
  const flush = () => { if (draftTimer) saveDraft(); };
  const onHidden = () => { if (document.visibilityState === 'hidden') flush(); };
  window.addEventListener('pagehide', flush);
  document.addEventListener('visibilitychange', onHidden);
  // When the composer leaves the page (another thread opened), stop
  // listening and save what is pending.
  const gone = new MutationObserver(() => {
    if (!form.isConnected && form.dataset.mounted) {
      gone.disconnect();
      window.removeEventListener('pagehide', flush);
      document.removeEventListener('visibilitychange', onHidden);
      flush();
      if (quoteAbort) quoteAbort.abort();
      clearTimeout(quoteTimer);
    }
  });
  requestAnimationFrame(() => {
    if (form.isConnected) {
      form.dataset.mounted = '1';
      gone.observe(document.body, { childList: true, subtree: true });
    }
  });

  return form;
}
