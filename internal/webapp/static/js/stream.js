// The live event stream (GET /events, Server-Sent Events) read with fetch:
// EventSource cannot send the Authorization header. It resumes after the
// last event id it saw (Last-Event-ID), so a lost connection loses nothing,
// and reconnects with backoff.
//
// A person's tabs share one stream: over plain HTTP/1.1 a browser opens at
// most six connections to a server, and a stream per tab left the sixth tab
// unable to load anything. The tab holding a Web Lock of the given name (the
// leader) reads the stream and relays every message on a BroadcastChannel
// of that name; the other tabs (followers) read none and dispatch what it
// relays. When the leader stops (closed, left for another page, signed out)
// the lock passes to another tab, which resumes after the last id it heard.
// Without a name, Web Locks or BroadcastChannel each tab reads its own
// stream (docs/decisions.md, "One stream for a person's tabs").
import { API_BASE } from './api.js';
import { accessToken, refreshAccess } from './auth.js';
import { readSSE } from './stream/sse.js';
import { createBus } from './stream/bus.js';

const QUIET_LIMIT = 45_000; // the server sends a keepalive at least every 15 s

// self names this tab in what it says as a leader: a follower heeds the
// leader it last heard, so an old leader's farewell that arrives after the
// new leader's word (two senders' messages keep no order between them)
// cannot leave it showing the stream as down.
const self = Math.random().toString(36).slice(2);

// createStream returns the app's stream. name (the lock's and channel's)
// says who may share it: only tabs whose stream the server would fill with
// the same events.
export function createStream(name) {
  const shared = !!name && !!navigator.locks && typeof BroadcastChannel === 'function';
  const bus = createBus();
  let session = null;          // from start() to stop(): { active, leading, controller, channel, resign, rejoined, followed, blind }
  let failures = 0;
  let state = 'closed';

  // setState shows the stream's state; a leader tells its followers, whose
  // status is the leader's stream's.
  function setState(s) {
    if (s === state) return;
    state = s;
    bus.emit('status', s);
    if (session?.leading) session.channel.postMessage({ kind: 'status', state, lastId: bus.lastId, from: self });
  }

  // hear handles what the other tabs of the name say.
  function hear(s, data) {
    if (data.kind === 'hello') {
      if (s.leading) s.channel.postMessage({ kind: 'status', state, lastId: bus.lastId, from: self });
      return;
    }
    if (s.leading) return; // an old leader's last words: this tab reads the stream now
    if (data.kind === 'event') bus.dispatch(data.msg);
    if (data.kind !== 'status' || (data.resigning && s.leaderId && data.from !== s.leaderId)) return;
    s.leaderId = data.from;
    // A tab back from the back/forward cache missed what was relayed while
    // away (the leader keeps no history): it reloads as after a reset
    // unless nothing happened meanwhile.
    if (s.rejoined !== null && s.rejoined !== data.lastId) bus.emit('reset', { event: 'reset' });
    s.rejoined = null;
    s.followed = true;
    if (data.lastId) bus.lastId = data.lastId;
    setState(data.state);
  }

  async function connect(s) {
    s.controller = new AbortController();
    const headers = { Accept: 'text/event-stream', Authorization: 'Bearer ' + accessToken() };
    if (bus.lastId) headers['Last-Event-ID'] = bus.lastId;
    let resp;
    try {
      resp = await fetch(API_BASE + '/events', { headers, signal: s.controller.signal, cache: 'no-store', credentials: 'omit' });
    } catch {
      return 'retry';
    }
    if (resp.status === 401) return (await refreshAccess()) ? 'now' : 'stop';
    if (resp.status === 403) return 'stop'; // the role sees no events: the screens still work
    if (resp.status === 429) {
      await sleep((Number(resp.headers.get('Retry-After')) || 5) * 1000);
      return 'retry';
    }
    if (!resp.ok || !resp.body) return 'retry';
    failures = 0;
    setState('open');
    if (s.blind) {
      s.blind = false;
      const reset = { event: 'reset' }; // every tab reloads what it shows
      bus.dispatch(reset);
      s.channel.postMessage({ kind: 'event', msg: reset });
    }
    let quiet;
    const arm = () => { clearTimeout(quiet); quiet = setTimeout(() => s.controller.abort(), QUIET_LIMIT); };
    arm();
    try {
      // A message may be an id alone: where a new stream joined, kept so
      // that a reconnection misses nothing even if no event came before it.
      await readSSE(resp.body, (msg) => {
        if (bus.dispatch(msg) && s.leading) s.channel.postMessage({ kind: 'event', msg });
      }, arm);
    } catch {
      // aborted (quiet too long, or stopped) or the connection broke
    } finally {
      clearTimeout(quiet);
    }
    return 'retry';
  }

  async function loop(s) {
    while (s.active) {
      const next = await connect(s);
      if (!s.active) break;
      if (next === 'stop') { setState('off'); end(s); break; }
      setState('reconnecting');
      if (next === 'now') continue;
      failures++;
      await sleep(backoff(failures));
    }
  }

  // elect waits for the lock; holding it, this tab reads the stream until
  // the session ends (s.resign releases the lock, or gives up waiting).
  function elect(s) {
    const abort = new AbortController();
    let release;
    const held = new Promise((r) => { release = r; });
    s.resign = () => { abort.abort(); release(); };
    navigator.locks.request(name, { signal: abort.signal }, () => {
      if (!s.active) return null;
      s.leading = true;
      s.rejoined = null; // it resumes after its own last id: nothing missed
      // A stream that never carried an event has no id to resume after:
      // taking over one, the new stream cannot say what came in between.
      s.blind = s.followed && !bus.lastId;
      setState('connecting');
      loop(s);
      return held;
    }).catch(() => { /* stopped while waiting its turn */ });
  }

  // end closes this tab's part: its connection, the channel and the lock
  // (so another tab leads).
  function end(s) {
    s.active = false;
    s.controller?.abort();
    if (session === s) session = null;
    if (!shared) return;
    // The followers' stream is not gone: the next leader resumes it.
    if (s.leading && state !== 'off') s.channel.postMessage({ kind: 'status', state: 'reconnecting', lastId: bus.lastId, from: self, resigning: true });
    s.leading = false;
    s.channel.close();
    s.resign();
  }

  return {
    on: bus.on,
    get lastId() { return bus.lastId; },
    get state() { return state; },
    // start opens the stream (or joins the leader's); after (an event id)
    // resumes after it.
    start(after) {
      if (after) bus.lastId = after;
      if (session) return;
      const s = session = { active: true, leading: false, controller: null, rejoined: bus.lastId };
      setState('connecting');
      if (!shared) { loop(s); return; }
      s.channel = new BroadcastChannel(name);
      s.channel.onmessage = (e) => hear(s, e.data);
      s.channel.postMessage({ kind: 'hello' }); // a leader answers with its state and last id
      elect(s);
    },
    stop() {
      if (session) end(session);
      setState('closed');
    },
    // reconnect drops the connection now and resumes from the last id
    // (when the network comes back); a follower has none.
    reconnect() { session?.controller?.abort(); },
  };
}

function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }

// backoff is the wait before another try after failures in a row: 0.5 s,
// 1 s, 2 s … up to 30 s, with jitter so many tabs do not reconnect at the
// same instant after a server restart.
function backoff(failures) {
  const wait = Math.min(30_000, 500 * 2 ** Math.min(failures - 1, 6));
  return wait / 2 + Math.random() * wait / 2;
}
