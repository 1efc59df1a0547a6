// The live event stream (GET /events, Server-Sent Events) read with fetch:
// EventSource cannot send the Authorization header. One stream for the
// whole app; it resumes after the last event id it saw (Last-Event-ID), so a
// lost connection loses nothing, and reconnects with backoff.
import { API_BASE } from './api.js';
import { accessToken, refreshAccess } from './auth.js';

const QUIET_LIMIT = 45_000; // the server sends a keepalive at least every 15 s

export function createStream() {
  const listeners = new Map(); // type -> Set(fn)
  let lastId = null;
  let controller = null;
  let stopped = true;
  let failures = 0;
  let state = 'closed';

  function on(type, fn) {
    if (!listeners.has(type)) listeners.set(type, new Set());
    listeners.get(type).add(fn);
    return () => listeners.get(type)?.delete(fn);
  }

  function emit(type, payload) {
    for (const fn of listeners.get(type) || []) {
      try { fn(payload); } catch (err) { console.error(err); }
    }
  }

  function setState(s) {
    if (s === state) return;
    state = s;
    emit('status', s);
  }

  // dispatch handles one SSE message. Listeners get the event's JSON (the
  // body a webhook delivery carries) by its type (AccountSMS…), by its
  // data.event (message.received, conversation.assigned…) and as '*'.
  function dispatch(msg) {
    if (msg.id) lastId = msg.id;
    if (msg.event === 'reset') {
      emit('reset', msg);
      return;
    }
    if (!msg.data) return;
    let payload;
    try { payload = JSON.parse(msg.data); } catch { return; }
    const type = msg.event || payload.type;
    emit(type, payload);
    if (payload.data && payload.data.event) emit(payload.data.event, payload);
    emit('*', payload);
  }

  async function connect() {
    controller = new AbortController();
    const headers = { Accept: 'text/event-stream', Authorization: 'Bearer ' + accessToken() };
    if (lastId) headers['Last-Event-ID'] = lastId;
    let resp;
    try {
      resp = await fetch(API_BASE + '/events', { headers, signal: controller.signal, cache: 'no-store', credentials: 'omit' });
    } catch {
      return 'retry';
    }
    if (resp.status === 401) return (await refreshAccess()) ? 'now' : 'stop';
    if (resp.status === 403) return 'stop'; // the role sees no events: the screens still work
    if (resp.status === 429) {
      const after = Number(resp.headers.get('Retry-After')) || 5;
      await sleep(after * 1000);
      return 'retry';
    }
    if (!resp.ok || !resp.body) return 'retry';
    failures = 0;
    setState('open');
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    let msg = {};
    let quiet;
    const arm = () => { clearTimeout(quiet); quiet = setTimeout(() => controller.abort(), QUIET_LIMIT); };
    arm();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        arm();
        buf += value;
        let nl;
        while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + (buf[nl] === '\r' && buf[nl + 1] === '\n' ? 2 : 1));
          if (line === '') {
            if (msg.data !== undefined || msg.event) dispatch(msg);
            msg = {};
            continue;
          }
          if (line.startsWith(':')) continue;
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          let val = colon < 0 ? '' : line.slice(colon + 1);
          if (val.startsWith(' ')) val = val.slice(1);
          if (field === 'data') msg.data = msg.data === undefined ? val : msg.data + '\n' + val;
          else if (field === 'event') msg.event = val;
          else if (field === 'id' && !val.includes('\0')) msg.id = val;
        }
      }
    } catch {
      // aborted (quiet too long, or stopped) or the connection broke
    } finally {
      clearTimeout(quiet);
    }
    return 'retry';
  }

  async function loop() {
    while (!stopped) {
      const next = await connect();
      if (stopped) break;
      if (next === 'stop') { setState('off'); stopped = true; break; }
      setState('reconnecting');
      if (next === 'now') continue;
      failures++;
      // 0.5 s, 1 s, 2 s … up to 30 s, with jitter so many tabs do not
      // reconnect at the same instant after a server restart.
      const wait = Math.min(30_000, 500 * 2 ** Math.min(failures - 1, 6));
      await sleep(wait / 2 + Math.random() * wait / 2);
    }
  }

  return {
    on,
    get lastId() { return lastId; },
    get state() { return state; },
    // start opens the stream; after (an event id) resumes after it.
    start(after) {
      if (after) lastId = after;
      if (!stopped) return;
      stopped = false;
      setState('connecting');
      loop();
    },
    stop() {
      stopped = true;
      controller?.abort();
      setState('closed');
    },
    // reconnect drops the connection now and resumes from the last id
    // (used by tests and when the network comes back).
    reconnect() { controller?.abort(); },
  };
}

function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }
