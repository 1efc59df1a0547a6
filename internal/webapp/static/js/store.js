// The app's shared state, in one explicit place: who is signed in and what
// they may do, their lines, their teammates, the unread counts, where the
// app is. A screen reads a value with get(), changes it with set(), and
// hears changes with subscribe(); no screen writes fields on another's
// objects.
export function createStore(initial = {}) {
  const state = { ...initial };
  const subs = new Map(); // key -> Set(fn)
  function notify(key) {
    for (const fn of [...(subs.get(key) || [])]) {
      try { fn(state[key]); } catch (err) { console.error(err); }
    }
  }
  return {
    get: (key) => state[key],
    // set replaces a value and tells its subscribers (unless it is the
    // same value).
    set(key, value) {
      if (Object.is(state[key], value)) return;
      state[key] = value;
      notify(key);
    },
    // subscribe calls fn with every new value of key, and at once with the
    // current one when there is one; it returns the unsubscribe function.
    subscribe(key, fn, { now = true } = {}) {
      if (!subs.has(key)) subs.set(key, new Set());
      subs.get(key).add(fn);
      if (now && state[key] !== undefined) fn(state[key]);
      return () => subs.get(key)?.delete(fn);
    },
  };
}

// store is the app's one store. Keys: me (GET /me), can (what to offer),
// lines (GET /sms/lines), users (GET /users), unread (GET /sms/unread),
// path (the address shown), stream (the live stream's state).
export const store = createStore();

// loader makes fetch() the one way to fill key: the first call asks the
// server, later ones share its answer (until clear()); a failure is not
// kept, so the next call tries again.
export function loader(key, fetch) {
  let pending = null;
  const load = () => (pending ||= fetch().then((v) => { store.set(key, v); return v; }, (err) => { pending = null; throw err; }));
  load.clear = () => { pending = null; };
  return load;
}
