// The line screen (/app/lines/:line): what a person manages per line through
// the public API: its scheduled messages (lines/scheduled.js) and its
// blocked senders (lines/blocked.js). /app/lines lists the person's lines.
import { h, formatPhone, showError, emptyState, spinner } from './ui.js';
import { scheduledSection } from './lines/scheduled.js';
import { blockedSection } from './lines/blocked.js';

// renderIndex (/app/lines) lists the person's lines, each a link to its screen.
async function renderIndex(main, ctx) {
  document.title = 'Lines · Switchboard';
  const body = h('div', { class: 'ln-list' }, spinner('Loading your lines'));
  const title = h('h1', { tabindex: '-1' }, 'Lines');
  main.replaceChildren(h('div', { class: 'ln-page' }, title,
    h('p', { class: 'ln-help' }, 'Each line\'s scheduled messages and blocked senders.'), body));
  title.focus();
  try {
    const lines = await ctx.api('GET', '/sms/lines');
    if (!lines.length) {
      body.replaceChildren(emptyState('No lines', 'Your role gives you no line to text from.'));
      return;
    }
    body.replaceChildren(h('ul', { class: 'ln-rows' }, ...lines.map((l) => h('li', { class: 'ln-row' },
      h('a', { href: `/app/lines/${encodeURIComponent(l.number)}` }, l.name ? `${l.name} · ${formatPhone(l.number)}` : formatPhone(l.number))))));
  } catch (err) {
    body.replaceChildren();
    showError(body, err);
  }
}

// nameLine shows the line's name, if it has one (GET /sms/lines); it also
// tells an unknown line apart early.
function nameLine(ctx, line, phone, sub) {
  ctx.api('GET', '/sms/lines').then((lines) => {
    const l = (lines || []).find((x) => x.number === line);
    if (!l) {
      sub.textContent = 'This line is not one of yours.';
      return;
    }
    if (l.name) phone.before(`${l.name} · `);
    document.title = `${l.name || formatPhone(line)}: line settings · Switchboard`;
  }).catch(() => {});
}

export async function render(main, params, ctx) {
  const line = params.line;
  if (!line) return renderIndex(main, ctx);
  document.title = `${formatPhone(line)}: line settings · Switchboard`;
  const phone = h('span', { class: 'ln-nowrap' }, formatPhone(line));
  const title = h('h1', { id: 'line-title', tabindex: '-1' }, h('span', { class: 'ln-eyebrow' }, 'Line settings'), phone);
  const sub = h('p', { class: 'ln-sub' });
  // Blocking and cancelling need sms:write; without it the lists are read-only.
  const canWrite = !ctx.can || ctx.can.write !== false;
  const scheduled = scheduledSection(ctx, line, { canWrite, focusAfter: title });
  const blocked = blockedSection(ctx, line, { canWrite });
  main.replaceChildren(h('div', { class: 'ln-page' },
    h('p', { class: 'ln-back' }, h('a', { href: `/app/inbox/${encodeURIComponent(line)}` }, '← Back to the inbox')),
    title, sub, scheduled.el, blocked.el));
  title.focus();
  nameLine(ctx, line, phone, sub);
  const both = () => Promise.all([scheduled.load(), blocked.load()]);
  await both();

  // Another agent's changes are not events on the stream; a reset (or a
  // return to the tab) reloads both lists.
  const off = ctx.stream?.on ? ctx.stream.on('reset', both) : null;
  const onVisible = () => { if (document.visibilityState === 'visible') both(); };
  document.addEventListener('visibilitychange', onVisible);
  return () => {
    if (typeof off === 'function') off();
    document.removeEventListener('visibilitychange', onVisible);
  };
}
