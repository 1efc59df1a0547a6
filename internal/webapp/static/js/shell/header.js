// The app's header: where one is (the navigation, with the inbox's unread
// count), search, "New text", notifications, whether the app is live, who
// is signed in. It reads the store and the router; no screen writes to it.
import { h } from '../ui.js';
import { store } from '../store.js';
import { onRoute } from '../router.js';
import { searchField, newTextButton, notifyButton } from './slots.js';

const APP = '/app/';

// NAV: the screens in the navigation, and who is offered each.
const NAV = [
  ['inbox', 'Inbox', (can) => can.inbox || true],
  ['contacts', 'Contacts', (can) => can.inbox],
  ['calls', 'Calls', (can) => can.calls],
  ['webhooks', 'Webhooks', (can) => can.webhooks],
];

const LIVE = { open: 'Live', connecting: 'Connecting…', reconnecting: 'Reconnecting…', off: 'Not live', closed: 'Offline' };

function here(p) {
  const path = location.pathname;
  return path === APP + p || path.startsWith(APP + p + '/') || (p === 'inbox' && path === APP);
}

function displayName(me) {
  const u = me?.user;
  if (!u) return '';
  return [u.firstName, u.lastName].filter(Boolean).join(' ') || u.username || '';
}

function navigation(can) {
  const badge = h('span', { class: 'badge', hidden: true, 'aria-hidden': 'true' });
  const inboxLabel = h('span', { class: 'visually-hidden' });
  const links = NAV.filter(([, , ok]) => ok(can))
    .map(([p, label]) => h('a', { href: APP + p, class: 'nav-link', 'data-nav': p }, label, p === 'inbox' ? [badge, inboxLabel] : null));
  const nav = h('nav', { 'aria-label': 'Main', class: 'main-nav' }, h('ul', { class: 'nav' }, links.map((a) => h('li', null, a))));
  const mark = () => links.forEach((a) => {
    if (here(a.dataset.nav)) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  });
  mark();
  const offs = [
    onRoute(mark),
    store.subscribe('unread', (u) => {
      badge.hidden = !u.total;
      badge.textContent = u.total > 99 ? '99+' : String(u.total);
      inboxLabel.textContent = u.total ? ` (${u.total} unread)` : '';
    }),
  ];
  return { nav, stop: () => offs.forEach((f) => f()) };
}

function liveIndicator() {
  const text = h('span', { class: 'live-text', text: 'Connecting…' });
  const live = h('span', { class: 'live', 'data-state': 'connecting', title: 'Live updates' }, h('span', { class: 'live-dot', 'aria-hidden': 'true' }), text);
  const off = store.subscribe('stream', (s) => {
    live.dataset.state = s;
    text.textContent = LIVE[s] || s;
  });
  return { live, stop: off };
}

// header fills topbar for the signed-in person; onSignOut runs when they
// sign out. It returns the function that takes it down.
export function header(topbar, { ctx, onSignOut }) {
  const can = store.get('can');
  const { nav, stop: stopNav } = navigation(can);
  const { live, stop: stopLive } = liveIndicator();
  const signOut = h('button', { type: 'button', class: 'btn btn-quiet', on: { click: () => { signOut.disabled = true; onSignOut(); } } }, 'Sign out');
  const search = searchField(ctx);
  topbar.replaceChildren(
    h('a', { class: 'brand', href: APP + 'inbox' }, 'Switchboard'),
    nav,
    h('div', { class: 'tools' }, search.el, can.send && can.inbox ? newTextButton(ctx) : null, notifyButton(ctx)),
    h('div', { class: 'who' }, live, h('span', { class: 'who-name', text: displayName(store.get('me')) }), signOut));
  topbar.hidden = false;
  return () => { stopNav(); stopLive(); search.stop(); };
}
