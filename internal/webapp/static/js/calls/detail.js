// One call (/app/calls/:callid): its facts, its legs, and its recordings
// played in the page with their transcripts beside them; times in the
// person's zone, a link to the number's texts and to the caller's earlier
// calls.
import { h, formatPhone, showError, spinner } from '../ui.js';
import { personZone, formats, isoDay, addDays } from './zone.js';
import { put, duration, sides, statusBadge, directionLabel, recordedIcon, textsLink } from './parts.js';

let fmt = formats(personZone());

function detailList(rows) {
  return h('dl', { class: 'facts' }, rows.filter(Boolean).map(([k, v]) => [h('dt', { text: k }), h('dd', null, v)]));
}

function legsTable(legs) {
  return h('table', { class: 'legs-table' },
    h('caption', { class: 'visually-hidden', text: 'Legs, in the order the phone system reported them' }),
    h('thead', null, h('tr', null, ['Leg', 'From', 'To', 'Started', 'Duration', 'Talk time', 'Transferred from', 'Recorded']
      .map((c) => h('th', { scope: 'col', text: c })))),
    h('tbody', null, legs.map((l, i) => h('tr', null,
      h('th', { scope: 'row', 'data-label': 'Leg', text: String(i + 1) }),
      h('td', { 'data-label': 'From', text: l.from ? formatPhone(l.from) : '\u2014' }),
      h('td', { 'data-label': 'To', text: l.to ? formatPhone(l.to) : '\u2014' }),
      h('td', { 'data-label': 'Started', text: fmt.timeOnly.format(new Date(l.startTime)) }),
      h('td', { 'data-label': 'Duration', text: duration(l.durationSeconds) }),
      h('td', { 'data-label': 'Talk time', text: duration(l.talkTimeSeconds) }),
      h('td', { 'data-label': 'Transferred from', text: l.bridgedFromCallId ? legName(legs, l.bridgedFromCallId) : '\u2014' }),
      h('td', { 'data-label': 'Recorded', class: 'cell-recorded' }, l.recorded ? recordedIcon() : h('span', { class: 'muted', text: 'No' }))))));
}

// legName names the leg whose callId is id ("Leg 2"), or the id itself.
function legName(legs, id) {
  const i = legs.findIndex((l) => l.callId === id);
  return i >= 0 ? `Leg ${i + 1}` : id;
}

function msClock(ms) {
  return duration(Math.floor(ms / 1000));
}

// transcriptView shows one transcript; each segment's time seeks the leg's
// player there (when there is one), so a reader can hear what they read.
function transcriptView(t, audio) {
  return h('div', { class: 'transcript' },
    h('h4', { text: `Transcript (${t.language})` }),
    t.segments.length
      ? h('ol', { class: 'segments' }, t.segments.map((s) => h('li', { class: 'segment' },
        audio
          ? h('button', { type: 'button', class: 'seek', 'aria-label': `Play from ${msClock(s.startMs)}`, text: msClock(s.startMs),
            on: { click: () => { audio.currentTime = s.startMs / 1000; audio.play().catch(() => {}); } } })
          : h('span', { class: 'seek', text: msClock(s.startMs) }),
        h('span', { class: 'speaker', text: s.speaker || 'Speaker' }),
        h('span', { class: 'said', text: s.text }))))
      : h('p', { class: 'muted', text: 'This transcript is empty.' }));
}

async function recordingsSection(call, ctx, signal) {
  const section = h('section', { class: 'recordings', 'aria-labelledby': 'recordings-heading' },
    h('h2', { id: 'recordings-heading', text: 'Recordings and transcripts' }), spinner('Loading recordings\u2026'));
  const fill = async () => {
    // Both are asked at once; either may be refused on its own (403), which
    // is shown as what it means instead of a player that cannot play.
    const [recs, trans] = await Promise.allSettled([
      ctx.api('GET', `/calls/${encodeURIComponent(call.id)}/recordings`, { signal }),
      ctx.api('GET', `/calls/${encodeURIComponent(call.id)}/transcripts`, { signal }),
    ]);
    if (signal.aborted) return;
    const body = [h('h2', { id: 'recordings-heading', text: 'Recordings and transcripts' })];
    const errors = h('div', { class: 'section-errors' });
    if (recs.status === 'rejected') showError(errors, recs.reason);
    if (trans.status === 'rejected' && !(recs.status === 'rejected' && sameRefusal(recs.reason, trans.reason))) showError(errors, trans.reason);
    if (errors.childNodes.length) body.push(errors);
    const recorded = recs.status === 'fulfilled' ? recs.value : [];
    const transcripts = trans.status === 'fulfilled' ? trans.value : [];
    // One block per leg that has audio or a transcript, in leg order.
    const legIds = [];
    for (const l of call.legs) if (recorded.some((r) => r.uniqueId === l.uniqueId) || transcripts.some((t) => t.uniqueId === l.uniqueId)) legIds.push(l.uniqueId);
    for (const x of [...recorded, ...transcripts]) if (!legIds.includes(x.uniqueId)) legIds.push(x.uniqueId);
    if (!legIds.length && recs.status === 'fulfilled') {
      body.push(h('p', { class: 'muted', text: call.recorded
        ? 'No recording is available yet: recordings appear shortly after the call ends. Reload in a minute.'
        : 'This call was not recorded.' }));
    }
    for (const id of legIds) {
      const rec = recorded.find((r) => r.uniqueId === id);
      const legIndex = call.legs.findIndex((l) => l.uniqueId === id);
      const title = legIndex >= 0 ? `Leg ${legIndex + 1}` : `Leg ${id}`;
      let audio = null, player;
      if (rec) {
        // The signed link is on this origin (CSP media-src 'self'); it needs
        // no Authorization header, so the element plays it directly.
        audio = h('audio', { controls: '', preload: 'metadata', src: rec.url, 'aria-label': `${title} recording` });
        player = h('figure', { class: 'player' }, audio,
          h('figcaption', null, `${title}: ${rec.from ? formatPhone(rec.from) : '?'} \u2192 ${rec.to ? formatPhone(rec.to) : '?'}, `,
            `${fmt.dateTime.format(new Date(rec.startTime))}, talk time ${duration(rec.talkTimeSeconds)}`));
      } else if (recs.status === 'fulfilled') {
        player = h('p', { class: 'muted', text: `${title}: no audio.` });
      }
      const ts = transcripts.filter((t) => t.uniqueId === id);
      body.push(h('article', { class: 'recorded-leg', 'aria-label': title },
        h('h3', { text: title }),
        h('div', { class: 'leg-media' },
          h('div', { class: 'leg-audio' }, player),
          h('div', { class: 'leg-transcripts' }, ts.length ? ts.map((t) => transcriptView(t, audio))
            : trans.status === 'fulfilled' ? h('p', { class: 'muted', text: 'No transcript for this leg.' }) : null))));
    }
    put(section, ...body);
  };
  fill().catch((err) => { if (!signal.aborted) { put(section, h('h2', { id: 'recordings-heading', text: 'Recordings and transcripts' })); showError(section, err); } });
  return section;
}

function sameRefusal(a, b) {
  return a && b && a.status === b.status && a.type === b.type;
}

// earlierCalls links to the search for the caller's calls of the day
// before this one (what "earlier calls" counts).
function earlierCalls(call, zone) {
  const day = isoDay(new Date(call.startTime), zone);
  const q = new URLSearchParams({ from: addDays(day, -1), to: day, search: call.callerNumber, direction: 'inbound' });
  return h('a', { href: '/app/calls?' + q.toString() }, `${call.repeated} in the 24 hours before`);
}

export async function renderDetail(main, callid, ctx) {
  const zone = personZone();
  fmt = formats(zone);
  const controller = new AbortController();
  const signal = controller.signal;
  const back = new URLSearchParams(location.search).get('back');
  const backHref = '/app/calls' + (back ? '?' + back : '');
  const backLink = h('a', { class: 'back', href: backHref, text: '\u2190 Call history' });
  put(main, backLink, h('h1', { text: 'Call' }), spinner('Loading the call\u2026'));
  let call;
  try {
    [call] = await Promise.all([ctx.api('GET', `/calls/${encodeURIComponent(callid)}`, { signal }),
      ctx.users().catch(() => []), ctx.can.inbox ? ctx.lines().catch(() => []) : null]);
  } catch (err) {
    if (signal.aborted) return;
    put(main, backLink, h('h1', { text: 'Call' }));
    showError(main, err);
    return () => controller.abort();
  }
  if (signal.aborted) return;
  const who = call.contact?.name || (call.direction === 'inbound' ? call.callerName || formatPhone(call.callerNumber) : call.calledName || formatPhone(call.calledNumber || call.dialledNumber));
  const title = `${call.direction === 'inbound' ? 'Call from' : 'Call to'} ${who || 'an unknown number'}`;
  document.title = `${title} \u00b7 Switchboard`;
  const heading = h('h1', { tabindex: '-1', text: title });
  const facts = detailList([
    ['Started', `${fmt.dateTime.format(new Date(call.startTime))} (${zone})`],
    call.endTime ? ['Ended', fmt.dateTime.format(new Date(call.endTime))] : null,
    ['Direction', directionLabel(call)],
    ['Status', statusBadge(call)],
    ...sides(call, call.calledNumber).map((el, i) => [i ? 'To' : 'From', el]),
    call.dialledNumber ? ['Dialled', formatPhone(call.dialledNumber)] : null,
    ['Duration', `${duration(call.durationSeconds)} (with ringing)`],
    ['Talk time', duration(call.talkTimeSeconds)],
    call.transferred ? ['Transfers', String(call.transferred)] : null,
    call.repeated ? ['Earlier calls from this caller', earlierCalls(call, zone)] : null,
    textsLink(call) ? ['Texts', textsLink(call, 'Open the conversation')] : null,
    call.calledBack ? ['Called back', h('a', { href: `/app/calls/${encodeURIComponent(call.calledBack)}`, text: 'The return call' })] : null,
    ['Call id', h('code', { text: call.id })],
  ]);
  const legs = h('section', { class: 'legs', 'aria-labelledby': 'legs-heading' },
    h('h2', { id: 'legs-heading', text: call.legs.length === 1 ? 'Leg' : `Legs (${call.legs.length})` }),
    call.legs.length ? legsTable(call.legs) : h('p', { class: 'muted', text: 'The phone system reported no legs for this call.' }));
  let media = null;
  if (ctx.can.recordings) {
    media = await recordingsSection(call, ctx, signal);
  } else if (call.recorded) {
    // Not offered: only said, so the person knows why there is no player.
    media = h('p', { class: 'notice', text: 'This call was recorded. Your role does not include listening to recordings or reading transcripts.' });
  }
  put(main, backLink, heading, h('div', { class: 'call-detail' }, h('section', { class: 'summary', 'aria-label': 'Summary' }, facts), legs), media);
  heading.focus();
  return () => controller.abort();
}

