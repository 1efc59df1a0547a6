// Saved replies (GET and POST /sms/templates): a menu under the box that
// inserts one at the caret, and saves the box's text as a new one.
import { ApiError } from '../api.js';
import { h } from '../ui.js';

// savedReplies returns the menu for composer c (c.api, c.id, c.textarea,
// c.changed, c.canWrite).
export function savedReplies(c) {
  const list = h('ul', { class: 'cmp-replies-list' });
  const title = h('input', { id: `${c.id}-save-title`, type: 'text', maxlength: '200', autocomplete: 'off' });
  const note = h('p', { class: 'cmp-muted', role: 'status' });
  const saveForm = c.canWrite ? h('div', { class: 'cmp-save-reply' },
    h('label', { for: `${c.id}-save-title` }, 'Save the text above as a reply, titled'),
    h('div', { class: 'cmp-row' }, title,
      h('button', { type: 'button', class: 'cmp-tool', on: { click: () => save() } }, 'Save reply')),
    note) : null;
  const menu = h('details', { class: 'cmp-menu cmp-replies' },
    h('summary', { class: 'cmp-tool' }, h('span', { class: 'cmp-wide' }, 'Saved replies'), h('span', { class: 'cmp-narrow' }, 'Replies')),
    h('div', { class: 'cmp-panel' }, list, saveForm));

  let loaded = false;
  async function load() {
    if (loaded) return;
    loaded = true;
    list.replaceChildren(h('li', { class: 'cmp-muted' }, 'Loading saved replies…'));
    try {
      const all = await c.api('GET', '/sms/templates');
      if (!all.length) {
        list.replaceChildren(h('li', { class: 'cmp-muted' }, 'No saved replies yet.'));
        return;
      }
      list.replaceChildren(...all.map((t) => h('li', {},
        h('button', { type: 'button', class: 'cmp-reply', on: { click: () => insert(t.body) } },
          h('span', { class: 'cmp-reply-title' }, t.title), h('span', { class: 'cmp-reply-body' }, t.body)))));
    } catch (err) {
      loaded = false;
      list.replaceChildren(h('li', { class: 'cmp-muted' },
        err instanceof ApiError && err.status === 403 ? 'Your sign-in may not read saved replies.' : 'Saved replies could not be loaded.'));
    }
  }
  async function save() {
    const name = title.value.trim();
    const body = c.textarea.value;
    if (body.trim() === '') { note.textContent = 'Write the reply in the box first.'; c.textarea.focus(); return; }
    if (!name) { note.textContent = 'Give it a title.'; title.focus(); return; }
    try {
      await c.api('POST', '/sms/templates', { body: { title: name, body } });
      title.value = '';
      note.textContent = `Saved “${name}”.`;
      loaded = false;
      await load();
    } catch (err) {
      note.textContent = err instanceof ApiError && err.status === 403
        ? 'Your sign-in may not save replies.'
        : `Not saved: ${(err && (err.detail || err.message)) || 'unknown error'}`;
    }
  }
  function insert(text) {
    // Insert at the caret (replacing a selection), as typing would.
    const start = c.textarea.selectionStart ?? c.textarea.value.length;
    const end = c.textarea.selectionEnd ?? start;
    c.textarea.setRangeText(text, start, end, 'end');
    menu.open = false;
    c.textarea.focus();
    c.changed();
  }
  title.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); save(); } });
  menu.addEventListener('toggle', () => {
    if (menu.open) load().then(() => list.querySelector('button')?.focus());
  });
  return menu;
}
