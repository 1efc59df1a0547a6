// Call history: search (POST /calls/search) and one call's detail
// (GET /calls/{callid}) with its recordings played in the page and their
// transcripts beside them. Routes: /calls and /calls/:callid.
//
// The search form's state lives in the address bar's query string
// (history.replaceState), so "back" from a call's detail returns to the same
// page of the same search, and a search can be bookmarked.
import { h, formatPhone, showError, announce, emptyState, spinner } from './ui.js';

// put replaces el's children with kids, flattened, leaving out null and
// false (replaceChildren alone would show them as text).
function put(el, ...kids) {
  el.replaceChildren(...kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false));
  return el;
}

const PAGE = 50;
const DAYS = [['mon', 'Mon'], ['tue', 'Tue'], ['wed', 'Wed'], ['thu', 'Thu'], ['fri', 'Fri'], ['sat', 'Sat'], ['sun', 'Sun']];
const STATUSES = [['answered', 'Answered'], ['missed', 'Missed'], ['voicemail', 'Voicemail']];
const SORTS = [
  ['', 'Newest first'],
  ['startTime:asc', 'Oldest first'],
  ['durationSeconds:desc', 'Longest first'],
  ['talkTimeSeconds:desc', 'Most talk time first'],
];
// The browser's zone decides what "a day" means in the date window and the
// day-of-week and time-of-day filters, as the person reading the dates expects.
const ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const timeOnly = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });

export async function render(root, params, ctx) {
  // The screen lives in one .page element, like the app's other screens.
  const main = h('div', { class: 'page page-wide' });
  put(root, main);
  document.title = 'Calls \u00b7 Switchboard';
  if (!ctx.can.calls) {
    put(main, h('h1', { text: 'Calls' }),
      h('p', { class: 'notice', role: 'alert', text: 'Your role does not include call reports, so call history is not available to you.' }));
    return;
  }
  if (params.callid) return renderDetail(main, params.callid, ctx);
  return renderSearch(main, ctx);
}

// ---- search ----

// isoDay gives a Date's local calendar day as YYYY-MM-DD (what <input type=date> holds).
function isoDay(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
}

// localMidnight is the unix second of a YYYY-MM-DD day's start in the browser's zone.
function localMidnight(day, plusDays = 0) {
  const [y, m, d] = day.split('-').map(Number);
  return Math.floor(new Date(y, m - 1, d + plusDays).getTime() / 1000);
}

function defaultQuery() {
  const today = new Date();
  const from = new Date(today.getFullYear(), today.getMonth(), today.getDate() - 29);
  return new URLSearchParams({ from: isoDay(from), to: isoDay(today) });
}

// requestBody turns the query string into POST /calls/search's body, or
// throws a message for the person when the window is not one the API takes.
function requestBody(q) {
  const from = q.get('from'), to = q.get('to');
  if (!from || !to) throw new Error('Choose both a first and a last day.');
  const start = localMidnight(from), end = localMidnight(to, 1);
  if (end <= start) throw new Error('The last day must not be before the first day.');
  if (end - start > 366 * 86400) throw new Error('The window can be at most 366 days long.');
  const body = { start, end, timeZone: ZONE, limit: PAGE, offset: Math.max(0, Number(q.get('offset')) || 0) };
  if (q.get('direction')) body.direction = q.get('direction');
  const filters = {};
  const list = (name) => q.getAll(name).filter(Boolean);
  if (list('status').length) filters.statuses = list('status');
  if (list('day').length) filters.daysOfWeek = list('day');
  const numbers = (q.get('numbers') || '').split(/[\s,;]+/).filter(Boolean);
  if (numbers.length) filters.numbers = numbers;
  if (q.get('search')) filters.search = q.get('search');
  if (q.get('after') || q.get('before')) {
    filters.timeOfDay = {};
    if (q.get('after')) filters.timeOfDay.start = q.get('after');
    if (q.get('before')) filters.timeOfDay.end = q.get('before');
  }
  if (q.get('minDuration')) filters.duration = { start: q.get('minDuration') };
  if (Object.keys(filters).length) body.filters = filters;
  const sort = q.get('sort');
  if (sort) {
    const [field, direction] = sort.split(':');
    body.sort = { field, direction };
  }
  return body;
}

function field(label, input, hint) {
  const id = input.id;
  return h('div', { class: 'field' }, h('label', { for: id, text: label }), input,
    hint ? h('small', { id: id + '-hint', class: 'hint', text: hint }) : null);
}

function checkboxGroup(legend, name, options, checked) {
  return h('fieldset', { class: 'checks' }, h('legend', { text: legend }),
    options.map(([value, label]) => {
      const input = h('input', { type: 'checkbox', name, value, id: `calls-${name}-${value}` });
      input.checked = checked.includes(value);
      return h('label', { class: 'check', for: input.id }, input, ' ', label);
    }));
}

function searchForm(q, onSearch) {
  const input = (id, attrs) => h('input', { id, ...attrs });
  const from = input('calls-from', { type: 'date', name: 'from', required: '' });
  const to = input('calls-to', { type: 'date', name: 'to', required: '' });
  from.value = q.get('from') || '';
  to.value = q.get('to') || '';
  const direction = h('select', { id: 'calls-direction', name: 'direction' },
    h('option', { value: '', text: 'Both' }), h('option', { value: 'inbound', text: 'Inbound' }), h('option', { value: 'outbound', text: 'Outbound' }));
  direction.value = q.get('direction') || '';
  const search = input('calls-search', { type: 'search', name: 'search', autocomplete: 'off', maxlength: '256', 'aria-describedby': 'calls-search-hint' });
  search.value = q.get('search') || '';
  const numbers = input('calls-numbers', { type: 'text', name: 'numbers', inputmode: 'tel', autocomplete: 'off', 'aria-describedby': 'calls-numbers-hint' });
  numbers.value = q.get('numbers') || '';
  const after = input('calls-after', { type: 'time', name: 'after' });
  after.value = q.get('after') || '';
  const before = input('calls-before', { type: 'time', name: 'before' });
  before.value = q.get('before') || '';
  const minDuration = input('calls-min-duration', { type: 'number', name: 'minDuration', min: '0', step: '1', inputmode: 'numeric' });
  minDuration.value = q.get('minDuration') || '';
  const sort = h('select', { id: 'calls-sort', name: 'sort' }, SORTS.map(([v, l]) => h('option', { value: v, text: l })));
  sort.value = q.get('sort') || '';

  const more = h('details', { class: 'more-filters' },
    h('summary', { text: 'More filters' }),
    h('div', { class: 'filter-grid' },
      field('Account numbers', numbers, 'Your numbers the calls went through, separated by commas.'),
      checkboxGroup('Days of the week', 'day', DAYS, q.getAll('day')),
      field('Started at or after', after),
      field('Started before', before, `Times of day in ${ZONE}.`),
      field('At least (seconds long)', minDuration),
      field('Order', sort)));
  // Open "More filters" when one of them is in use, so nothing applied is hidden.
  more.open = ['numbers', 'day', 'after', 'before', 'minDuration', 'sort'].some((k) => q.get(k));

  const form = h('form', { class: 'calls-search', role: 'search', 'aria-label': 'Search call history' },
    h('div', { class: 'filter-grid' },
      field('First day', from),
      field('Last day', to),
      field('Direction', direction),
      field('Name or number', search, 'Part of a caller\u2019s or called party\u2019s name or number.'),
      checkboxGroup('Status', 'status', STATUSES, q.getAll('status'))),
    more,
    h('div', { class: 'actions' },
      h('button', { type: 'submit', class: 'btn btn-primary', text: 'Search' }),
      h('button', { type: 'reset', class: 'btn', text: 'Clear filters' })));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const next = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (v !== '') next.append(k, String(v).trim());
    onSearch(next);
  });
  form.addEventListener('reset', (e) => {
    e.preventDefault();
    onSearch(defaultQuery());
  });
  return form;
}

function duration(seconds) {
  const s = Math.max(0, Number(seconds) || 0);
  const hh = Math.floor(s / 3600), mm = Math.floor((s % 3600) / 60), ss = s % 60;
  const p = (n) => String(n).padStart(2, '0');
  return hh ? `${hh}:${p(mm)}:${p(ss)}` : `${mm}:${p(ss)}`;
}

function spokenDuration(seconds) {
  const s = Math.max(0, Number(seconds) || 0);
  const m = Math.floor(s / 60), r = s % 60;
  return m ? `${m} min ${r} s` : `${r} s`;
}

function party(name, number) {
  const num = number ? formatPhone(number) : '';
  // One element per cell, so the phone layout's label-and-value grid holds.
  if (name && num && name !== number) return h('span', { class: 'party' }, h('span', { class: 'party-name', text: name }), ' ', h('span', { class: 'party-number', text: num }));
  return h('span', { class: 'party' }, h('span', { class: 'party-number', text: name || num || 'Unknown' }));
}

function statusBadge(call) {
  const label = { answered: 'Answered', missed: 'Missed', voicemail: 'Voicemail', unknown: 'Unknown' }[call.status] || call.status;
  return h('span', { class: `badge status-${call.status}` }, label, call.abandoned ? ' (abandoned)' : null);
}

function directionLabel(call) {
  return h('span', { class: `direction direction-${call.direction}` },
    h('span', { 'aria-hidden': 'true', text: call.direction === 'inbound' ? '\u2199 ' : '\u2197 ' }),
    call.direction === 'inbound' ? 'Inbound' : 'Outbound');
}

// recordedIcon is "Yes" with a small drawn tape-reel icon beside it (the
// icon is decorative: the word says it).
function recordedIcon() {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', '18');
  svg.setAttribute('height', '18');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  svg.setAttribute('class', 'icon');
  for (const [cx, cy, r] of [[7, 12, 4], [17, 12, 4]]) {
    const c = document.createElementNS(ns, 'circle');
    c.setAttribute('cx', cx); c.setAttribute('cy', cy); c.setAttribute('r', r);
    svg.append(c);
  }
  const line = document.createElementNS(ns, 'path');
  line.setAttribute('d', 'M7 16h10');
  svg.append(line);
  return h('span', { class: 'recorded' }, svg, h('span', { text: 'Yes' }));
}

function resultsTable(calls, queryString) {
  const head = ['Time', 'Direction', 'From', 'To', 'Status', 'Duration', 'Recorded'];
  return h('table', { class: 'calls-table' },
    h('caption', { class: 'visually-hidden', text: 'Calls, newest first unless ordered otherwise' }),
    h('thead', null, h('tr', null, head.map((c) => h('th', { scope: 'col', text: c })))),
    h('tbody', null, calls.map((c) => {
      const href = `/app/calls/${encodeURIComponent(c.id)}` + (queryString ? `?back=${encodeURIComponent(queryString)}` : '');
      return h('tr', null,
        h('th', { scope: 'row', 'data-label': 'Time' }, h('a', { href, text: dateTime.format(new Date(c.startTime)) })),
        h('td', { 'data-label': 'Direction' }, directionLabel(c)),
        h('td', { 'data-label': 'From' }, party(c.callerName, c.callerNumber)),
        h('td', { 'data-label': 'To' }, party(c.calledName, c.calledNumber || c.dialledNumber)),
        h('td', { 'data-label': 'Status' }, statusBadge(c)),
        h('td', { 'data-label': 'Duration' }, h('span', { 'aria-label': spokenDuration(c.durationSeconds), text: duration(c.durationSeconds) })),
        h('td', { 'data-label': 'Recorded', class: 'cell-recorded' }, c.recorded ? recordedIcon() : h('span', { class: 'muted', text: 'No' })));
    })));
}

async function renderSearch(main, ctx) {
  let q = new URLSearchParams(location.search);
  if (!q.get('from') || !q.get('to')) {
    const d = defaultQuery();
    for (const [k, v] of q) if (k !== 'from' && k !== 'to') d.append(k, v);
    q = d;
  }
  const results = h('section', { class: 'calls-results', 'aria-labelledby': 'calls-results-heading', 'aria-busy': 'false' });
  let controller = null;

  const run = async (next, { focus = false } = {}) => {
    q = next;
    history.replaceState(history.state, '', '/app/calls?' + q.toString());
    controller?.abort();
    controller = new AbortController();
    const signal = controller.signal;
    let body;
    try {
      body = requestBody(q);
    } catch (err) {
      put(results, h('h2', { id: 'calls-results-heading', text: 'Results' }),
        h('p', { class: 'error', role: 'alert', text: err.message }));
      return;
    }
    results.setAttribute('aria-busy', 'true');
    put(results, h('h2', { id: 'calls-results-heading', text: 'Results' }), spinner('Searching calls\u2026'));
    try {
      const data = await ctx.api('POST', '/calls/search', { body, signal });
      if (signal.aborted) return;
      showResults(data, focus);
    } catch (err) {
      if (signal.aborted || err.name === 'AbortError') return;
      const box = h('div');
      put(results, h('h2', { id: 'calls-results-heading', text: 'Results' }), box);
      showError(box, err);
    } finally {
      if (!signal.aborted) results.setAttribute('aria-busy', 'false');
    }
  };

  const showResults = (data, focus) => {
    const { total, offset, calls } = data;
    const first = total ? offset + 1 : 0, last = offset + calls.length;
    const summary = total ? `Calls ${first}\u2013${last} of ${total}` : 'No calls';
    const heading = h('h2', { id: 'calls-results-heading', tabindex: '-1', text: summary });
    const pager = () => {
      const go = (off) => {
        const n = new URLSearchParams(q);
        if (off) n.set('offset', String(off)); else n.delete('offset');
        run(n, { focus: true });
      };
      const prev = h('button', { type: 'button', class: 'btn', text: '\u2190 Newer', on: { click: () => go(Math.max(0, offset - data.limit)) } });
      const next = h('button', { type: 'button', class: 'btn', text: 'Older \u2192', on: { click: () => go(offset + data.limit) } });
      prev.disabled = offset <= 0;
      next.disabled = last >= total;
      return h('nav', { class: 'pager', 'aria-label': 'Result pages' }, prev, h('span', { class: 'muted', text: `Page ${Math.floor(offset / data.limit) + 1} of ${Math.max(1, Math.ceil(total / data.limit))}` }), next);
    };
    if (!calls.length) {
      put(results, heading, emptyState(offset ? 'No more calls' : 'No calls match',
        offset ? 'This page is past the last result.' : 'No call in this window matches these filters. Widen the dates or clear a filter.'));
    } else {
      const qs = new URLSearchParams(q).toString();
      put(results, heading, resultsTable(calls, qs), total > data.limit ? pager() : null);
    }
    announce(summary);
    if (focus) heading.focus();
  };

  put(main,
    h('h1', { text: 'Call history' }),
    searchForm(q, (next) => run(next, { focus: true })),
    results);
  run(q);
  return () => controller?.abort();
}

// ---- detail ----

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
      h('td', { 'data-label': 'Started', text: timeOnly.format(new Date(l.startTime)) }),
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
            `${dateTime.format(new Date(rec.startTime))}, talk time ${duration(rec.talkTimeSeconds)}`));
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

async function renderDetail(main, callid, ctx) {
  const controller = new AbortController();
  const signal = controller.signal;
  const back = new URLSearchParams(location.search).get('back');
  const backHref = '/app/calls' + (back ? '?' + back : '');
  const backLink = h('a', { class: 'back', href: backHref, text: '\u2190 Call history' });
  put(main, backLink, h('h1', { text: 'Call' }), spinner('Loading the call\u2026'));
  let call;
  try {
    call = await ctx.api('GET', `/calls/${encodeURIComponent(callid)}`, { signal });
  } catch (err) {
    if (signal.aborted) return;
    put(main, backLink, h('h1', { text: 'Call' }));
    showError(main, err);
    return () => controller.abort();
  }
  if (signal.aborted) return;
  const who = call.direction === 'inbound' ? call.callerName || formatPhone(call.callerNumber) : call.calledName || formatPhone(call.calledNumber || call.dialledNumber);
  const title = `${call.direction === 'inbound' ? 'Call from' : 'Call to'} ${who || 'an unknown number'}`;
  document.title = `${title} \u00b7 Switchboard`;
  const heading = h('h1', { tabindex: '-1', text: title });
  const facts = detailList([
    ['Started', dateTime.format(new Date(call.startTime))],
    call.endTime ? ['Ended', dateTime.format(new Date(call.endTime))] : null,
    ['Direction', directionLabel(call)],
    ['Status', statusBadge(call)],
    ['From', party(call.callerName, call.callerNumber)],
    ['To', party(call.calledName, call.calledNumber)],
    call.dialledNumber ? ['Dialled', formatPhone(call.dialledNumber)] : null,
    ['Duration', `${duration(call.durationSeconds)} (with ringing)`],
    ['Talk time', duration(call.talkTimeSeconds)],
    call.transferred ? ['Transfers', String(call.transferred)] : null,
    call.repeated ? ['Earlier calls from this caller (24 h)', String(call.repeated)] : null,
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
