// A contact's page (/app/contacts/:id): who it is, its numbers (each with
// "Text" to start or continue a conversation and its calls), and one
// timeline of its texts and calls, newest first: the conversations its
// numbers have (GET /search by the number, then each thread's newest page)
// and its calls (POST /calls/search by the numbers, when the role has
// call reports).
import { h, showError, spinner, emptyState, formatPhone, confirmDialog, timeEl, announce } from '../ui.js';
import { threadHref, lineName, whoLabel } from '../names.js';
import { personZone, isoDay, addDays, dayStart } from '../calls/zone.js';
import { store } from '../store.js';
import { editContact } from './form.js';

const TIMELINE = 30;     // entries shown
const PER_THREAD = 10;   // newest texts read from each conversation

// conversationsOf finds the conversations of number: search finds numbers
// that contain the digits; only the ones that are the number count.
async function conversationsOf(ctx, number, signal) {
  const found = await ctx.api('GET', '/search', { query: { q: number, types: 'conversations', limit: 20 }, signal });
  return (found.conversations || []).map((c) => c.conversation)
    .filter((c) => c.number === number && !(c.groupParticipants?.length > 1));
}

async function textsOf(ctx, numbers, signal) {
  const convs = (await Promise.all(numbers.map((n) => conversationsOf(ctx, n, signal)))).flat();
  const pages = await Promise.all(convs.map((c) => ctx.api('GET', `/sms/conversations/${encodeURIComponent(c.line)}/${encodeURIComponent(c.number)}`, { query: { limit: PER_THREAD }, signal })));
  return pages.flatMap((p, i) => p.messages.map((m) => ({ kind: 'text', at: m.sentAt, m, conv: convs[i] })));
}

async function callsOf(ctx, numbers, signal) {
  const zone = personZone();
  const today = isoDay(new Date(), zone);
  const body = { start: dayStart(addDays(today, -365), zone), end: dayStart(today, zone, 1), timeZone: zone, limit: TIMELINE, offset: 0, filters: { numbers } };
  const res = await ctx.api('POST', '/calls/search', { body, signal });
  return res.calls.map((c) => ({ kind: 'call', at: c.startTime, c }));
}

function textEntry(e) {
  const { m, conv } = e;
  const line = lineName(conv.line) || formatPhone(conv.line);
  const what = m.text || (m.media?.length ? 'Attachment' : '');
  return h('li', { class: `entry entry-text entry-${m.direction}` },
    timeEl(e.at, 'entry-time', { stamp: true }),
    h('a', { href: threadHref(conv.line, conv.number), class: 'entry-what' },
      h('span', { class: 'entry-kind', text: m.direction === 'in' ? `Text received on ${line}` : `Text sent from ${line}` }),
      h('span', { class: 'entry-body', text: what })));
}

function callEntry(e) {
  const { c } = e;
  const verb = c.direction === 'inbound'
    ? { answered: 'Call from them', missed: 'Missed call', voicemail: 'Voicemail' }[c.status] || 'Call from them'
    : 'Call to them';
  const mins = Math.round((c.durationSeconds || 0) / 60);
  return h('li', { class: 'entry entry-call' },
    timeEl(e.at, 'entry-time', { stamp: true }),
    h('a', { href: `/app/calls/${encodeURIComponent(c.id)}`, class: 'entry-what' },
      h('span', { class: 'entry-kind', text: verb }),
      h('span', { class: 'entry-body', text: c.status === 'answered' ? `${mins ? mins + ' min' : 'under a minute'}${c.recorded ? ' · recorded' : ''}` : '' })));
}

// textLink is a number's "Text" link: its conversation on the line it
// had one on, else a new one on the person's first line.
function textLink(ctx, number, convs) {
  const conv = convs.find((c) => c.number === number);
  const lines = store.get('lines') || [];
  const href = conv ? threadHref(conv.line, conv.number) : ctx.can.send && lines.length ? threadHref(lines[0].number, number) + '?new=1' : null;
  return href ? h('a', { class: 'btn btn-small', href }, 'Text', h('span', { class: 'visually-hidden', text: ` ${formatPhone(number)}` })) : null;
}

export async function renderOne(main, id, ctx) {
  const controller = new AbortController();
  const signal = controller.signal;
  const back = h('a', { class: 'back', href: '/app/contacts', text: '← Contacts' });
  main.replaceChildren(back, spinner('Loading the contact…'));
  let c;
  try {
    [c] = await Promise.all([ctx.api('GET', `/contacts/${encodeURIComponent(id)}`, { signal }), ctx.lines().catch(() => [])]);
  } catch (err) {
    if (signal.aborted) return null;
    main.replaceChildren(back, h('h1', { text: 'Contact' }));
    if (err.status === 404) main.append(emptyState('No such contact', 'It was deleted, or it belongs to another account.'));
    else showError(main, err);
    return null;
  }
  document.title = `${c.name} · Contacts · Switchboard`;
  const timeline = h('ol', { class: 'contact-timeline', 'aria-label': 'Texts and calls, newest first' });
  const numbers = h('ul', { class: 'contact-numbers plain' });
  const edit = async () => {
    const saved = await editContact(ctx, c);
    if (saved) { announce('Contact saved.'); paint(saved); }
  };
  const remove = async () => {
    if (!await confirmDialog(`Delete ${c.name}?`, 'The contact leaves the team’s address book. Conversations and calls stay; they show the number again.')) return;
    try {
      await ctx.api('DELETE', `/contacts/${encodeURIComponent(c.id)}`);
      announce(`${c.name} deleted.`);
      ctx.navigate('/app/contacts');
    } catch (err) { showError(main, err); }
  };

  function paint(contact) {
    c = contact;
    const facts = [
      c.company ? ['Company', c.company] : null,
      c.email ? ['Email', h('a', { href: 'mailto:' + c.email, text: c.email })] : null,
      c.tags.length ? ['Tags', c.tags.map((t) => h('span', { class: 'tag', text: t }))] : null,
      c.notes ? ['Notes', h('p', { class: 'notes', text: c.notes })] : null,
    ].filter(Boolean);
    // replaceChildren writes a null as the text "null": only nodes go in.
    main.replaceChildren(...[back,
      h('div', { class: 'page-head' },
        h('h1', { tabindex: '-1', text: whoLabel(c.numbers[0]?.number, null, c) }),
        h('div', { class: 'page-actions' },
          ctx.can.contactsWrite ? h('button', { type: 'button', class: 'btn', on: { click: edit } }, 'Edit') : null,
          ctx.can.contactsDelete ? h('button', { type: 'button', class: 'btn btn-danger-quiet', on: { click: remove } }, 'Delete…') : null)),
      numbers,
      facts.length ? h('dl', { class: 'facts' }, facts.map(([k, v]) => [h('dt', { text: k }), h('dd', null, v)])) : null,
      h('h2', { class: 'section-title', text: 'Texts and calls' }), timeline].filter(Boolean));
    paintNumbers(known);
  }
  let known = []; // the conversations the timeline found
  function paintNumbers(convs) {
    known = convs;
    numbers.replaceChildren(...c.numbers.map((n) => h('li', null,
      h('span', { class: 'contact-number', text: formatPhone(n.number) }),
      n.label ? h('span', { class: 'muted', text: ` · ${n.label}` }) : null, ' ',
      textLink(ctx, n.number, convs))));
  }
  paint(c);

  async function loadTimeline() {
    timeline.replaceChildren(h('li', null, spinner('Loading texts and calls…')));
    const nums = c.numbers.map((n) => n.number);
    const [texts, calls] = await Promise.all([
      ctx.can.inbox ? textsOf(ctx, nums, signal) : [],
      ctx.can.calls ? callsOf(ctx, nums, signal).catch(() => []) : [],
    ]);
    if (signal.aborted) return;
    paintNumbers([...new Map(texts.map((e) => [e.conv.line + e.conv.number, e.conv])).values()]);
    const all = [...texts, ...calls].sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0)).slice(0, TIMELINE);
    timeline.replaceChildren(...(all.length
      ? all.map((e) => (e.kind === 'text' ? textEntry(e) : callEntry(e)))
      : [h('li', { class: 'muted', text: 'No texts or calls with this contact yet.' })]));
  }
  loadTimeline().catch((err) => { if (!signal.aborted) { timeline.replaceChildren(); showError(timeline.parentElement, err); } });
  const off = ctx.stream.on('AccountContacts', (ev) => {
    const d = ev.data || {};
    if (d.contact?.id !== c.id) return;
    if (d.event === 'contact.deleted') { ctx.navigate('/app/contacts'); return; }
    paint(d.contact);
  });
  main.querySelector('h1')?.focus();
  return () => { controller.abort(); off(); };
}

