// Sign-in: the server is the app's OAuth client, a token-mediating backend
// (docs/decisions.md, "The app's session"). It signs the person in
// (/app/signin, then /app/callback), keeps the refresh token itself and
// gives the browser an HttpOnly, SameSite=Strict cookie no script can read.
// Through it this module asks for short-lived access tokens
// (POST /app/session/token) and keeps them in its memory only: nothing
// holding a token is ever written to storage, an address or a readable
// cookie. Every tab of the browser shares the one session, so a new tab is
// signed in, and signing out in one tab signs out all of them.

const ROOT = new URL('../../', import.meta.url).pathname;
const APP = ROOT + 'app/';
const NOTICE_KEY = 'switchboard.notice'; // why the last session ended: words, no secret
// Sent on every session request: another origin's page cannot send it
// without a CORS preflight, which the server never approves.
const SESSION_HEADERS = { 'X-Switchboard-App': '1' };

let access = null;        // the access token (memory only)
let accessExpires = 0;    // ms since epoch
let grantedScopes = [];
let session = null;       // the session's id: another one means a new sign-in
let refreshing = null;    // the request in flight, shared by every caller
let ended = null;         // why the last request found no session
let out = location.pathname === APP + 'signed-out'; // this tab shows that it is signed out
const signedOutHandlers = new Set();

// The tabs of this browser tell each other of sign-ins and sign-outs.
const channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel('switchboard-session:' + ROOT) : null;

export function accessToken() { return access; }
export function scopes() { return grantedScopes.slice(); }

// onSignedOut registers fn(message) for when the session ends while the
// app runs (signed out in another tab, expired, revoked): the app shows the
// signed-out screen, never a loop.
export function onSignedOut(fn) { signedOutHandlers.add(fn); return () => signedOutHandlers.delete(fn); }

// signIn sends the browser to the server's sign-in; returnTo is the app
// address to come back to.
export function signIn(returnTo) {
  sessionStorage.removeItem(NOTICE_KEY);
  location.assign(APP + 'signin?return_to=' + encodeURIComponent(returnTo || APP + 'inbox'));
}

const endedWords = {
  unknown: 'You were signed out, in this tab or another. Sign in again to continue.',
  idle: 'Your session ended because the app was not used for a while. Sign in again to continue.',
  expired: 'Your session reached its time limit. Sign in again to continue.',
  revoked: 'Your session has ended: it was signed out elsewhere or by an administrator. Sign in again to continue.',
};

// signInFailed says why a sign-in did not finish (/app/signed-out?reason=).
export function signInFailed(reason) {
  return {
    cancelled: 'Sign-in was cancelled.',
    stale: 'This sign-in was not started in this browser, took too long, or a newer one replaced it. Sign in again.',
  }[reason] || 'Sign-in failed. Try again.';
}

function keep(tok) {
  if (session !== null && tok.session !== session) {
    // The browser signed in again meanwhile, perhaps as someone else: this
    // tab starts over as that session rather than mix two people's data.
    location.reload();
    return;
  }
  const first = session === null;
  session = tok.session;
  access = tok.access_token;
  accessExpires = Date.now() + (tok.expires_in || 900) * 1000;
  grantedScopes = (tok.scope || '').split(' ').filter(Boolean);
  ended = null;
  if (first) channel?.postMessage({ type: 'session', session });
}

// refreshAccess asks the session for a new access token; every concurrent
// caller shares one request. It resolves true with a token, false without:
// the session is gone (a tab that had one is signed out, once) or the
// server could not be reached (the session is kept; the caller says so).
export function refreshAccess() {
  if (refreshing) return refreshing;
  refreshing = (async () => {
    try {
      const resp = await fetch(APP + 'session/token', { method: 'POST', headers: SESSION_HEADERS, cache: 'no-store', credentials: 'same-origin' });
      let body = {};
      try { body = await resp.json(); } catch { /* not JSON */ }
      if (resp.ok && body.access_token) { keep(body); return true; }
      if (resp.status === 401) {
        ended = body.reason || 'unknown';
        if (session !== null) endSession(endedWords[ended] || endedWords.unknown);
      }
      return false;
    } catch {
      return false; // offline
    } finally {
      refreshing = null;
    }
  })();
  return refreshing;
}

// freshAccessToken is the access token, asked for anew when it is about to
// expire. Tokens are asked for only when the app needs one, so a browser
// left alone lets the session's idle limit run.
export async function freshAccessToken() {
  if (!access || Date.now() > accessExpires - 30_000) await refreshAccess();
  return access;
}

// start gets the tab's first access token: 'ok'; 'none' when the browser
// has no session (never signed in, or signed out); 'offline'; or, for a
// session that ended by a limit or a revocation, the words saying so.
export async function start() {
  if (await refreshAccess()) return 'ok';
  out = true;
  if (ended === null) return 'offline';
  if (ended === 'unknown') return 'none';
  return endedWords[ended] || endedWords.unknown;
}

function clearSession() {
  access = null;
  accessExpires = 0;
  grantedScopes = [];
  session = null;
}

function endSession(message) {
  clearSession();
  out = true;
  sessionStorage.setItem(NOTICE_KEY, message);
  for (const fn of signedOutHandlers) fn(message);
}

// takeNotice returns (once) why the last session ended, if it did.
export function takeNotice() {
  const m = sessionStorage.getItem(NOTICE_KEY);
  sessionStorage.removeItem(NOTICE_KEY);
  return m;
}

// signOut ends the session on the server (which revokes the grant, so the
// other tabs' access tokens stop working too) and tells the other tabs.
export async function signOut() {
  let done = false;
  try {
    const resp = await fetch(APP + 'session', { method: 'DELETE', headers: SESSION_HEADERS, cache: 'no-store', credentials: 'same-origin' });
    done = resp.ok;
  } catch {
    done = false;
  }
  clearSession();
  out = true;
  if (done) channel?.postMessage({ type: 'signed-out' });
  sessionStorage.setItem(NOTICE_KEY, done ? 'You signed out.' : 'The server could not be reached, so only this tab is signed out: your other tabs may still be signed in. Sign out again once the connection is back.');
}

channel?.addEventListener('message', (e) => {
  const m = e.data || {};
  // A tab that found its session gone a moment before the word came (the
  // sign-out's revocation cut its stream first) says why, as the others do.
  if (m.type === 'signed-out' && (session !== null || (out && ended !== null))) {
    endSession('You signed out in another tab.');
  } else if (m.type === 'session' && (out || (session !== null && m.session !== session))) {
    // Another tab signed in: this one, signed out or someone else's, starts
    // over as that session. (A tab still starting gets it by itself.)
    location.reload();
  }
});
