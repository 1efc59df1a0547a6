// Sign-in: the app is Switchboard's own public OAuth client
// ("switchboard-app", authorization code with PKCE S256). The access token
// lives in this module's memory only; the refresh token in sessionStorage
// (this tab, gone when it closes) so a reload stays signed in. Nothing goes
// to localStorage or into an address (docs/decisions.md, "The app's tokens").

export const CLIENT_ID = 'switchboard-app';
const ROOT = new URL('../../', import.meta.url).pathname;
const REFRESH_KEY = 'switchboard.refresh';
const PKCE_KEY = 'switchboard.pkce';
const NOTICE_KEY = 'switchboard.notice';

let access = null;        // the access token (memory only)
let accessExpires = 0;    // ms since epoch
let grantedScopes = [];
let refreshing = null;    // the refresh in flight, shared by every caller
let refreshTimer = 0;
let metadata = null;
const signedOutHandlers = new Set();

export function accessToken() { return access; }
export function scopes() { return grantedScopes.slice(); }
export function redirectURI() { return location.origin + ROOT + 'app/callback'; }

// onSignedOut registers fn(message) for when the session ends by itself
// (refresh refused): the app shows the signed-out screen, never a loop.
export function onSignedOut(fn) { signedOutHandlers.add(fn); return () => signedOutHandlers.delete(fn); }

async function discover() {
  if (metadata) return metadata;
  const resp = await fetch(ROOT + '.well-known/oauth-authorization-server', { cache: 'no-store', credentials: 'omit' });
  if (!resp.ok) throw new Error('The server did not describe its sign-in (HTTP ' + resp.status + ').');
  metadata = await resp.json();
  return metadata;
}

function b64url(bytes) {
  let s = '';
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function randomString(n = 32) {
  return b64url(crypto.getRandomValues(new Uint8Array(n)));
}

// signIn sends the browser to the server's sign-in page. returnTo is the
// app address to come back to.
export async function signIn(returnTo) {
  const md = await discover();
  const verifier = randomString(32);
  const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  const state = randomString(16);
  sessionStorage.setItem(PKCE_KEY, JSON.stringify({ verifier, state, returnTo: returnTo || ROOT + 'app/inbox' }));
  sessionStorage.removeItem(NOTICE_KEY);
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: CLIENT_ID,
    redirect_uri: redirectURI(),
    // Everything the server offers: the person's role bounds it server-side.
    scope: (md.scopes_supported || []).join(' '),
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  location.assign(md.authorization_endpoint + '?' + q.toString().replace(/\+/g, '%20'));
}

async function tokenRequest(form) {
  const md = await discover();
  const resp = await fetch(md.token_endpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...form, client_id: CLIENT_ID }),
    cache: 'no-store',
    credentials: 'omit',
  });
  let body = {};
  try { body = await resp.json(); } catch { /* not JSON */ }
  return { ok: resp.ok, status: resp.status, body };
}

function keep(tok) {
  access = tok.access_token;
  accessExpires = Date.now() + (tok.expires_in || 3600) * 1000;
  grantedScopes = (tok.scope || '').split(' ').filter(Boolean);
  if (tok.refresh_token) sessionStorage.setItem(REFRESH_KEY, tok.refresh_token);
  // Refresh a minute before the access token expires, so requests rarely
  // meet a 401.
  clearTimeout(refreshTimer);
  const wait = Math.max(10_000, accessExpires - Date.now() - 60_000);
  refreshTimer = setTimeout(() => { refreshAccess(); }, wait);
}

// handleCallback finishes the sign-in at /app/callback: checks the state,
// exchanges the code with the PKCE verifier and returns where to go next.
// The code and state leave the address bar at once.
export async function handleCallback() {
  const params = new URLSearchParams(location.search);
  history.replaceState(null, '', ROOT + 'app/callback');
  const pending = JSON.parse(sessionStorage.getItem(PKCE_KEY) || 'null');
  sessionStorage.removeItem(PKCE_KEY);
  if (params.get('error')) {
    throw new Error(params.get('error') === 'access_denied' ? 'Sign-in was cancelled.' : 'Sign-in failed (' + params.get('error') + ').');
  }
  if (!pending || !params.get('code') || params.get('state') !== pending.state) {
    throw new Error('This sign-in link is not from this tab, or it was already used. Sign in again.');
  }
  const r = await tokenRequest({ grant_type: 'authorization_code', code: params.get('code'), code_verifier: pending.verifier, redirect_uri: redirectURI() });
  if (!r.ok || !r.body.access_token) throw new Error('Sign-in failed: ' + (r.body.error_description || r.body.error || 'HTTP ' + r.status));
  keep(r.body);
  return pending.returnTo && pending.returnTo.startsWith(ROOT + 'app/') && !pending.returnTo.startsWith(ROOT + 'app/callback') ? pending.returnTo : ROOT + 'app/inbox';
}

export function hasSession() { return !!(access || sessionStorage.getItem(REFRESH_KEY)); }

// refreshAccess trades the refresh token for new tokens (it rotates). Every
// concurrent caller shares one request: two refreshes with the same token
// would look like a stolen token to the server and revoke the grant. A
// refused refresh (invalid_grant: reused, revoked, expired) signs out.
export function refreshAccess() {
  if (refreshing) return refreshing;
  const rt = sessionStorage.getItem(REFRESH_KEY);
  if (!rt) return Promise.resolve(false);
  refreshing = (async () => {
    try {
      const r = await tokenRequest({ grant_type: 'refresh_token', refresh_token: rt });
      if (r.ok && r.body.access_token) { keep(r.body); return true; }
      if (r.status === 400 || r.status === 401) {
        endSession('Your session has ended: it was signed out elsewhere, expired, or its sign-in was used twice (which ends it for safety). Sign in again to continue.');
      }
      return false;
    } catch {
      return false; // offline: keep the session, the caller shows the error
    } finally {
      refreshing = null;
    }
  })();
  return refreshing;
}

function clearSession() {
  access = null;
  grantedScopes = [];
  clearTimeout(refreshTimer);
  sessionStorage.removeItem(REFRESH_KEY);
}

function endSession(message) {
  clearSession();
  sessionStorage.setItem(NOTICE_KEY, message);
  for (const fn of signedOutHandlers) fn(message);
}

// takeNotice returns (once) why the last session ended, if it did.
export function takeNotice() {
  const m = sessionStorage.getItem(NOTICE_KEY);
  sessionStorage.removeItem(NOTICE_KEY);
  return m;
}

// signOut revokes the grant (revoking the refresh token revokes every token
// of the grant, RFC 7009) and forgets the tokens.
export async function signOut() {
  const rt = sessionStorage.getItem(REFRESH_KEY);
  let revoked = true;
  if (rt) {
    try {
      const md = await discover();
      const resp = await fetch(md.revocation_endpoint, {
        method: 'POST',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: rt, token_type_hint: 'refresh_token', client_id: CLIENT_ID }),
        cache: 'no-store',
        credentials: 'omit',
      });
      revoked = resp.ok;
    } catch {
      revoked = false;
    }
  }
  clearSession();
  sessionStorage.setItem(NOTICE_KEY, revoked ? 'You signed out.' : 'You signed out of this tab, but the server could not be told; the sign-in ends when it expires.');
}
