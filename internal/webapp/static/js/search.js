// Search: the screen the header's search field opens (/app/search?q=…).
// Results come with GET /search, which this server does not offer yet (the
// lead wires it: contacts, conversations and messages, grouped).
import { h, emptyState } from './ui.js';

export function render(main, params) {
  const q = params.query.get('q') || '';
  document.title = 'Search · Switchboard';
  const field = document.getElementById('app-search');
  if (field && !field.value) field.value = q;
  main.append(h('div', { class: 'page' }, h('h1', { text: q ? `Search: ${q}` : 'Search' }),
    emptyState('Search is not available on this server yet', 'Open a conversation from the inbox, or find calls in the call history by name or number.')));
}
