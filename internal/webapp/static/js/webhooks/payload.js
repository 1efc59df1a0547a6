// A delivery's payload: the event as the endpoint received it. The API
// keeps no copy per delivery, but the event stream replays what it holds
// (GET /events with after=): asked to start just before the event, its
// first message is the event, exactly the body a delivery carries. The
// stream is closed as soon as it is read (or shown to be gone).
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
  try {
    const resp = await ctx.api('GET', '/events', { query: { after: `evt_${n - 1}` }, headers: { Accept: 'text/event-stream' }, raw: true, signal: ctrl.signal });
    if (!resp.ok || !resp.body) return null;
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    let msg = {};
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return null;
      buf += value;
      let nl;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf[nl] === '\r' && buf[nl + 1] === '\n' ? 2 : 1));
        if (line === '') {
          if (msg.event === 'reset') return null;
          if (msg.data !== undefined && msg.id === eventId) return JSON.parse(msg.data);
          if (msg.data !== undefined && eventNumber(msg.id) > n) return null; // passed it: not visible here
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
        else if (field === 'id') msg.id = val;
      }
    }
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
    ctrl.abort();
    signal?.removeEventListener('abort', stop);
  }
}
