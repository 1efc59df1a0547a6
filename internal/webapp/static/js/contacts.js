// Contacts: the team address book. The list with its search, import and
// export (contacts/list.js), a contact's page with one timeline of its
// texts and calls (contacts/one.js), and the editor both use
// (contacts/form.js). Routes: /contacts and /contacts/:id.
import { h, emptyState } from './ui.js';
import { renderList } from './contacts/list.js';
import { renderOne } from './contacts/one.js';

export function render(root, params, ctx) {
  const main = h('div', { class: 'page page-wide contacts-page' });
  root.append(main);
  document.title = 'Contacts · Switchboard';
  if (!ctx.can.inbox) {
    main.append(h('h1', { text: 'Contacts' }),
      emptyState('Contacts are not available', 'Your role gives you no phone numbers, or this sign-in was not granted reading messages. Ask an administrator for access.'));
    return null;
  }
  return params.id ? renderOne(main, params.id, ctx) : renderList(main, params, ctx);
}
