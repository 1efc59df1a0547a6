// The composer's draft (GET/PUT/DELETE /sms/drafts/{draftId}): restored
// into an untouched box, saved a second after typing stops, gone once the
// message is sent.
//
// The API has no list of drafts, and asking for one that is not there is
// a 404, which every browser logs as an error. So the app keeps, as one
// more draft of the person's (INDEX), the keys of the conversation drafts
// it saved, and asks only for those; and this browser remembers whether
// that index exists (a flag in localStorage, no token), so a person who
// never saved a draft is never answered 404 on opening a thread
// (docs/decisions.md, "The app's draft index").
import { ApiError } from '../api.js';
import { store } from '../store.js';

const DRAFT_DELAY = 1000;
const INDEX = 'switchboard-app-draft-index';
const INDEX_MAX = 50; // keys of ~40 characters in a draft's 2,000

// draftKey is the stable draftId of a conversation: the same line and the
// same party (or the same set of group participants) always give the same
// key, so the draft follows the conversation across reloads and devices.
// A group's participant list can exceed the key's 128 characters, so a group
// is named by a hash of its sorted numbers.
export async function draftKey(line, number, groupParticipants) {
  const group = (groupParticipants || []).filter(Boolean);
  if (group.length < 2) return `sms-${line}-${number}`;
  const bytes = new TextEncoder().encode([...group].sort().join(','));
  const sum = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  let hex = '';
  for (const b of sum.slice(0, 16)) hex += b.toString(16).padStart(2, '0');
  return `sms-${line}-group-${hex}`;
}

const is404 = (err) => err instanceof ApiError && err.status === 404;
const path = (key) => `/sms/drafts/${encodeURIComponent(key)}`;

// hasIndex is the browser's knowledge that the person's index exists.
function flagName() {
  const me = store.get('me');
  return `switchboard.draftIndex.${me?.account?.id ?? ''}.${me?.userId ?? ''}`;
}
const hasIndex = () => { try { return localStorage.getItem(flagName()) === '1'; } catch { return false; } };
function setHasIndex(on) {
  try { if (on) localStorage.setItem(flagName(), '1'); else localStorage.removeItem(flagName()); } catch { /* private mode: ask again next time */ }
}

// readIndex reads the index (a list of keys, newest last), once per page
// and after each change of it; [] when this browser knows of none.
let indexRead = null;
function readIndex(api, { ask = hasIndex() } = {}) {
  if (!ask) return Promise.resolve([]);
  return (indexRead ||= api('GET', path(INDEX)).then((d) => {
    setHasIndex(true);
    try { const keys = JSON.parse(d.message || '[]'); return Array.isArray(keys) ? keys : []; } catch { return []; }
  }, (err) => {
    indexRead = null;
    if (!is404(err)) throw err;
    setHasIndex(false);
    return [];
  }));
}
// markIndex records that key holds a draft (has) or not. Saving a first
// draft in this browser asks whether another one made the index already
// (the one 404 a person may see, before their first draft anywhere).
async function markIndex(api, key, has) {
  if (!has && !hasIndex()) return;
  indexRead = null; // another tab or device may have changed it
  const keys = (await readIndex(api, { ask: true })).filter((k) => k !== key);
  if (has) keys.push(key);
  const next = keys.slice(-INDEX_MAX);
  await api('PUT', path(INDEX), { body: { message: JSON.stringify(next) } });
  setHasIndex(true);
  indexRead = Promise.resolve(next);
}

// drafts wires composer c's draft: c.api, c.textarea, c.setStatus,
// c.isSending(), c.changed (to quote a restored text).
export function drafts(c, { line, number, groupParticipants }) {
  let timer = 0;
  let saved = null; // the text the server holds as the draft
  let key = null;
  const ready = draftKey(line, number, groupParticipants).then(async (k) => {
    key = k;
    saved = '';
    try {
      if (!(await readIndex(c.api)).includes(k)) return;
      const d = await c.api('GET', path(k));
      saved = d.message;
      // Only fill an untouched box: what the person already typed wins.
      if (c.textarea.value === '' && d.message) {
        c.textarea.value = d.message;
        c.setStatus('Draft restored.');
        c.restored();
      }
    } catch (err) {
      if (!is404(err)) c.setStatus('The saved draft could not be loaded.');
    }
  });
  // Saves run one after another (a blur, the timer, leaving the page), so
  // a discard after a send waits for the one in flight and deletes what it
  // wrote.
  let inflight = Promise.resolve();
  function save() {
    clearTimeout(timer);
    timer = 0;
    const run = inflight.then(write);
    inflight = run.catch(() => {});
    return run;
  }
  async function write() {
    await ready;
    const text = c.textarea.value;
    if (text === saved) return;
    try {
      if (text === '') {
        await c.api('DELETE', path(key)).catch((err) => { if (!is404(err)) throw err; });
        await markIndex(c.api, key, false).catch(() => {});
      } else {
        await c.api('PUT', path(key), { body: { message: text } });
        if (!saved) await markIndex(c.api, key, true).catch(() => {});
      }
      saved = text;
      if (!c.isSending()) c.setStatus(text === '' ? '' : 'Draft saved.');
    } catch (err) {
      c.setStatus('The draft could not be saved' + (err instanceof ApiError ? `: ${err.detail || err.message}` : '.'));
    }
  }
  return {
    soon() { clearTimeout(timer); timer = setTimeout(save, DRAFT_DELAY); },
    // flush saves what is pending now (leaving the page or the thread).
    flush() { if (timer) save(); },
    async discard() {
      clearTimeout(timer);
      timer = 0;
      await ready;
      await inflight;
      if (!saved) return; // nothing held: no DELETE to answer 404
      try {
        await c.api('DELETE', path(key));
      } catch { /* 404: gone already; anything else: the next edit saves over it */ }
      await markIndex(c.api, key, false).catch(() => {});
      saved = '';
    },
  };
}
