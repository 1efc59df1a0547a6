// The call search's form and what it asks: POST /calls/search's body from
// the query string (where the form's state lives), days counted in the
// person's zone (zone.js).
import { h } from '../ui.js';
import { dayStart, isoDay, addDays } from './zone.js';

export const PAGE = 50;
const DAYS = [['mon', 'Mon'], ['tue', 'Tue'], ['wed', 'Wed'], ['thu', 'Thu'], ['fri', 'Fri'], ['sat', 'Sat'], ['sun', 'Sun']];
const STATUSES = [['answered', 'Answered'], ['missed', 'Missed'], ['voicemail', 'Voicemail']];
const SORTS = [
  ['', 'Newest first'],
  ['startTime:asc', 'Oldest first'],
  ['durationSeconds:desc', 'Longest first'],
  ['talkTimeSeconds:desc', 'Most talk time first'],
];

// defaultQuery is the last 30 days, in the zone.
export function defaultQuery(zone) {
  const today = isoDay(new Date(), zone);
  return new URLSearchParams({ from: addDays(today, -29), to: today });
}

// requestBody turns the query string into POST /calls/search's body, or
// throws a message for the person when the window is not one the API takes.
export function requestBody(q, zone) {
  const from = q.get('from'), to = q.get('to');
  if (!from || !to) throw new Error('Choose both a first and a last day.');
  const start = dayStart(from, zone), end = dayStart(to, zone, 1);
  if (end <= start) throw new Error('The last day must not be before the first day.');
  if (end - start > 366 * 86400) throw new Error('The window can be at most 366 days long.');
  const body = { start, end, timeZone: zone, limit: PAGE, offset: Math.max(0, Number(q.get('offset')) || 0) };
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

// filtersInUse counts what narrows the search beyond its dates.
export function filtersInUse(q) {
  return ['direction', 'search', 'status', 'numbers', 'day', 'after', 'before', 'minDuration'].reduce((n, k) => n + q.getAll(k).filter(Boolean).length, 0);
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

// searchForm is the form for query q, in zone; onSearch(next query).
export function searchForm(q, zone, onSearch) {
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
      field('Started before', before, `Times of day in ${zone}.`),
      field('At least (seconds long)', minDuration),
      field('Order', sort)));
  // Open "More filters" when one of them is in use, so nothing applied is hidden.
  more.open = ['numbers', 'day', 'after', 'before', 'minDuration', 'sort'].some((k) => q.get(k));

  const form = h('form', { class: 'calls-search', id: 'calls-filters', role: 'search', 'aria-label': 'Search call history' },
    h('p', { class: 'zone-note hint' }, 'Days and times are in ', h('strong', { text: zone }), ', your time zone.'),
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
    onSearch(defaultQuery(zone));
  });
  return form;
}

