// The address book's list (/app/contacts): found as one types (GET
// /contacts?q=, the words' beginnings or any digits of a number), paged
// with the cursor, kept live by the stream's contact events, with a new
// contact, import (CSV or vCard, with its report) and export.
import { h, showError, announce, emptyState, spinner, formatPhone } from '../ui.js';
import { replaceAddress } from '../router.js';
import { contactHref } from '../names.js';
import { editContact } from './form.js';

const PAGE = 50;

function contactRow(c) {
  return h('tr', null,
    h('th', { scope: 'row', 'data-label': 'Name' }, h('a', { href: contactHref(c.id), text: c.name })),
    h('td', { 'data-label': 'Company', text: c.company }),
    h('td', { 'data-label': 'Numbers' }, h('ul', { class: 'plain' }, c.numbers.map((n) => h('li', null,
      formatPhone(n.number), n.label ? h('span', { class: 'muted', text: ` · ${n.label}` }) : null)))),
    h('td', { 'data-label': 'Tags' }, c.tags.map((t) => h('span', { class: 'tag', text: t }))));
}

// importReport says what an import did, with the rows it skipped and why.
function importReport(r) {
  const parts = [`${r.created} created`, `${r.updated} updated`, `${r.skipped.length} skipped`];
  return h('div', { class: r.skipped.length ? 'notice' : 'success', role: 'status' },
    h('p', { text: `Import finished: ${parts.join(', ')}.` }),
    r.skipped.length ? h('details', null, h('summary', { text: 'Rows skipped' }),
      h('ul', null, r.skipped.slice(0, 200).map((s) => h('li', { text: `Line ${s.line}: ${s.reason}` })),
        r.skipped.length > 200 ? h('li', { text: `… and ${r.skipped.length - 200} more` }) : null)) : null);
}

async function download(ctx, format) {
  const resp = await ctx.api('GET', '/contacts/export', { query: { format }, raw: true, headers: { Accept: format === 'vcard' ? 'text/vcard' : 'text/csv' } });
  if (!resp.ok) throw new Error('The export failed. Try again in a moment.');
  const url = URL.createObjectURL(await resp.blob());
  const a = h('a', { href: url, download: format === 'vcard' ? 'contacts.vcf' : 'contacts.csv', hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

export async function renderList(main, params, ctx) {
  const controller = new AbortController();
  const signal = controller.signal;
  const writer = ctx.can.contactsWrite;
  const q = h('input', { type: 'search', id: 'contacts-q', name: 'q', autocomplete: 'off', value: params.query.get('q') || '', placeholder: 'Name, company or number' });
  const body = h('tbody');
  const table = h('table', { class: 'contacts-table', hidden: true },
    h('caption', { class: 'visually-hidden', text: 'Contacts, newest first' }),
    h('thead', null, h('tr', null, ['Name', 'Company', 'Numbers', 'Tags'].map((c) => h('th', { scope: 'col', text: c })))), body);
  const status = h('div', { class: 'list-status' }, spinner('Loading contacts…'));
  const more = h('button', { type: 'button', class: 'btn more', hidden: true }, 'Load more');
  const report = h('div', { 'aria-live': 'polite' });
  const file = h('input', { type: 'file', id: 'contacts-file', accept: '.csv,.vcf,.vcard,text/csv,text/vcard', class: 'visually-hidden', tabindex: '-1', 'aria-label': 'A contacts file to import (CSV or vCard)' });
  const importBtn = h('button', { type: 'button', class: 'btn', on: { click: () => file.click() } }, 'Import…');
  main.replaceChildren(
    h('div', { class: 'page-head' }, h('h1', { text: 'Contacts' }),
      h('div', { class: 'page-actions' },
        writer ? h('button', { type: 'button', class: 'btn btn-primary', on: { click: create } }, 'New contact') : null,
        writer ? [importBtn, file] : null,
        h('button', { type: 'button', class: 'btn', on: { click: () => download(ctx, 'csv').catch((err) => showError(main, err)) } }, 'Export CSV'),
        h('button', { type: 'button', class: 'btn', on: { click: () => download(ctx, 'vcard').catch((err) => showError(main, err)) } }, 'Export vCard'))),
    report,
    h('form', { class: 'contacts-find', role: 'search', on: { submit: (e) => e.preventDefault() } },
      h('label', { for: 'contacts-q', text: 'Find a contact' }), q),
    status, table, more);

  let next = null, seq = 0;
  async function load(append) {
    const mine = ++seq;
    const page = await ctx.api('GET', '/contacts', { query: { q: q.value.trim(), limit: PAGE, before: append ? next : undefined }, signal, envelope: true });
    if (mine !== seq) return;
    next = page.next ?? null;
    if (!append) body.replaceChildren();
    body.append(...page.data.map(contactRow));
    const none = !body.children.length;
    table.hidden = none;
    more.hidden = !next;
    status.replaceChildren(none ? (q.value.trim()
      ? emptyState('No contact matches', 'Try the beginning of a name or company, or a few digits of a number.')
      : emptyState('No contacts yet', writer ? 'Add your team’s contacts one by one, or import a CSV or vCard file from Google Contacts, Outlook or a phone.' : 'Nobody has added a contact yet.')) : '');
  }
  const reload = () => load(false).catch((err) => { if (!signal.aborted) showError(main, err); });

  async function create() {
    const c = await editContact(ctx);
    if (c) ctx.navigate(contactHref(c.id));
  }

  let typingTimer = 0;
  q.addEventListener('input', () => {
    clearTimeout(typingTimer);
    typingTimer = setTimeout(() => {
      const v = q.value.trim();
      replaceAddress('/app/contacts' + (v ? '?q=' + encodeURIComponent(v) : ''));
      reload();
    }, 200);
  });
  more.addEventListener('click', () => load(true).catch((err) => showError(main, err)));
  file.addEventListener('change', async () => {
    const f = file.files[0];
    file.value = '';
    if (!f) return;
    const vcard = /\.(vcf|vcard)$/i.test(f.name) || /vcard/.test(f.type);
    importBtn.disabled = true;
    report.replaceChildren(spinner(`Importing ${f.name}…`));
    try {
      const r = await ctx.api('POST', '/contacts/import', { body: f, headers: { 'Content-Type': vcard ? 'text/vcard' : 'text/csv' } });
      report.replaceChildren(importReport(r));
      announce(`Import finished: ${r.created} created, ${r.updated} updated, ${r.skipped.length} skipped.`);
      reload();
    } catch (err) {
      report.replaceChildren();
      showError(report, err);
    } finally {
      importBtn.disabled = false;
    }
  });
  // Another person's change shows here as it happens.
  let liveTimer = 0;
  const off = ctx.stream.on('AccountContacts', () => { clearTimeout(liveTimer); liveTimer = setTimeout(reload, 300); });
  await reload();
  return () => { controller.abort(); off(); clearTimeout(typingTimer); clearTimeout(liveTimer); };
}
