// The app's start: sign in (or finish signing in), learn who the person is
// and what they may do, open the one event stream, and show the screen the
// address names.
import { api, ApiError, API_BASE } from './api.js';
import * as auth from './auth.js';
import { h, errorText, announce } from './ui.js';
import { route, start, navigate, reload } from './router.js';
import { createStream } from './stream.js';
import { store, loader } from './store.js';
import { header } from './shell/header.js';
import { startNotifications } from './shell/notify.js';

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
const contacts = () => import('./contacts.js');
route('/contacts', contacts);
route('/contacts/:id', contacts);
route('/search', () => import('./search.js'));

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
    // The address book: reading as the inbox; writing with sms:write;
    // deleting with a role that has every line (docs/decisions.md,
    // "Contacts").
    contactsWrite: s.has('sms:write') && p.numbers !== 'none',
    contactsDelete: s.has('sms:write') && (p.numbers === undefined || p.numbers === 'all'),
  };
}

// unreadCounts keeps GET /sms/unread in the store (key unread), read again
// (at most every 300 ms) when the stream says it changed.
function unreadCounts() {
  let timer = 0;
  async function refresh() {
    try {
      store.set('unread', await api('GET', '/sms/unread'));
    } catch { /* the badge stays as it was */ }
  }
  return { refresh, soon() { clearTimeout(timer); timer = setTimeout(refresh, 300); } };
}

async function boot() {
  // The app's front door is the inbox.
  if (location.pathname === APP || location.pathname === APP.slice(0, -1)) history.replaceState(null, '', APP + 'inbox' + location.search);
  if (location.pathname === APP + 'signed-out') {
    // Where the server sends a sign-in that did not finish, with why.
    const reason = new URLSearchParams(location.search).get('reason');
    history.replaceState(null, '', APP + 'signed-out');
    signedOutScreen(auth.signInFailed(reason), { error: reason !== 'cancelled' });
    return;
  }
  const started = await auth.start();
  if (started === 'none') {
    const notice = auth.takeNotice();
    if (notice) { signedOutScreen(notice); return; }
    // A first visit goes straight to the server's sign-in page.
    auth.signIn(location.pathname + location.search);
    return;
  }
  if (started === 'offline') {
    signedOutScreen('The server could not be reached to continue your session. Check the connection and reload.', { error: true });
    return;
  }
  if (started !== 'ok') { signedOutScreen(started); return; }

  let me = null;
  try {
    me = await api('GET', '/me');
  } catch (err) {
    // GET /me may be missing on an older server: scopes alone decide.
    if (!(err instanceof ApiError) || err.status === 401) throw err;
  }
  // Tabs signed in as the same person share one stream (stream.js). The
  // name is the server's, the account's, the person's and the grant's: a
  // tab still showing someone signed out elsewhere must never be handed
  // the next person's events.
  const stream = createStream(me?.kind === 'user' && me.userId
    ? ['switchboard-stream', API_BASE, me.account.id, me.userId, me.scopes.join(' ')].join(':')
    : null);
  activeStream = stream;
  store.set('me', me);
  store.set('can', capabilities(auth.scopes(), me));
  stream.on('status', (st) => store.set('stream', st));
  // ctx: the services every screen uses (the API, the stream, the router,
  // the loaders that fill the store); shared state is in the store.
  const ctx = {
    api, me, stream, navigate,
    can: store.get('can'),
    unread: unreadCounts(),
    users: loader('users', async () => {
      try { return await api('GET', '/users'); } catch (err) { if (err.status === 403) return []; throw err; }
    }),
    lines: loader('lines', () => api('GET', '/sms/lines')),
    // The people who work the person's lines, by name: the assignee
    // picker, and the names of notes and replies for a role that sees only
    // itself in GET /users.
    teammates: loader('teammates', async () => {
      try { return await api('GET', '/sms/teammates'); } catch (err) { if (err.status === 403 || err.status === 404) return []; throw err; }
    }),
  };
  header(topbar, {
    ctx,
    onSignOut: async () => {
      stream.stop();
      await auth.signOut();
      signedOutScreen(auth.takeNotice() || 'You signed out.');
    },
  });
  if (ctx.can.inbox) {
    const soon = () => ctx.unread.soon();
    stream.on('message.received', soon);
    stream.on('conversation.read', soon);
    stream.on('conversation.unread', soon);
    stream.on('message.deleted', soon);
    stream.on('conversation.deleted', soon);
    ctx.unread.refresh();
    startNotifications(ctx);
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
