// Saved replies (GET and POST /sms/templates): a menu under the box, the
// team's replies beside the person's own, that inserts one at the caret
// with its variables filled from the conversation's contact (as the
// preview in the menu shows it), and saves the box's text as a new one
// (shared with the team when the role may).
import { ApiError } from '../api.js';
import { h, formatPhone } from '../ui.js';

// fill replaces a reply's variables ({first_name}, {last_name}, {name},
// {company}, {number}) from the contact; one it has no value for becomes
// empty, other text in braces stays (docs/decisions.md, "The team").
export function fill(body, contact, number) {
  const name = (contact?.name || '').trim();
  const cut = name.indexOf(' ');
  const values = {
    first_name: cut < 0 ? name : name.slice(0, cut), last_name: cut < 0 ? '' : name.slice(cut + 1).trim(),
    name, company: contact?.company || '', number: number ? formatPhone(number) : '',
  };
  return body.replace(/\{(first_name|last_name|name|company|number)\}/g, (_, k) => values[k]);
}

// savedReplies returns the menu for composer c (c.api, c.id, c.textarea,
// c.changed, c.canWrite, c.contact, c.to, c.mayShare).
export function savedReplies(c) {
  const list = h('ul', { class: 'cmp-replies-list' });
  const title = h('input', { id: `${c.id}-save-title`, type: 'text', maxlength: '200', autocomplete: 'off' });
  const share = h('input', { id: `${c.id}-save-shared`, type: 'checkbox' });
  const note = h('p', { class: 'cmp-muted', role: 'status' });
  const saveForm = c.canWrite ? h('div', { class: 'cmp-save-reply' },
    h('label', { for: `${c.id}-save-title` }, 'Save the text above as a reply, titled'),
    h('div', { class: 'cmp-row' }, title,
      h('button', { type: 'button', class: 'cmp-tool', on: { click: () => save() } }, 'Save reply')),
    c.mayShare ? h('label', { class: 'cmp-share' }, share, ' For the whole team ({first_name}, {company}… are filled from each contact)') : null,
    note) : null;
  const menu = h('details', { class: 'cmp-menu cmp-replies' },
    h('summary', { class: 'cmp-tool' }, h('span', { class: 'cmp-wide' }, 'Saved replies'), h('span', { class: 'cmp-narrow' }, 'Replies')),
    h('div', { class: 'cmp-panel' }, list, saveForm));

  let loaded = false;
  // contactNow is the conversation's contact with its company (read once
  // a reply needs it).
  let full = null;
  async function contactNow(all) {
    const ref = c.contact();
    if (!ref) return null;
    if (full?.id === ref.id) return full;
    full = all.some((t) => t.body.includes('{company}')) ? await c.api('GET', `/contacts/${ref.id}`).catch(() => ref) : ref;
    return full;
  }
  const item = (t, who) => {
    const text = fill(t.body, who, c.to?.[0]);
    return h('li', {}, h('button', { type: 'button', class: 'cmp-reply', on: { click: () => insert(text) } },
      h('span', { class: 'cmp-reply-title' }, t.title), h('span', { class: 'cmp-reply-body' }, text)));
  };
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
      const who = await contactNow(all);
      const team = all.filter((t) => t.shared), mine = all.filter((t) => !t.shared);
      list.replaceChildren(
        ...(team.length ? [h('li', { class: 'cmp-reply-group' }, 'Team replies'), ...team.map((t) => item(t, who))] : []),
        ...(team.length && mine.length ? [h('li', { class: 'cmp-reply-group' }, 'My replies')] : []),
        ...mine.map((t) => item(t, who)));
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
      await c.api('POST', '/sms/templates', { body: { title: name, body, shared: share.checked || undefined } });
      title.value = '';
      note.textContent = share.checked ? `Saved “${name}” for the team.` : `Saved “${name}”.`;
      share.checked = false;
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
