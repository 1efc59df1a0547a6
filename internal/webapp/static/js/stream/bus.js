// The stream's listeners and what it has heard: events are handed to the
// listeners of their type once each (by id), and the last id is kept to
// resume after.
const SEEN = 1000; // event ids remembered to drop a takeover's replays

export function createBus() {
  const listeners = new Map(); // type -> Set(fn)
  const seen = new Set();      // recent event ids, oldest first
  const bus = { lastId: null, on, emit, dispatch };

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

  function remember(id) {
    bus.lastId = id;
    seen.add(id);
    if (seen.size > SEEN) seen.delete(seen.values().next().value);
  }

  // dispatch handles one SSE message, read or relayed, and says whether it
  // was new. Listeners get the event's JSON (the body a webhook delivery
  // carries) by its type (AccountSMS…), by its data.event
  // (message.received, conversation.assigned…) and as '*'. An id already
  // seen is dropped: a new leader resumes after the last id it heard, and
  // the old leader's last relays may still be on their way.
  function dispatch(msg) {
    if (msg.event === 'reset') {
      // Its id is the newest event's, which may have been seen: never dropped.
      seen.clear();
      if (msg.id) remember(msg.id);
      emit('reset', msg);
      return true;
    }
    if (msg.id) {
      if (seen.has(msg.id)) return false;
      remember(msg.id);
    }
    if (!msg.data) return true;
    let payload;
    try { payload = JSON.parse(msg.data); } catch { return true; }
    const type = msg.event || payload.type;
    emit(type, payload);
    if (payload.data && payload.data.event) emit(payload.data.event, payload);
    emit('*', payload);
    return true;
  }

  return bus;
}
