// Contacts: the team address book's screen. Its place in the navigation
// and the router is ready; its list comes with GET /contacts, which this
// server does not offer yet (the lead wires it: render a list here).
import { h, emptyState } from './ui.js';

export function render(main) {
  document.title = 'Contacts · Switchboard';
  main.append(h('div', { class: 'page' }, h('h1', { text: 'Contacts' }),
    emptyState('No address book on this server yet', 'Conversations and calls show numbers until the team’s contacts are available here.')));
}
