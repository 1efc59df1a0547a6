// The app's start: sign in (or finish signing in), learn who the person is
// and what they may do, open the one event stream, and show the screen the
// address names.
import { api, ApiError, API_BASE } from './api.js';
import * as auth from './auth.js';
import { h, errorText, announce } from './ui.js';
import { route, start, navigate, reload } from './router.js';
import { createStream } from './stream.js';

const APP = new URL('../', import.meta.url).pathname; // "/app/"
const main = document.getElementById('main');
const topbar = document.getElementById('topbar');

// Routes. One loader per module: addresses served by the same loader share
// one render (see router.js). Helpers add their screens here.
const inbox = () => import('./inbox.js');
route('/', inbox);
route('/inbox', inbox);
route('/inbox/:line/:number', inbox);
const lines = () => import('./lines.js');
route('/lines', lines);
route('/lines/:line', lines);
const calls = () => import('./calls.js');
route('/calls', calls);
route('/calls/:callid', calls);
const webhooks = () => import('./webhooks.js');
route('/webhooks', webhooks);
route('/webhooks/:id', webhooks);

let activeStream = null;

function signedOutScreen(message, { error = false } = {}) {
  activeStream?.stop();
  topbar.hidden = true;
  topbar.replaceChildren();
  const btn = h('button', { class: 'btn btn-primary', type: 'button', on: { click: () => auth.signIn(APP + 'inbox') } }, 'Sign in');
  main.replaceChildren(h('div', { class: 'signed-out' },
    h('h1', { text: 'Switchboard' }),
    h('p', { class: error ? 'error' : 'notice', role: error ? 'alert' : 'status', text: message }),
    btn));
  document.title = 'Signed out · Switchboard';
  btn.focus();
}

// can says what to offer: the token's scopes, narrowed by the role's
// permissions when GET /me reports them. The server enforces both anyway;
// this only keeps what the person cannot do off the screen.
function capabilities(scopes, me) {
  const s = new Set(me?.scopes || scopes);
  const p = me?.permissions || {};
  const allowed = (key) => p[key] === undefined ? true : !!p[key];
  return {
    inbox: (s.has('messages:read') || s.has('sms:read')) && p.numbers !== 'none',
    send: s.has('sms:send'),
    write: s.has('sms:write') || s.has('messages:write'),
    // Deleting needs messages:write and an account that allows it.
    delete: s.has('messages:write') && me?.account?.messageDeletionAllowed !== false,
    calls: s.has('reports:read') && allowed('callReports'),
    // GET /me names it allowRecordings (with callReports); the account may
    // also have recordings switched off for everyone (recordingsAvailable).
    recordings: s.has('recordings:read') && allowed('callReports') && allowed('allowRecordings') && me?.account?.recordingsAvailable !== false,
    // A person needs the role's Webhooks permission (GET /me's
    // permissions.webhooks); an API key is the account.
    webhooks: s.has('webhooks:read') && (me?.kind ? me.kind !== 'user' || allowed('webhooks') : true),
    users: s.has('users:read'),
  };
}

function displayName(me) {
  const u = me?.user;
  if (!u) return '';
  return [u.firstName, u.lastName].filter(Boolean).join(' ') || u.username || '';
}

function cached(fn) {
  let p = null;
  const get = () => (p ||= fn().catch((err) => { p = null; throw err; }));
  get.clear = () => { p = null; };
  return get;
}

// unreadCounts keeps GET /sms/unread for the header and the inbox, fetched
// again (at most every 300 ms) when the stream says it changed.
function unreadCounts() {
  let value = null;
  let timer = 0;
  const subs = new Set();
  async function refresh() {
    try {
      value = await api('GET', '/sms/unread');
      for (const fn of subs) fn(value);
    } catch { /* the badge stays as it was */ }
    return value;
  }
  return {
    get: () => value,
    refresh,
    soon() { clearTimeout(timer); timer = setTimeout(refresh, 300); },
    on(fn) { subs.add(fn); if (value) fn(value); return () => subs.delete(fn); },
  };
}

function header(ctx) {
  const here = (p) => location.pathname === APP + p || location.pathname.startsWith(APP + p + '/') || (p === 'inbox' && location.pathname === APP);
  const badge = h('span', { class: 'badge', hidden: true, 'aria-hidden': 'true' });
  const inboxLabel = h('span', { class: 'visually-hidden' });
  const links = [['inbox', 'Inbox', true], ['calls', 'Calls', ctx.can.calls], ['webhooks', 'Webhooks', ctx.can.webhooks]]
    .filter(([, , ok]) => ok)
    .map(([p, label]) => h('a', { href: APP + p, class: 'nav-link', 'data-nav': p }, label, p === 'inbox' ? [badge, inboxLabel] : null));
  const live = h('span', { class: 'live', 'data-state': 'connecting', title: 'Live updates' }, h('span', { class: 'live-dot', 'aria-hidden': 'true' }), h('span', { class: 'live-text', text: 'Connecting…' }));
  const signOut = h('button', {
    type: 'button', class: 'btn btn-quiet', on: {
      click: async () => {
        signOut.disabled = true;
        ctx.stream.stop();
        await auth.signOut();
        signedOutScreen(auth.takeNotice() || 'You signed out.');
      },
    },
  }, 'Sign out');
  topbar.replaceChildren(
    h('a', { class: 'brand', href: APP + 'inbox' }, 'Switchboard'),
    h('nav', { 'aria-label': 'Main' }, h('ul', { class: 'nav' }, links.map((a) => h('li', null, a)))),
    h('div', { class: 'who' }, live, h('span', { class: 'who-name', text: displayName(ctx.me) }), signOut));
  topbar.hidden = false;
  const mark = () => topbar.querySelectorAll('[data-nav]').forEach((a) => {
    if (here(a.dataset.nav)) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  });
  mark();
  addEventListener('popstate', mark);
  const origPush = history.pushState.bind(history);
  history.pushState = (...args) => { origPush(...args); mark(); };
  ctx.unread.on((u) => {
    badge.hidden = !u.total;
    badge.textContent = u.total > 99 ? '99+' : String(u.total);
    inboxLabel.textContent = u.total ? ` (${u.total} unread)` : '';
  });
  ctx.stream.on('status', (s) => {
    live.dataset.state = s;
    live.querySelector('.live-text').textContent = { open: 'Live', connecting: 'Connecting…', reconnecting: 'Reconnecting…', off: 'Not live', closed: 'Offline' }[s] || s;
  });
}

async function boot() {
  // The app's front door is the inbox.
  if (location.pathname === APP || location.pathname === APP.slice(0, -1)) history.replaceState(null, '', APP + 'inbox' + location.search);
  if (location.pathname === APP + 'callback') {
    try {
      const next = await auth.handleCallback();
      history.replaceState(null, '', next);
    } catch (err) {
      signedOutScreen(err.message, { error: true });
      return;
    }
  } else if (!auth.accessToken()) {
    if (!sessionStorage.getItem('switchboard.refresh')) {
      const notice = auth.takeNotice();
      if (notice) { signedOutScreen(notice); return; }
      // A first visit goes straight to the server's sign-in page.
      await auth.signIn(location.pathname + location.search);
      return;
    }
    if (!(await auth.refreshAccess())) {
      if (!auth.hasSession()) return; // onSignedOut showed why
      signedOutScreen('The server could not be reached to continue your session. Check the connection and reload.', { error: true });
      return;
    }
  }

  let me = null;
  try {
    me = await api('GET', '/me');
  } catch (err) {
    // GET /me may be missing on an older server: scopes alone decide.
    if (!(err instanceof ApiError) || err.status === 401) throw err;
  }
  // Tabs signed in as the same person share one stream (stream.js). The
  // name is the server's, the account's, the person's and the grant's: the
  // refresh token is per tab, so two tabs may be signed in as different
  // people, and one must never be handed the other's events.
  const stream = createStream(me?.kind === 'user' && me.userId
    ? ['switchboard-stream', API_BASE, me.account.id, me.userId, me.scopes.join(' ')].join(':')
    : null);
  activeStream = stream;
  const ctx = {
    api, me, stream, navigate,
    can: capabilities(auth.scopes(), me),
    unread: unreadCounts(),
    users: cached(async () => {
      try { return await api('GET', '/users'); } catch (err) { if (err.status === 403) return []; throw err; }
    }),
    lines: cached(() => api('GET', '/sms/lines')),
  };
  window.__switchboard = { stream }; // for tests: the stream's state, role and last id
  header(ctx);
  if (ctx.can.inbox) {
    const soon = () => ctx.unread.soon();
    stream.on('message.received', soon);
    stream.on('conversation.read', soon);
    stream.on('conversation.unread', soon);
    stream.on('message.deleted', soon);
    stream.on('conversation.deleted', soon);
    ctx.unread.refresh();
  }
  // After a reset the stream cannot say what was missed: reload the screen
  // and the counts from the server.
  stream.on('reset', () => { ctx.unread.refresh(); reload(); announce('Reconnected; the screen was refreshed.'); });
  addEventListener('online', () => stream.reconnect());
  // A page kept in the back/forward cache would keep its stream's
  // connection (or, leading, the other tabs' stream), and over HTTP/1.1 a
  // browser opens at most six to a server: a few reloads or visits and the
  // app could load nothing more. The stream closes (another tab takes the
  // lead) when the page is left and resumes from its last id if the page
  // comes back.
  addEventListener('pagehide', () => stream.stop());
  addEventListener('pageshow', (e) => { if (e.persisted) stream.start(); });
  stream.start();
  await start(main, ctx);
}

auth.onSignedOut((message) => signedOutScreen(message));

boot().catch((err) => {
  signedOutScreen(errorText(err), { error: true });
});
