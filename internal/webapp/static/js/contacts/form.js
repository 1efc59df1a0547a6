// The contact editor, for a new contact and for changing one. It is a
// dialog of its own rather than ui.js's: a refusal (a number another
// contact holds, an email that is not one) is shown beside the fields and
// the dialog stays open, so nothing typed is lost.
import { h, errorText, formatPhone } from '../ui.js';

const LIMITS = { name: 200, company: 200, email: 254, notes: 4000, label: 50 };

function field(id, label, input, hint) {
  return h('div', { class: 'field' }, h('label', { for: id, text: label }), input,
    hint ? h('p', { class: 'hint', id: id + '-hint', text: hint }) : null);
}

// numberRow is one number and its label, with a button that removes it.
function numberRow(n, i, remove) {
  const id = `contact-number-${i}`;
  const number = h('input', { id, name: 'number', type: 'tel', autocomplete: 'off', inputmode: 'tel', value: n.number ? formatPhone(n.number) : '', required: i === 0 });
  const label = h('input', { id: id + '-label', name: 'label', autocomplete: 'off', maxlength: LIMITS.label, value: n.label || '', placeholder: 'mobile, work…' });
  const row = h('div', { class: 'number-row' },
    h('label', { for: id, class: 'visually-hidden', text: `Number ${i + 1}` }), number,
    h('label', { for: id + '-label', class: 'visually-hidden', text: `Label of number ${i + 1}` }), label,
    i ? h('button', { type: 'button', class: 'btn btn-quiet', 'aria-label': `Remove number ${i + 1}`, on: { click: () => remove(row) } }, 'Remove') : null);
  return row;
}

// editContact opens the editor on contact (a new one when it has no id;
// its numbers may be given, as from a thread's "Add to contacts") and
// resolves to the contact the server saved, or null when the person
// cancels.
export function editContact(ctx, contact = {}) {
  return new Promise((resolve) => {
    const isNew = !contact.id;
    const name = h('input', { id: 'contact-name', name: 'name', required: true, maxlength: LIMITS.name, autocomplete: 'off', value: contact.name || '' });
    const company = h('input', { id: 'contact-company', name: 'company', maxlength: LIMITS.company, autocomplete: 'off', value: contact.company || '' });
    const email = h('input', { id: 'contact-email', name: 'email', type: 'email', maxlength: LIMITS.email, autocomplete: 'off', value: contact.email || '' });
    const tags = h('input', { id: 'contact-tags', name: 'tags', autocomplete: 'off', value: (contact.tags || []).join(', '), 'aria-describedby': 'contact-tags-hint' });
    const notes = h('textarea', { id: 'contact-notes', name: 'notes', rows: 3, maxlength: LIMITS.notes }, contact.notes || '');
    const numbers = h('div', { class: 'numbers', role: 'group', 'aria-labelledby': 'contact-numbers-label' });
    let count = 0;
    const addRow = (n = {}) => numbers.append(numberRow(n, count++, (row) => row.remove()));
    (contact.numbers?.length ? contact.numbers : [{}]).forEach((n) => addRow(n));
    const problem = h('div', { class: 'dialog-error', role: 'alert' });
    const save = h('button', { type: 'submit', class: 'btn btn-primary' }, isNew ? 'Add contact' : 'Save');
    const form = h('form', { class: 'contact-form' },
      h('h2', { id: 'contact-dialog-title', text: isNew ? 'New contact' : `Edit ${contact.name}` }),
      problem,
      field('contact-name', 'Name', name),
      h('div', { class: 'field' }, h('span', { id: 'contact-numbers-label', class: 'label', text: 'Phone numbers' }), numbers,
        h('button', { type: 'button', class: 'btn btn-quiet', on: { click: () => { addRow(); numbers.lastChild.querySelector('input').focus(); } } }, '+ Add a number')),
      field('contact-company', 'Company', company),
      field('contact-email', 'Email', email),
      field('contact-tags', 'Tags', tags, 'Separate tags with commas.'),
      field('contact-notes', 'Notes', notes),
      h('div', { class: 'dialog-actions' }, h('button', { type: 'button', class: 'btn', on: { click: () => close(null) } }, 'Cancel'), save));
    const dlg = h('dialog', { class: 'dialog dialog-wide', 'aria-labelledby': 'contact-dialog-title' }, form);
    const opener = document.activeElement;
    function close(v) {
      dlg.close();
      dlg.remove();
      opener?.focus?.();
      resolve(v);
    }
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const body = {
        name: name.value.trim(), company: company.value.trim(), email: email.value.trim(), notes: notes.value,
        tags: tags.value.split(',').map((t) => t.trim()).filter(Boolean),
        numbers: [...numbers.querySelectorAll('.number-row')].map((r) => {
          const [n, l] = r.querySelectorAll('input');
          return { number: n.value.trim(), label: l.value.trim() };
        }).filter((n) => n.number),
      };
      save.disabled = true;
      problem.replaceChildren();
      try {
        const saved = await ctx.api(isNew ? 'POST' : 'PATCH', isNew ? '/contacts' : `/contacts/${contact.id}`, { body });
        close(saved);
      } catch (err) {
        problem.replaceChildren(h('p', { text: errorText(err) }));
        save.disabled = false;
        problem.scrollIntoView({ block: 'nearest' });
      }
    });
    dlg.addEventListener('cancel', (e) => { e.preventDefault(); close(null); });
    document.body.append(dlg);
    dlg.showModal();
    name.focus();
  });
}
