// Search: the screen the header's search field opens (/app/search?q=…).
// GET /search finds contacts (name, company, number), conversations (any
// digits of their numbers) and messages (words and their beginnings), in
// groups, each paged by its own cursor. The words found are marked in each
// snippet from the answer's offsets (UTF-16, as JavaScript's strings), as
// text: nothing from the answer becomes markup.
import { h, emptyState, spinner, showError, formatPhone, timeEl } from './ui.js';
import { store } from './store.js';
import { replaceAddress } from './router.js';
import { whoLabel, threadHref, contactHref, lineName } from './names.js';

const LIMIT = 20;

// marked is text with the spans [start, end) in <mark>.
function marked(text, spans) {
  const out = [];
  let at = 0;
  for (const { start, end } of [...spans].sort((a, b) => a.start - b.start)) {
    if (start < at || end > text.length) continue;
    out.push(text.slice(at, start), h('mark', { text: text.slice(start, end) }));
    at = end;
  }
  out.push(text.slice(at));
  return out;
}

export function contactHit({ contact: c }) {
  return h('li', { class: 'hit hit-contact' },
    h('a', { href: contactHref(c.id), class: 'hit-title', text: c.name }),
    h('span', { class: 'hit-sub', text: [c.company, ...c.numbers.map((n) => formatPhone(n.number))].filter(Boolean).join(' · ') }));
}

export function conversationHit({ conversation: c, match }) {
  const line = lineName(c.line) || formatPhone(c.line);
  return h('li', { class: 'hit hit-conversation' },
    h('a', { href: threadHref(c.line, c.number, c.groupParticipants), class: 'hit-title', text: whoLabel(c.number, c.groupParticipants, c.contact) }),
    h('span', { class: 'hit-sub' }, h('span', { class: 'hit-number' }, marked(match.number, [match])), ` · on ${line}`),
    c.lastMessage ? h('span', { class: 'hit-text', text: c.lastMessage }) : null,
    timeEl(c.lastMessageAt, 'hit-time'));
}

export function messageHit(m) {
  const c = m.conversation;
  const line = lineName(c.line) || formatPhone(c.line);
  const who = whoLabel(c.number, c.groupParticipants, m.contact);
  // The thread opens at the message found (?at=).
  const href = threadHref(c.line, c.number, c.groupParticipants);
  return h('li', { class: 'hit hit-message' },
    h('a', { href: href + (href.includes('?') ? '&' : '?') + 'at=' + m.id, class: 'hit-title' },
      m.direction === 'in' ? `From ${who}` : `To ${who}`),
    h('span', { class: 'hit-sub', text: `on ${line}` }),
    h('p', { class: 'hit-text' }, marked(m.snippet.text, m.snippet.matches)),
    timeEl(m.sentAt, 'hit-time'));
}

export const GROUPS = [
  ['contacts', 'Contacts', contactHit],
  ['conversations', 'Conversations', conversationHit],
  ['messages', 'Messages', messageHit],
];

function filters(query) {
  const line = h('select', { id: 'search-line', name: 'lines' },
    h('option', { value: '', text: 'Every line' }),
    (store.get('lines') || []).map((l) => h('option', { value: l.number, text: l.name ? `${l.name} · ${formatPhone(l.number)}` : formatPhone(l.number) })));
  line.value = query.get('lines') || '';
  const direction = h('select', { id: 'search-direction', name: 'direction' },
    h('option', { value: '', text: 'Received and sent' }), h('option', { value: 'in', text: 'Received' }), h('option', { value: 'out', text: 'Sent' }));
  direction.value = query.get('direction') || '';
  const form = h('form', { class: 'search-filters', 'aria-label': 'Narrow the search' },
    h('label', { for: 'search-line', text: 'Line' }), line,
    h('label', { for: 'search-direction', text: 'Messages' }), direction,
    h('p', { class: 'hint', text: 'A filter narrows conversations and messages; contacts belong to the whole team, so they show without one.' }));
  return { form, line, direction };
}

export async function render(main, params, ctx) {
  const q = (params.query.get('q') || '').trim();
  document.title = q ? `${q} · Search · Switchboard` : 'Search · Switchboard';
  const field = document.getElementById('app-search');
  if (field && field.value.trim() !== q) field.value = q;
  const page = h('div', { class: 'page search-page' }, h('h1', { text: q ? `Search: ${q}` : 'Search' }));
  main.append(page);
  if (!q) {
    page.append(emptyState('What are you looking for?', 'Type a name, a company, a few digits of a number or words of a text in the search field above, then press Enter.'));
    return null;
  }
  if (!ctx.can.inbox) {
    page.append(emptyState('Search is not available', 'Your role gives you no phone numbers, or this sign-in was not granted reading messages.'));
    return null;
  }
  const controller = new AbortController();
  const signal = controller.signal;
  await ctx.lines().catch(() => []);
  const f = filters(params.query);
  const results = h('div', { class: 'search-results' }, spinner('Searching…'));
  page.append(f.form, results);

  const where = () => ({ q, lines: f.line.value || undefined, direction: f.direction.value || undefined });
  f.form.addEventListener('change', () => {
    const u = new URLSearchParams(Object.entries(where()).filter(([, v]) => v));
    replaceAddress('/app/search?' + u.toString());
    run().catch((err) => { if (!signal.aborted) showError(results, err); });
  });

  async function more(group, cursor, list, btn) {
    btn.disabled = true;
    try {
      const a = await ctx.api('GET', '/search', { query: { ...where(), cursor, limit: LIMIT }, signal, envelope: true });
      const [, , draw] = GROUPS.find(([g]) => g === group);
      list.append(...(a.data[group] || []).map(draw));
      if (a.next?.[group]) { btn.disabled = false; btn.onclick = () => more(group, a.next[group], list, btn); } else btn.remove();
    } catch (err) { btn.disabled = false; showError(results, err); }
  }

  async function run() {
    results.replaceChildren(spinner('Searching…'));
    const a = await ctx.api('GET', '/search', { query: { ...where(), limit: LIMIT }, signal, envelope: true });
    const sections = [];
    for (const [group, title, draw] of GROUPS) {
      const hits = a.data[group];
      if (!hits || !hits.length) continue;
      const list = h('ol', { class: 'hits', 'aria-labelledby': `search-${group}` }, hits.map(draw));
      const btn = a.next?.[group] ? h('button', { type: 'button', class: 'btn more' }, `More ${title.toLowerCase()}`) : null;
      if (btn) btn.onclick = () => more(group, a.next[group], list, btn);
      sections.push(h('section', { class: 'search-group' }, h('h2', { id: `search-${group}`, text: title }), list, btn));
    }
    results.replaceChildren(...(sections.length ? sections
      : [emptyState(`Nothing found for “${q}”`, 'Search finds the beginnings of words (“resch” finds “rescheduled”), names and companies of contacts, and any 3 or more digits of a number.')]));
  }
  await run().catch((err) => {
    if (signal.aborted) return;
    results.replaceChildren();
    showError(results, err);
  });
  return () => controller.abort();
}
