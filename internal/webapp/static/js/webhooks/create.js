// The form for a new subscription (POST /webhooks).
import { h, showError } from '../ui.js';
import { put } from './parts.js';

export function createForm(types, ctx, onCreated) {
  const name = h('input', { id: 'wh-name', name: 'name', type: 'text', maxlength: '200', autocomplete: 'off' });
  const url = h('input', { id: 'wh-url', name: 'url', type: 'url', required: '', maxlength: '2048', placeholder: 'https://example.com/webhooks/switchboard', autocomplete: 'off', 'aria-describedby': 'wh-url-hint' });
  const type = h('select', { id: 'wh-type', name: 'type', required: '', 'aria-describedby': 'wh-type-hint' },
    types.map((t) => h('option', { value: t.type, text: t.type })));
  const typeHint = h('small', { id: 'wh-type-hint', class: 'hint' });
  const showTypeHint = () => { typeHint.textContent = (types.find((t) => t.type === type.value) || {}).description || ''; };
  type.addEventListener('change', showTypeHint);
  showTypeHint();
  const description = h('textarea', { id: 'wh-description', name: 'description', rows: '2', maxlength: '2000' });
  const enabled = h('input', { id: 'wh-enabled', name: 'enabled', type: 'checkbox' });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', text: 'Create subscription' });
  const errors = h('div', { class: 'form-errors' });
  const form = h('form', { class: 'stack', 'aria-labelledby': 'webhook-create-heading' },
    h('div', { class: 'field' }, h('label', { for: 'wh-url', text: 'Endpoint URL' }), url,
      h('small', { id: 'wh-url-hint', class: 'hint', text: 'Must be https, unless your operator allows this host.' })),
    h('div', { class: 'field' }, h('label', { for: 'wh-type', text: 'Event type' }), type, typeHint),
    h('div', { class: 'field' }, h('label', { for: 'wh-name', text: 'Name (optional)' }), name),
    h('div', { class: 'field' }, h('label', { for: 'wh-description', text: 'Description (optional)' }), description),
    h('label', { class: 'check', for: 'wh-enabled' }, enabled, ' Enable now (otherwise it receives nothing until enabled)'),
    errors,
    h('div', { class: 'actions' }, submit));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    put(errors);
    submit.disabled = true;
    try {
      const body = { url: url.value.trim(), type: type.value, enabled: enabled.checked };
      if (name.value.trim()) body.name = name.value.trim();
      if (description.value.trim()) body.description = description.value.trim();
      const w = await ctx.api('POST', '/webhooks', { body });
      form.reset();
      showTypeHint();
      await onCreated(w);
    } catch (err) {
      showError(errors, err);
      url.focus();
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

