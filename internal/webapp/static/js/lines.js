// Placeholder until helper B's screen lands: render(main, params, ctx).
import { h, emptyState } from './ui.js';

export async function render(main, params, ctx) {
  document.title = 'Line settings · Switchboard';
  main.append(h('div', { class: 'page' }, h('h1', { text: 'Line settings' }), emptyState('Not here yet', 'This screen is coming soon.')));
}
