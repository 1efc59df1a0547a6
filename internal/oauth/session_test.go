package oauth_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/apitest"
	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/httpapi"
	"switchboard/internal/oauth"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/users"
	"switchboard/internal/webapp"
)

// The app's session (session.go) through the real router: the sign-in, the
// cookie, access tokens through it, sign-out, the limits, and what ends it.

type appEnv struct {
	st     *store.Store
	srv    *httptest.Server
	issuer string
	base   string // the issuer's path prefix ("" or "/sb")
	user   domain.User
}

// setupApp serves the router with the authorization server and the app,
// as serve does, for issuer (the test server's own address when empty).
func setupApp(t *testing.T, st *store.Store, issuer string, configure ...func(*oauth.Config)) *appEnv {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	if issuer == "" {
		issuer = "http://" + ts.Listener.Addr().String()
	}
	cfg := oauth.Config{Store: st, Issuer: issuer}
	for _, f := range configure {
		f(&cfg)
	}
	authz := oauth.New(cfg)
	_, refused, err := authz.RegisterApp(ctx)
	if err != nil || refused != "" {
		t.Fatalf("RegisterApp: %q, %v", refused, err)
	}
	files, err := webapp.New(oauth.AppPath, refused)
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = httpapi.New(httpapi.Config{
		Store: st, Auth: &auth.Authenticator{Store: st}, Users: users.New(users.Config{Store: st}),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), OAuth: authz.Handler(), App: files,
	})
	ts.Start()
	t.Cleanup(ts.Close)
	a := storetest.Account(t, st, &storetest.AccountOpts{Name: "Acme"})
	u := storetest.User(t, st, a.ID, &storetest.UserOpts{FirstName: "Amy", Password: password,
		Permissions: &domain.Permissions{Users: domain.UsersAll, Numbers: domain.NumbersAll}})
	iu, _ := url.Parse(issuer)
	return &appEnv{st: st, srv: ts, issuer: issuer, base: strings.TrimRight(iu.Path, "/"), user: u}
}

// appBrowser keeps cookies by hand, as a browser would for the issuer's
// origin (Secure ones too: the test server is plain http whatever the
// issuer says), and records every Set-Cookie it is sent.
type appBrowser struct {
	e       *appEnv
	cookies map[string]string
	set     []string // every Set-Cookie header seen, in order
}

func (e *appEnv) browser() *appBrowser { return &appBrowser{e: e, cookies: map[string]string{}} }

// do sends a request to the server for a path as the browser sees it (the
// issuer's prefix is the proxy's, taken off here).
func (b *appBrowser) do(t *testing.T, method, path string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	if u, err := url.Parse(path); err == nil && u.Host != "" {
		path = u.RequestURI()
	}
	path = strings.TrimPrefix(path, b.e.base)
	req, err := http.NewRequest(method, b.e.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	for k, v := range b.cookies {
		req.AddCookie(&http.Cookie{Name: k, Value: v})
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body := read(t, resp)
	b.set = append(b.set, resp.Header.Values("Set-Cookie")...)
	for _, c := range resp.Cookies() {
		if c.MaxAge < 0 {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c.Value
		}
	}
	return resp, body
}

// fromApp is what the app's fetch sends: its header and its origin.
func (e *appEnv) fromApp() http.Header {
	u, _ := url.Parse(e.issuer)
	return http.Header{"X-Switchboard-App": {"1"}, "Origin": {u.Scheme + "://" + u.Host}, "Sec-Fetch-Site": {"same-origin"}}
}

var valueRE = regexp.MustCompile(`^([^=]+)=[^;]*`)

// lastSetCookie is the last Set-Cookie for name, its value replaced by V.
func (b *appBrowser) lastSetCookie(name string) string {
	for i := len(b.set) - 1; i >= 0; i-- {
		if strings.HasPrefix(b.set[i], name+"=") {
			return valueRE.ReplaceAllString(b.set[i], "$1=V")
		}
	}
	return ""
}

// signIn goes through the app's sign-in as a browser: /app/signin, the
// sign-in page, the callback. It returns where the callback sent it.
func (b *appBrowser) signIn(t *testing.T, returnTo string) string {
	t.Helper()
	resp, body := b.do(t, "GET", b.e.base+"/app/signin?return_to="+url.QueryEscape(returnTo), nil)
	wantStatus(t, resp, body, http.StatusSeeOther)
	authorize := resp.Header.Get("Location")
	if !strings.HasPrefix(authorize, b.e.base+"/oauth/authorize?") || !strings.Contains(authorize, "client_id=switchboard-app") {
		t.Fatalf("/app/signin sent the browser to %q, want the authorization endpoint for the app", authorize)
	}
	resp, page := b.do(t, "GET", authorize, nil)
	wantStatus(t, resp, page, http.StatusOK)
	form := hidden(t, page)
	form.Set("username", b.e.user.Username)
	form.Set("password", password)
	req, _ := http.NewRequest("POST", b.e.srv.URL+"/oauth/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range b.cookies {
		req.AddCookie(&http.Cookie{Name: k, Value: v})
	}
	lr, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	lbody := read(t, lr)
	wantStatus(t, lr, lbody, http.StatusSeeOther)
	callback := lr.Header.Get("Location")
	if !strings.HasPrefix(callback, b.e.issuer+"/app/callback?") {
		t.Fatalf("after the password: Location %q, want the app's callback", callback)
	}
	resp, body = b.do(t, "GET", callback, nil)
	wantStatus(t, resp, body, http.StatusSeeOther)
	return resp.Header.Get("Location")
}

type sessionToken struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	Scope        string `json:"scope"`
	Session      int64  `json:"session"`
	RefreshToken string `json:"refresh_token"`
	Error        string `json:"error"`
	Reason       string `json:"reason"`
}

// token asks the session for an access token, as the app's fetch does.
func (b *appBrowser) token(t *testing.T) (int, sessionToken) {
	t.Helper()
	return b.tokenWith(t, b.e.fromApp())
}

func (b *appBrowser) tokenWith(t *testing.T, h http.Header) (int, sessionToken) {
	t.Helper()
	resp, body := b.do(t, "POST", b.e.base+"/app/session/token", h)
	var tok sessionToken
	if err := json.Unmarshal(body, &tok); err != nil {
		t.Fatalf("session token: %d %s", resp.StatusCode, body)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("session token: Cache-Control %q, want no-store", cc)
	}
	return resp.StatusCode, tok
}

// me reads GET /me with an access token through the OpenAPI-checked client.
func (e *appEnv) me(t *testing.T, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", e.srv.URL+"/api/public/v1/me", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := apitest.Client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	read(t, resp)
	return resp.StatusCode
}

func (e *appEnv) grants(t *testing.T) []store.OAuthGrant {
	t.Helper()
	g, err := e.st.OAuthGrants(ctx, e.user.AccountID, e.user.ID)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestAppSessionSignIn: the sign-in ends with an HttpOnly, SameSite=Strict
// cookie scoped to the app (Secure and __Secure- over https), no token in
// any address or answer but the access token the session hands out, and
// that token works on the public API. A second tab of the same browser
// gets its own access token from the same session.
func TestAppSessionSignIn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		for _, tc := range []struct {
			issuer, session, signin string
		}{
			{"", "switchboard-session=V; Path=/app/; Max-Age=2592000; HttpOnly; SameSite=Strict",
				"switchboard-signin=V; Path=/app/; Max-Age=600; HttpOnly; SameSite=Lax"},
			{"https://sb.example/sb", "__Secure-switchboard-session=V; Path=/sb/app/; Max-Age=2592000; HttpOnly; Secure; SameSite=Strict",
				"__Secure-switchboard-signin=V; Path=/sb/app/; Max-Age=600; HttpOnly; Secure; SameSite=Lax"},
		} {
			func() {
				e := setupApp(t, st, tc.issuer)
				b := e.browser()
				landed := b.signIn(t, e.base+"/app/inbox/14155550100/12125550100?x=1")
				if landed != e.base+"/app/inbox/14155550100/12125550100?x=1" {
					t.Errorf("%s: the callback sent the browser to %q, want where it started", tc.issuer, landed)
				}
				name := valueRE.FindStringSubmatch(tc.session)[1]
				if got := b.lastSetCookie(name); got != tc.session {
					t.Errorf("%s: session cookie\n got %q\nwant %q", tc.issuer, got, tc.session)
				}
				signin := valueRE.FindStringSubmatch(tc.signin)[1]
				if got := b.set[0]; valueRE.ReplaceAllString(got, "$1=V") != tc.signin {
					t.Errorf("%s: sign-in cookie\n got %q\nwant %q", tc.issuer, got, tc.signin)
				}
				if _, ok := b.cookies[signin]; ok {
					t.Errorf("%s: the sign-in cookie outlived the callback", tc.issuer)
				}
				if v := b.cookies[name]; !strings.HasPrefix(v, oauth.SessionPrefix) {
					t.Fatalf("%s: session cookie value %q", tc.issuer, v)
				}

				status, tok := b.token(t)
				if status != http.StatusOK || !strings.HasPrefix(tok.AccessToken, oauth.AccessTokenPrefix) || tok.TokenType != "Bearer" ||
					tok.ExpiresIn != int64(oauth.DefaultSessionAccessTTL/time.Second) || tok.RefreshToken != "" || tok.Session == 0 {
					t.Fatalf("%s: session token: %d %+v", tc.issuer, status, tok)
				}
				if !strings.Contains(tok.Scope, "messages:read") || !strings.Contains(tok.Scope, "sms:send") {
					t.Errorf("%s: scope %q, want every scope the role allows", tc.issuer, tok.Scope)
				}
				if got := e.me(t, tok.AccessToken); got != http.StatusOK {
					t.Errorf("%s: GET /me with the session's access token: %d", tc.issuer, got)
				}
				// Another tab: the same session, a token of its own; the
				// first tab's token still works.
				status, other := b.token(t)
				if status != http.StatusOK || other.AccessToken == tok.AccessToken || other.Session != tok.Session {
					t.Fatalf("%s: a second tab: %d %+v", tc.issuer, status, other)
				}
				if e.me(t, tok.AccessToken) != http.StatusOK || e.me(t, other.AccessToken) != http.StatusOK {
					t.Errorf("%s: both tabs' tokens should work", tc.issuer)
				}
			}()
		}
	})
}

// TestAppSessionConcurrentTabs: tabs asking at once rotate the session's
// refresh token one after the other: none is taken for a replay (which
// would revoke the grant).
func TestAppSessionConcurrentTabs(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := setupApp(t, st, "")
		b := e.browser()
		b.signIn(t, "/app/inbox")
		cookie := b.cookies["switchboard-session"]
		var wg sync.WaitGroup
		statuses := make([]int, 8)
		for i := range statuses {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest("POST", e.srv.URL+"/app/session/token", nil)
				req.Header = e.fromApp()
				req.AddCookie(&http.Cookie{Name: "switchboard-session", Value: cookie})
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				statuses[i] = resp.StatusCode
			}()
		}
		wg.Wait()
		for i, s := range statuses {
			if s != http.StatusOK {
				t.Errorf("tab %d: status %d, want 200", i, s)
			}
		}
		if g := e.grants(t); len(g) != 1 || g[0].RevokedAt != nil {
			t.Errorf("grants after concurrent tabs: %+v, want one, not revoked", g)
		}
	})
}

// TestAppSessionCSRF: the session endpoints answer only the app's own page:
// its header, its origin; a preflight is never approved; the callback
// redeems nothing this browser did not start; and the public token endpoint
// never serves the app's client.
func TestAppSessionCSRF(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := setupApp(t, st, "")
		b := e.browser()
		b.signIn(t, "/app/inbox")
		good := e.fromApp()
		for _, tc := range []struct {
			name string
			h    http.Header
		}{
			{"no header", http.Header{"Origin": good["Origin"], "Sec-Fetch-Site": {"same-origin"}}},
			{"wrong header value", http.Header{"X-Switchboard-App": {"yes"}, "Origin": good["Origin"]}},
			{"another origin", http.Header{"X-Switchboard-App": {"1"}, "Origin": {"https://evil.example"}}},
			{"cross-site fetch", http.Header{"X-Switchboard-App": {"1"}, "Sec-Fetch-Site": {"cross-site"}}},
			{"same-site fetch (a sibling subdomain)", http.Header{"X-Switchboard-App": {"1"}, "Origin": good["Origin"], "Sec-Fetch-Site": {"same-site"}}},
			{"no origin at all", http.Header{"X-Switchboard-App": {"1"}}},
		} {
			status, tok := b.tokenWith(t, tc.h)
			if status != http.StatusForbidden || tok.AccessToken != "" || tok.Error != "invalid_request" {
				t.Errorf("token, %s: %d %+v, want 403 invalid_request", tc.name, status, tok)
			}
			resp, body := b.do(t, "DELETE", "/app/session", tc.h)
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("sign-out, %s: %d %s, want 403", tc.name, resp.StatusCode, body)
			}
		}
		// Nothing refused above touched the session.
		if status, _ := b.token(t); status != http.StatusOK {
			t.Fatalf("after the refusals: %d, want the session intact", status)
		}
		resp, _ := b.do(t, "OPTIONS", "/app/session/token", http.Header{"Origin": {"https://evil.example"}, "Access-Control-Request-Method": {"POST"},
			"Access-Control-Request-Headers": {"x-switchboard-app"}})
		if acao := resp.Header.Get("Access-Control-Allow-Origin"); acao != "" {
			t.Errorf("preflight from another origin: Access-Control-Allow-Origin %q, want none", acao)
		}
		// A GET is no way in either.
		if resp, _ := b.do(t, "GET", "/app/session/token", good); resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("GET /app/session/token: %d, want 405", resp.StatusCode)
		}

		// A forged callback (someone else's code, or a state this browser
		// never made) lands on the signed-out screen without a session.
		fresh := e.browser()
		resp, _ = fresh.do(t, "GET", "/app/callback?code="+oauth.CodePrefix+strings.Repeat("A", 43)+"&state=forged", nil)
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/app/signed-out?reason=stale" {
			t.Errorf("forged callback: %d to %q, want 303 to /app/signed-out?reason=stale", resp.StatusCode, loc)
		}
		fresh.do(t, "GET", "/app/signin", nil)
		resp, _ = fresh.do(t, "GET", "/app/callback?code="+oauth.CodePrefix+strings.Repeat("A", 43)+"&state=forged", nil)
		if loc := resp.Header.Get("Location"); loc != "/app/signed-out?reason=stale" {
			t.Errorf("callback with another state: to %q, want the stale sign-in", loc)
		}
		if _, ok := fresh.cookies["switchboard-session"]; ok {
			t.Errorf("a forged callback set a session cookie")
		}
		// A browser signed in, back at an old callback address: to the app.
		resp, _ = b.do(t, "GET", "/app/callback?code="+oauth.CodePrefix+strings.Repeat("A", 43)+"&state=old", nil)
		if loc := resp.Header.Get("Location"); loc != "/app/inbox" {
			t.Errorf("an old callback in a signed-in browser: to %q, want /app/inbox", loc)
		}
		if status, _ := b.token(t); status != http.StatusOK {
			t.Errorf("the session after an old callback: %d, want it intact", status)
		}
		// An open redirect through return_to goes to the inbox instead.
		for _, evil := range []string{"https://evil.example/app/", "//evil.example/app/", "/\\evil.example", "/oauth/authorize", "/app/callback?code=x", "/app/signin", "/app/session/token"} {
			resp, _ := fresh.do(t, "GET", "/app/signin?return_to="+url.QueryEscape(evil), nil)
			c := fresh.cookies["switchboard-signin"]
			_, ret, _ := strings.Cut(c, ".")
			if resp.StatusCode != http.StatusSeeOther || ret != "L2FwcC9pbmJveA" { // base64url("/app/inbox")
				t.Errorf("return_to %q: kept %q, want /app/inbox", evil, ret)
			}
		}

		// The app's client at the public token endpoint: refused.
		status, tok := (&env{url: e.srv.URL}).token(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {oauth.RefreshTokenPrefix + strings.Repeat("A", 43)},
			"client_id": {store.AppClientID}})
		if status != http.StatusBadRequest || tok.AccessToken != "" {
			t.Errorf("the public token endpoint for the app's client: %d %+v, want 400 unauthorized_client", status, tok)
		}
	})
}

// TestAppSessionSignOut: signing out revokes the grant, so every tab's
// access token stops working at once, drops the cookie, and the session
// answers no one after; signing in again in the same browser ends the
// session it replaces.
func TestAppSessionSignOut(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := setupApp(t, st, "")
		b := e.browser()
		b.signIn(t, "/app/inbox")
		_, one := b.token(t)
		_, two := b.token(t)
		kept := b.cookies["switchboard-session"]
		resp, body := b.do(t, "DELETE", "/app/session", e.fromApp())
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("sign out: %d %s", resp.StatusCode, body)
		}
		if got, want := b.lastSetCookie("switchboard-session"), "switchboard-session=V; Path=/app/; Max-Age=0; HttpOnly; SameSite=Strict"; got != want {
			t.Errorf("sign-out cookie %q, want %q", got, want)
		}
		for _, tok := range []string{one.AccessToken, two.AccessToken} {
			if got := e.me(t, tok); got != http.StatusUnauthorized {
				t.Errorf("a tab's access token after sign-out: %d, want 401", got)
			}
		}
		if g := e.grants(t); len(g) != 1 || g[0].RevokedAt == nil {
			t.Errorf("grants after sign-out: %+v, want the one revoked", g)
		}
		// Another tab that kept the old cookie value (or a copy of it).
		b.cookies["switchboard-session"] = kept
		if status, tok := b.token(t); status != http.StatusUnauthorized || tok.Error != "login_required" || tok.Reason != "unknown" || tok.AccessToken != "" {
			t.Errorf("the session after sign-out: %d %+v, want 401 login_required (unknown)", status, tok)
		}

		// Signed in twice in one browser: the first session ends.
		b = e.browser()
		b.signIn(t, "/app/inbox")
		_, first := b.token(t)
		b.signIn(t, "/app/inbox")
		_, second := b.token(t)
		if first.Session == second.Session || e.me(t, first.AccessToken) != http.StatusUnauthorized || e.me(t, second.AccessToken) != http.StatusOK {
			t.Errorf("signing in again: sessions %d and %d; the first's token should be revoked, the second's work", first.Session, second.Session)
		}
	})
}

// TestAppSessionLimits: a session unused for the idle limit ends, and one
// used all along ends at the absolute limit; either way its grant is
// revoked and its cookie dropped. The clock is the store's.
func TestAppSessionLimits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := setupApp(t, st, "", func(c *oauth.Config) { c.SessionIdle, c.SessionLifetime = time.Hour, 3*time.Hour })
		start := time.Now()
		at := func(d time.Duration) { st.SetClock(func() time.Time { return start.Add(d) }) }
		t.Cleanup(func() { st.SetClock(func() time.Time { return time.Now().UTC() }) })

		at(0)
		idle := e.browser()
		idle.signIn(t, "/app/inbox")
		at(59 * time.Minute)
		if status, _ := idle.token(t); status != http.StatusOK {
			t.Fatalf("59 minutes after signing in: %d, want a token", status)
		}
		at(59*time.Minute + time.Hour)
		status, tok := idle.token(t)
		if status != http.StatusUnauthorized || tok.Reason != "idle" {
			t.Errorf("an hour unused: %d %+v, want 401 idle", status, tok)
		}
		if _, ok := idle.cookies["switchboard-session"]; ok {
			t.Errorf("the idle session's cookie was kept")
		}

		at(0)
		busy := e.browser()
		busy.signIn(t, "/app/inbox")
		var last sessionToken
		for d := 50 * time.Minute; d < 3*time.Hour; d += 50 * time.Minute {
			at(d)
			status, tok := busy.token(t)
			if status != http.StatusOK {
				t.Fatalf("used every 50 minutes, at %v: %d %+v", d, status, tok)
			}
			last = tok
		}
		at(3 * time.Hour)
		if status, tok := busy.token(t); status != http.StatusUnauthorized || tok.Reason != "expired" {
			t.Errorf("at the absolute limit: %d %+v, want 401 expired", status, tok)
		}
		if got := e.me(t, last.AccessToken); got != http.StatusUnauthorized {
			t.Errorf("the last access token once the session expired: %d, want 401 (its grant revoked)", got)
		}
		for _, g := range e.grants(t) {
			if g.RevokedAt == nil {
				t.Errorf("grant %d of an ended session is not revoked", g.ID)
			}
		}
	})
}

// TestAppSessionOffboarding: disabling a person or resetting their password
// ends their app sessions (the grant is revoked; the session says so).
func TestAppSessionOffboarding(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := setupApp(t, st, "")
		for _, tc := range []struct {
			name string
			do   func() error
		}{
			{"disabled", func() error { return st.SetUserDisabled(ctx, e.user.AccountID, e.user.ID, true) }},
			{"password reset", func() error {
				h, err := auth.HashPassword("a new password, after a leak")
				if err != nil {
					return err
				}
				return st.SetUserPassword(ctx, e.user.AccountID, e.user.ID, h)
			}},
		} {
			// Enabled, with the password the sign-in types.
			h, err := auth.HashPassword(password)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.SetUserDisabled(ctx, e.user.AccountID, e.user.ID, false); err != nil {
				t.Fatal(err)
			}
			if err := st.SetUserPassword(ctx, e.user.AccountID, e.user.ID, h); err != nil {
				t.Fatal(err)
			}
			b := e.browser()
			b.signIn(t, "/app/inbox")
			_, tok := b.token(t)
			if err := tc.do(); err != nil {
				t.Fatal(err)
			}
			if status, ended := b.token(t); status != http.StatusUnauthorized || ended.Reason != "revoked" {
				t.Errorf("%s: the session after: %d %+v, want 401 revoked", tc.name, status, ended)
			}
			if got := e.me(t, tok.AccessToken); got != http.StatusUnauthorized {
				t.Errorf("%s: the access token after: %d, want 401", tc.name, got)
			}
		}
	})
}

// TestAppSignInPage: the app's own sign-in reads as signing in to
// Switchboard; another application's still says who asks.
func TestAppSignInPage(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := setupApp(t, st, "")
		b := e.browser()
		resp, _ := b.do(t, "GET", "/app/signin", nil)
		resp, page := b.do(t, "GET", resp.Header.Get("Location"), nil)
		wantStatus(t, resp, page, http.StatusOK)
		for _, want := range []string{"<h1>Sign in to Switchboard</h1>", "<title>Sign in · Switchboard</title>"} {
			if !strings.Contains(string(page), want) {
				t.Errorf("the app's sign-in page lacks %q", want)
			}
		}
		for _, not := range []string{"wants to", "asks for", "say no"} {
			if strings.Contains(string(page), not) {
				t.Errorf("the app's sign-in page reads as a third party asking: it says %q", not)
			}
		}
		o := setup(t, st)
		resp, page = o.get(t, browser(t), o.authorizePath(nil))
		wantStatus(t, resp, page, http.StatusOK)
		if !strings.Contains(string(page), "<strong>Acme CRM</strong> wants to use your Switchboard account") || strings.Contains(string(page), "Sign in to Switchboard") {
			t.Errorf("a third party's sign-in page no longer says who asks:\n%s", page)
		}
	})
}
