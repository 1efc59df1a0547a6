// Placeholder until helper C's screen lands: render(main, params, ctx).
import { h, emptyState } from './ui.js';

export async function render(main, params, ctx) {
  document.title = 'Calls · Switchboard';
  main.append(h('div', { class: 'page' }, h('h1', { text: 'Calls' }), emptyState('Not here yet', 'This screen is coming soon.')));
}
