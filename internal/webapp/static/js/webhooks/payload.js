// A delivery's payload: the event as the endpoint received it. The API
// keeps no copy per delivery, but the event stream replays what it holds
// (GET /events with after=): asked to start just before the event, its
// first message is the event, exactly the body a delivery carries. The
// stream is closed as soon as it is read (or shown to be gone).
import { readSSE } from '../stream/sse.js';

const QUIET = 3000; // no answer by then: the event is not one this stream carries

function eventNumber(id) {
  const m = /^evt_(\d+)$/.exec(String(id || ''));
  return m ? Number(m[1]) : 0;
}

// readEvent resolves to the event's JSON, or null when the stream cannot
// give it (past the retention, not visible to this sign-in, a test event).
export async function readEvent(ctx, eventId, signal) {
  const n = eventNumber(eventId);
  if (!n) return null;
  const ctrl = new AbortController();
  const stop = () => ctrl.abort();
  signal?.addEventListener('abort', stop);
  const timer = setTimeout(stop, QUIET);
  let found = null;
  try {
    const resp = await ctx.api('GET', '/events', { query: { after: `evt_${n - 1}` }, headers: { Accept: 'text/event-stream' }, raw: true, signal: ctrl.signal });
    if (!resp.ok || !resp.body) return null;
    await readSSE(resp.body, (msg) => {
      if (msg.event === 'reset') return stop(); // past the retention
      if (msg.data === undefined) return;
      if (msg.id === eventId) found = JSON.parse(msg.data);
      // The event, or one after it: either way the answer is known.
      if (found || eventNumber(msg.id) > n) stop();
    });
    return found;
  } catch {
    return found;
  } finally {
    clearTimeout(timer);
    ctrl.abort();
    signal?.removeEventListener('abort', stop);
  }
}
