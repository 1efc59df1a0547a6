// Screens are addresses under /app/. Links are real <a href="/app/…">
// elements; a plain click is handled here (no page load), a middle-click or
// a modified click opens a new tab as usual.
import { spinner, showError } from './ui.js';

const APP = new URL('../', import.meta.url).pathname; // "/app/"
const routes = [];
let current = null; // {route, params, result}
let mainEl = null;
let ctxRef = null;
let seq = 0;
const listeners = new Set();

// onRoute calls fn(location) after every change of address the app makes
// or the browser's back and forward buttons make; it returns the function
// that stops it.
export function onRoute(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function tell() {
  for (const fn of [...listeners]) {
    try { fn(location); } catch (err) { console.error(err); }
  }
}

// replaceAddress changes the address without showing another screen (a
// screen keeping its own state in the query string) and tells the
// listeners.
export function replaceAddress(path) {
  history.replaceState(history.state, '', path);
  tell();
}

// route registers a screen. pattern: '/calls/:callid' (relative to /app).
// loader: () => import('./x.js'), whose module exports
// render(main, params, ctx) and may return a cleanup function, or an object
// {cleanup, update(params)}: update is called instead of a new render when
// the next address is served by the same loader (the inbox keeps its list
// while threads change).
export function route(pattern, loader) {
  const names = [];
  const re = new RegExp('^' + pattern.replace(/\/:([a-zA-Z]+)/g, (_, n) => { names.push(n); return '/([^/]+)'; }).replace(/\/$/, '') + '/?$');
  routes.push({ pattern, loader, re, names });
}

function match(path) {
  const rel = '/' + path.slice(APP.length);
  for (const r of routes) {
    const m = rel.match(r.re);
    if (m) {
      const params = {};
      r.names.forEach((n, i) => { params[n] = decodeURIComponent(m[i + 1]); });
      return { route: r, params };
    }
  }
  return null;
}

// navigate goes to an app address ('/app/inbox', or relative to /app:
// '/inbox').
export function navigate(path, { replace = false } = {}) {
  if (!path.startsWith(APP)) path = APP.slice(0, -1) + path;
  if (replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  tell();
  return show();
}

// reload renders the current screen again from the server (after a
// stream reset).
export function reload() {
  return show(true);
}

export function start(main, ctx) {
  mainEl = main;
  ctxRef = ctx;
  document.addEventListener('click', (e) => {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = e.target.closest('a[href]');
    if (!a || a.target || a.hasAttribute('download')) return;
    const u = new URL(a.href, location.href);
    if (u.origin !== location.origin || !u.pathname.startsWith(APP) || u.pathname.startsWith(APP + 'callback')) return;
    e.preventDefault();
    if (u.pathname + u.search !== location.pathname + location.search) navigate(u.pathname + u.search);
  });
  addEventListener('popstate', () => { tell(); show(); });
  return show();
}

async function show(force = false) {
  const my = ++seq;
  const m = match(location.pathname);
  const params = { ...(m ? m.params : {}), query: new URLSearchParams(location.search) };
  if (!m) {
    cleanup();
    mainEl.replaceChildren();
    showError(mainEl, new Error('There is no screen at this address.'));
    return;
  }
  if (!force && current && current.route.loader === m.route.loader && current.result && typeof current.result.update === 'function') {
    current.route = m.route;
    current.params = params;
    await current.result.update(params);
    return;
  }
  cleanup();
  mainEl.replaceChildren(spinner());
  let mod;
  try {
    mod = await m.route.loader();
  } catch (err) {
    if (my !== seq) return;
    mainEl.replaceChildren();
    showError(mainEl, new Error('This screen could not be loaded. Reload the page to try again.'));
    return;
  }
  if (my !== seq) return;
  mainEl.replaceChildren();
  current = { route: m.route, params, result: null };
  try {
    const result = await mod.render(mainEl, params, ctxRef);
    if (my !== seq) {
      runCleanup(result);
      return;
    }
    current.result = result;
  } catch (err) {
    if (my !== seq) return;
    showError(mainEl, err);
  }
}

function runCleanup(result) {
  try {
    if (typeof result === 'function') result();
    else if (result && typeof result.cleanup === 'function') result.cleanup();
  } catch (err) {
    console.error(err);
  }
}

function cleanup() {
  if (current) runCleanup(current.result);
  current = null;
}
