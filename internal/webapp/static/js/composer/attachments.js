// Attachments (POST /sms/media): images picked, dropped or pasted, checked
// here against the send's limits, hosted at once (a scheduled message
// refers to the hosted URL; an immediate send carries the bytes again).
import { ApiError } from '../api.js';
import { h } from '../ui.js';
import { formatSize } from './words.js';

// The send's limits (api/openapi.yaml, Attachment and SendRequest): checked
// here too so a person learns at once, not after an upload.
const MAX_BYTES = 5 * 1024 * 1024;
const MAX_ATTACHMENTS = 10;
export const TYPES = { 'image/jpeg': 'jpg', 'image/png': 'png', 'image/gif': 'gif', 'image/bmp': 'bmp' };

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

// attachments keeps composer c's images (c.api, c.thumbs, c.showProblem,
// c.quoteSoon, c.textarea). Each is {file, name, type, url, content,
// hosted, error, uploading, promise}.
export function attachments(c) {
  const all = [];
  function paint() {
    c.thumbs.replaceChildren(...all.map((a) => h('li', { class: 'cmp-thumb' + (a.error ? ' cmp-thumb-bad' : '') },
      h('img', { src: a.url, alt: a.name, width: '64', height: '64' }),
      h('span', { class: 'cmp-thumb-name' }, a.name,
        h('span', { class: 'cmp-thumb-note' },
          a.error ? `Not attached: ${a.error}` : a.uploading ? `Uploading… ${formatSize(a.file.size)}` : formatSize(a.file.size))),
      h('button', { type: 'button', class: 'cmp-remove', 'aria-label': `Remove ${a.name}`, on: { click: () => remove(a) } }, '×'))));
    c.thumbs.hidden = all.length === 0;
  }
  async function upload(a) {
    try {
      a.content = base64(await a.file.arrayBuffer());
      const m = await c.api('POST', '/sms/media', { body: { filename: a.name, contentType: a.type, content: a.content } });
      a.hosted = m.url;
    } catch (err) {
      a.error = err instanceof ApiError ? (err.detail || err.message) : 'the upload did not reach Switchboard';
      if (err instanceof ApiError && err.status === 413) a.error = 'the file is too large';
      if (err instanceof ApiError && err.status === 409) a.error = err.detail || 'the account\'s media storage is full';
    }
    a.uploading = false;
    paint();
    c.quoteSoon();
  }
  function problem(file) {
    if (!TYPES[file.type]) return `${file.name}: only JPEG, PNG, GIF or BMP images can be sent.`;
    if (file.size > MAX_BYTES) return `${file.name} is ${formatSize(file.size)}; an image may be at most 5 MB.`;
    if (all.filter((a) => !a.error).length >= MAX_ATTACHMENTS) return `${file.name}: at most ${MAX_ATTACHMENTS} images per message.`;
    return '';
  }
  function add(files) {
    c.showProblem('');
    const problems = [];
    for (const file of files) {
      const p = problem(file);
      if (p) { problems.push(p); continue; }
      // The API wants a file name with an extension.
      const name = /\.[^./\\]+$/.test(file.name) ? file.name : `${file.name || 'image'}.${TYPES[file.type]}`;
      const a = { file, name, type: file.type, url: URL.createObjectURL(file), content: null, hosted: null, error: '', uploading: true };
      all.push(a);
      a.promise = upload(a);
      paint();
    }
    if (problems.length) c.showProblem(problems.join(' '));
    c.quoteSoon();
  }
  function remove(a) {
    const i = all.indexOf(a);
    if (i >= 0) all.splice(i, 1);
    URL.revokeObjectURL(a.url);
    paint();
    c.quoteSoon();
    c.textarea.focus();
  }
  return {
    all,
    add,
    ready: () => Promise.all(all.map((a) => a.promise)),
    bytes: () => all.reduce((n, a) => n + (a.error ? 0 : a.file.size), 0),
    clear() {
      for (const a of all) URL.revokeObjectURL(a.url);
      all.length = 0;
      paint();
    },
  };
}

// dropTarget takes images dropped on form or pasted into textarea.
export function dropTarget(form, textarea, add) {
  form.addEventListener('dragover', (e) => {
    if (e.dataTransfer && [...e.dataTransfer.types].includes('Files')) { e.preventDefault(); form.classList.add('cmp-drop'); }
  });
  form.addEventListener('dragleave', () => form.classList.remove('cmp-drop'));
  form.addEventListener('drop', (e) => {
    form.classList.remove('cmp-drop');
    if (e.dataTransfer && e.dataTransfer.files.length) { e.preventDefault(); add([...e.dataTransfer.files]); }
  });
  textarea.addEventListener('paste', (e) => {
    const files = e.clipboardData ? [...e.clipboardData.files] : [];
    if (files.length) { e.preventDefault(); add(files); }
  });
}
