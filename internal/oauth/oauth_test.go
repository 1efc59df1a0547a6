package oauth_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/oauth"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

var ctx = context.Background()

const (
	password = "correct horse battery"
	redirect = "https://app.example/callback"
	verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk-more-entropy"
)

type env struct {
	st     *store.Store
	url    string // the issuer
	user   domain.User
	client string // client_id registered with redirect
}

// setup starts the authorization server over a fresh store, with one user
// (amy / password) and one registered client. configure, when given, adjusts
// the server's configuration.
func setup(t *testing.T, st *store.Store, configure ...func(*oauth.Config)) *env {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	issuer := "http://" + ts.Listener.Addr().String()
	cfg := oauth.Config{Store: st, Issuer: issuer}
	for _, f := range configure {
		f(&cfg)
	}
	ts.Config.Handler = oauth.New(cfg).Handler()
	ts.Start()
	t.Cleanup(ts.Close)

	a := storetest.Account(t, st, &storetest.AccountOpts{Name: "Acme"})
	u := storetest.User(t, st, a.ID, &storetest.UserOpts{FirstName: "Amy", Username: "amy", Password: password})
	if err := st.AllowHost(ctx, "app.example"); err != nil {
		t.Fatal(err)
	}
	e := &env{st: st, url: issuer, user: u}
	resp, body := e.postJSON(t, "/api/v1/oauth/register", `{"client_name":"Acme CRM","redirect_uris":["`+redirect+`"]}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register: %d %s", resp.StatusCode, body)
	}
	var reg struct {
		ClientID string `json:"client_id"`
	}
	json.Unmarshal(body, &reg)
	e.client = reg.ClientID
	return e
}

// browser is a cookie-keeping client that does not follow redirects.
func browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func read(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (e *env) postJSON(t *testing.T, path, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(e.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp, read(t, resp)
}

func (e *env) postForm(t *testing.T, c *http.Client, path string, form url.Values) (*http.Response, []byte) {
	t.Helper()
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.PostForm(e.url+path, form)
	if err != nil {
		t.Fatal(err)
	}
	return resp, read(t, resp)
}

func (e *env) get(t *testing.T, c *http.Client, path string) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Get(e.url + path)
	if err != nil {
		t.Fatal(err)
	}
	return resp, read(t, resp)
}

func challenge(v string) string {
	sum := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// authorizePath builds an authorize URL; overrides replace (or, with "",
// remove) the defaults.
func (e *env) authorizePath(overrides map[string]string) string {
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {e.client},
		"redirect_uri":          {redirect},
		"scope":                 {"sms:read sms:send"},
		"state":                 {"st-123"},
		"code_challenge":        {challenge(verifier)},
		"code_challenge_method": {"S256"},
	}
	for k, v := range overrides {
		if v == "" {
			q.Del(k)
		} else {
			q.Set(k, v)
		}
	}
	return "/oauth/authorize?" + q.Encode()
}

var hiddenRE = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

func hidden(t *testing.T, page []byte) url.Values {
	t.Helper()
	v := url.Values{}
	for _, m := range hiddenRE.FindAllSubmatch(page, -1) {
		v.Set(string(m[1]), html.UnescapeString(string(m[2])))
	}
	if v.Get("request") == "" || v.Get("csrf_token") == "" {
		t.Fatalf("page has no request/csrf_token fields:\n%s", page)
	}
	return v
}

func wantStatus(t *testing.T, resp *http.Response, body []byte, want int) {
	t.Helper()
	if resp.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d; body:\n%s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, want, body)
	}
}

func wantPageHeaders(t *testing.T, resp *http.Response) {
	t.Helper()
	h := resp.Header
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "style-src 'unsafe-inline'", "form-action 'self'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	for k, want := range map[string]string{"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"} {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

// signIn opens the authorize page and signs in; it returns the consent
// page's form fields.
func (e *env) signIn(t *testing.T, b *http.Client, overrides map[string]string) url.Values {
	t.Helper()
	resp, page := e.get(t, b, e.authorizePath(overrides))
	wantStatus(t, resp, page, http.StatusOK)
	form := hidden(t, page)
	form.Set("username", "amy")
	form.Set("password", password)
	resp, body := e.postForm(t, b, "/oauth/login", form)
	wantStatus(t, resp, body, http.StatusSeeOther)
	resp, page = e.get(t, b, resp.Header.Get("Location"))
	wantStatus(t, resp, page, http.StatusOK)
	return hidden(t, page)
}

// code runs the browser part of the flow and returns the authorization code.
func (e *env) code(t *testing.T) string {
	t.Helper()
	b := browser(t)
	form := e.signIn(t, b, nil)
	form.Set("decision", "approve")
	resp, body := e.postForm(t, b, "/oauth/consent", form)
	wantStatus(t, resp, body, http.StatusSeeOther)
	loc, _ := url.Parse(resp.Header.Get("Location"))
	return loc.Query().Get("code")
}

type tokens struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
	Error        string `json:"error"`
	Description  string `json:"error_description"`
}

func (e *env) token(t *testing.T, form url.Values) (int, tokens) {
	t.Helper()
	resp, body := e.postForm(t, nil, "/api/v1/oauth/token", form)
	if resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Pragma") != "no-cache" {
		t.Errorf("token response caching headers = %q / %q, want no-store / no-cache", resp.Header.Get("Cache-Control"), resp.Header.Get("Pragma"))
	}
	var tok tokens
	if err := json.Unmarshal(body, &tok); err != nil {
		t.Fatalf("token response %d is not JSON: %s", resp.StatusCode, body)
	}
	return resp.StatusCode, tok
}

func (e *env) exchange(t *testing.T, code string) (int, tokens) {
	t.Helper()
	return e.token(t, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
		"client_id": {e.client}, "redirect_uri": {redirect}})
}

func (e *env) refresh(t *testing.T, refresh string) (int, tokens) {
	t.Helper()
	return e.token(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {e.client}})
}

func (e *env) wantAccess(t *testing.T, access string, live bool) {
	t.Helper()
	tok, err := e.st.AccessTokenByHash(ctx, auth.HashSecret(access))
	switch {
	case live && (err != nil || tok.UserID != e.user.ID || tok.AccountID != e.user.AccountID):
		t.Fatalf("AccessTokenByHash = %+v, %v; want a live token of user %d", tok, err, e.user.ID)
	case !live && !domain.IsNotFound(err):
		t.Fatalf("AccessTokenByHash = %+v, %v; want not_found", tok, err)
	}
}

func wantGrantError(t *testing.T, status int, tok tokens, wantStatus int, want string) {
	t.Helper()
	if status != wantStatus || tok.Error != want || tok.AccessToken != "" {
		t.Fatalf("got %d %+v, want %d %s", status, tok, wantStatus, want)
	}
}

func TestDiscovery(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := setup(t, st)
		resp, body := e.get(t, http.DefaultClient, "/.well-known/oauth-authorization-server")
		wantStatus(t, resp, body, http.StatusOK)
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		for k, want := range map[string]string{
			"issuer":                 e.url,
			"authorization_endpoint": e.url + "/oauth/authorize",
			"token_endpoint":         e.url + "/api/v1/oauth/token",
			"registration_endpoint":  e.url + "/api/v1/oauth/register",
			"revocation_endpoint":    e.url + "/api/v1/oauth/revoke",
		} {
			if m[k] != want {
				t.Errorf("%s = %v, want %s", k, m[k], want)
			}
		}
		list := func(k string) string {
			var out []string
			for _, v := range m[k].([]any) {
				out = append(out, v.(string))
			}
			return strings.Join(out, " ")
		}
		for k, want := range map[string]string{
			"scopes_supported":                           strings.Join(auth.Strings(auth.AllScopes), " "),
			"response_types_supported":                   "code",
			"grant_types_supported":                      "authorization_code refresh_token",
			"code_challenge_methods_supported":           "S256",
			"token_endpoint_auth_methods_supported":      "none",
			"revocation_endpoint_auth_methods_supported": "none",
		} {
			if got := list(k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		if s := list("scopes_supported"); !strings.Contains(s, "messages:read") || !strings.Contains(s, "messages:write") {
			t.Errorf("scopes_supported %q lacks the messages scopes", s)
		}
		if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "max-age") {
			t.Errorf("Cache-Control = %q, want a max-age", cc)
		}
	})
}

func TestRegister(t *testing.T) {
	st := storetest.Open(t, store.SQLite)
	e := setup(t, st)
	for _, tc := range []struct {
		name, contentType, body string
		status                  int
		errCode                 string
	}{
		{"good", "application/json", `{"client_name":"CRM","redirect_uris":["https://APP.example/cb?x=1"],"logo_uri":"https://x/y.png"}`, 201, ""},
		{"explicit none", "application/json", `{"client_name":"CRM","redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"]}`, 201, ""},
		{"http URI", "application/json", `{"client_name":"CRM","redirect_uris":["http://app.example/cb"]}`, 400, "invalid_redirect_uri"},
		{"relative URI", "application/json", `{"client_name":"CRM","redirect_uris":["/cb"]}`, 400, "invalid_redirect_uri"},
		{"fragment", "application/json", `{"client_name":"CRM","redirect_uris":["https://app.example/cb#frag"]}`, 400, "invalid_redirect_uri"},
		{"host not allowed", "application/json", `{"client_name":"CRM","redirect_uris":["https://evil.example/cb"]}`, 400, "invalid_redirect_uri"},
		{"subdomain not allowed", "application/json", `{"client_name":"CRM","redirect_uris":["https://x.app.example/cb"]}`, 400, "invalid_redirect_uri"},
		{"no redirect URIs", "application/json", `{"client_name":"CRM","redirect_uris":[]}`, 400, "invalid_redirect_uri"},
		{"missing name", "application/json", `{"redirect_uris":["https://app.example/cb"]}`, 400, "invalid_client_metadata"},
		{"blank name", "application/json", `{"client_name":"  ","redirect_uris":["https://app.example/cb"]}`, 400, "invalid_client_metadata"},
		{"secret client", "application/json", `{"client_name":"CRM","redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}`, 400, "invalid_client_metadata"},
		{"implicit grant", "application/json", `{"client_name":"CRM","redirect_uris":["https://app.example/cb"],"grant_types":["implicit"]}`, 400, "invalid_client_metadata"},
		{"wrong type", "application/json", `{"client_name":"CRM","redirect_uris":"https://app.example/cb"}`, 400, "invalid_client_metadata"},
		{"trailing data", "application/json", `{"client_name":"CRM","redirect_uris":["https://app.example/cb"]} {}`, 400, "invalid_client_metadata"},
		{"not JSON", "application/json", `client_name=CRM`, 400, "invalid_client_metadata"},
		{"form body", "application/x-www-form-urlencoded", `{"client_name":"CRM","redirect_uris":["https://app.example/cb"]}`, 400, "invalid_client_metadata"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(e.url+"/api/v1/oauth/register", tc.contentType, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			body := read(t, resp)
			wantStatus(t, resp, body, tc.status)
			var got map[string]any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("body is not JSON: %s", body)
			}
			if tc.errCode != "" {
				if got["error"] != tc.errCode || got["error_description"] == "" {
					t.Fatalf("error = %v, want %s with a description", got, tc.errCode)
				}
				return
			}
			id, _ := got["client_id"].(string)
			if len(id) < 43 || got["client_name"] != "CRM" || got["token_endpoint_auth_method"] != "none" || got["client_id_issued_at"] == nil {
				t.Fatalf("registration = %v", got)
			}
			c, err := st.OAuthClient(ctx, id)
			if err != nil || c.Name != "CRM" {
				t.Fatalf("stored client = %+v, %v", c, err)
			}
		})
	}
}

func TestAuthorizeErrors(t *testing.T) {
	st := storetest.Open(t, store.SQLite)
	e := setup(t, st)
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		status    int
		errCode   string // "" for an error page, no redirect
	}{
		{"unknown client", map[string]string{"client_id": "nope"}, 400, ""},
		{"missing client", map[string]string{"client_id": ""}, 400, ""},
		{"mismatched redirect", map[string]string{"redirect_uri": "https://app.example/other"}, 400, ""},
		{"missing redirect", map[string]string{"redirect_uri": ""}, 400, ""},
		{"missing PKCE", map[string]string{"code_challenge": "", "code_challenge_method": ""}, 302, "invalid_request"},
		{"missing method", map[string]string{"code_challenge_method": ""}, 302, "invalid_request"},
		{"plain PKCE", map[string]string{"code_challenge_method": "plain"}, 302, "invalid_request"},
		{"plain PKCE with a verifier", map[string]string{"code_challenge_method": "plain", "code_challenge": verifier}, 302, "invalid_request"},
		{"malformed challenge", map[string]string{"code_challenge": "short"}, 302, "invalid_request"},
		{"token response type", map[string]string{"response_type": "token"}, 302, "unsupported_response_type"},
		{"unknown scope", map[string]string{"scope": "sms:read admin"}, 302, "invalid_scope"},
		{"empty scope", map[string]string{"scope": ""}, 302, "invalid_scope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := e.get(t, browser(t), e.authorizePath(tc.overrides))
			wantStatus(t, resp, body, tc.status)
			loc := resp.Header.Get("Location")
			if tc.errCode == "" {
				if loc != "" {
					t.Fatalf("error page redirected to %q", loc)
				}
				if !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
					t.Fatalf("Content-Type = %q, want an HTML page", resp.Header.Get("Content-Type"))
				}
				wantPageHeaders(t, resp)
				return
			}
			u, err := url.Parse(loc)
			if err != nil || !strings.HasPrefix(loc, redirect+"?") {
				t.Fatalf("Location = %q, want the redirect URI", loc)
			}
			q := u.Query()
			if q.Get("error") != tc.errCode || q.Get("state") != "st-123" || q.Get("error_description") == "" || q.Get("iss") != e.url || q.Get("code") != "" {
				t.Fatalf("redirect query = %v, want error %s with state and iss", q, tc.errCode)
			}
		})
	}
}

func TestFullFlow(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := setup(t, st)
		b := browser(t)

		// Authorize: the sign-in page, with its cookie.
		resp, page := e.get(t, b, e.authorizePath(nil))
		wantStatus(t, resp, page, http.StatusOK)
		wantPageHeaders(t, resp)
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' https://app.example") {
			t.Errorf("CSP %q does not allow the redirect origin as a form target", csp)
		}
		for _, want := range []string{`name="viewport"`, `id="sign-in"`, `name="username"`, `name="password"`, `action="/oauth/login"`, "Acme CRM"} {
			if !bytes.Contains(page, []byte(want)) {
				t.Errorf("sign-in page lacks %s", want)
			}
		}
		if bytes.Contains(page, []byte("<script")) {
			t.Error("sign-in page has a script")
		}
		var cookie *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == "sb_csrf" {
				cookie = c
			}
		}
		if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || cookie.Path != "/" {
			t.Fatalf("CSRF cookie = %+v, want sb_csrf, HttpOnly, SameSite=Lax, Path=/", cookie)
		}
		form := hidden(t, page)

		// Wrong password, unknown user, then a disabled user with the right
		// password: the same 401 page.
		dora := storetest.User(t, st, e.user.AccountID, &storetest.UserOpts{FirstName: "Dora", Username: "dora", Password: password})
		if err := st.SetUserDisabled(ctx, dora.AccountID, dora.ID, true); err != nil {
			t.Fatal(err)
		}
		for _, creds := range [][2]string{{"amy", "wrong"}, {"nobody", password}, {"dora", password}} {
			form.Set("username", creds[0])
			form.Set("password", creds[1])
			resp, body := e.postForm(t, b, "/oauth/login", form)
			wantStatus(t, resp, body, http.StatusUnauthorized)
			if !bytes.Contains(body, []byte("Wrong username or password")) || !bytes.Contains(body, []byte(`id="sign-in"`)) {
				t.Fatalf("failed sign-in page:\n%s", body)
			}
			wantPageHeaders(t, resp)
		}

		// Right password: on to consent.
		form.Set("username", "amy")
		form.Set("password", password)
		resp, body := e.postForm(t, b, "/oauth/login", form)
		wantStatus(t, resp, body, http.StatusSeeOther)
		loc := resp.Header.Get("Location")
		if !strings.HasPrefix(loc, "/oauth/consent?request=") {
			t.Fatalf("Location = %q, want the consent page", loc)
		}
		resp, page = e.get(t, b, loc)
		wantStatus(t, resp, page, http.StatusOK)
		wantPageHeaders(t, resp)
		for _, want := range []string{"Acme CRM", "app.example", "sms:send</code> — Send text messages from your numbers; this spends money",
			"sms:read</code> — ", `id="approve"`, `id="deny"`, `name="decision" value="approve"`, `name="decision" value="deny"`} {
			if !bytes.Contains(page, []byte(want)) {
				t.Errorf("consent page lacks %q", want)
			}
		}
		// Someone else's browser cannot see it.
		resp, body = e.get(t, browser(t), loc)
		wantStatus(t, resp, body, http.StatusForbidden)

		// Approve: back to the client with a code and the state.
		consent := hidden(t, page)
		consent.Set("decision", "approve")
		resp, body = e.postForm(t, b, "/oauth/consent", consent)
		wantStatus(t, resp, body, http.StatusSeeOther)
		back, _ := url.Parse(resp.Header.Get("Location"))
		code := back.Query().Get("code")
		if back.Host != "app.example" || back.Path != "/callback" || !strings.HasPrefix(code, "sbac_") || back.Query().Get("state") != "st-123" || back.Query().Get("iss") != e.url {
			t.Fatalf("approve redirected to %s, want the callback with code, state and iss", back)
		}
		// The request was single-use.
		resp, body = e.postForm(t, b, "/oauth/consent", consent)
		wantStatus(t, resp, body, http.StatusBadRequest)

		// Exchange.
		status, tok := e.exchange(t, code)
		if status != 200 || !strings.HasPrefix(tok.AccessToken, "sbat_") || !strings.HasPrefix(tok.RefreshToken, "sbrt_") ||
			tok.TokenType != "Bearer" || tok.ExpiresIn != 3600 || tok.Scope != "sms:read sms:send" {
			t.Fatalf("exchange = %d %+v", status, tok)
		}
		e.wantAccess(t, tok.AccessToken, true)

		// Refresh rotates.
		status, tok2 := e.refresh(t, tok.RefreshToken)
		if status != 200 || tok2.RefreshToken == tok.RefreshToken || tok2.AccessToken == tok.AccessToken || tok2.Scope != "sms:read sms:send" {
			t.Fatalf("refresh = %d %+v", status, tok2)
		}
		e.wantAccess(t, tok2.AccessToken, true)
		// Narrowing is allowed, widening is not.
		status, tok3 := e.token(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok2.RefreshToken}, "client_id": {e.client}, "scope": {"sms:read users:read"}})
		wantGrantError(t, status, tok3, 400, "invalid_scope")
		status, tok3 = e.token(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok2.RefreshToken}, "client_id": {e.client}, "scope": {"sms:read"}})
		if status != 200 || tok3.Scope != "sms:read" {
			t.Fatalf("narrowing refresh = %d %+v", status, tok3)
		}

		// Reusing the first refresh token: refused, and the grant dies.
		status, bad := e.refresh(t, tok.RefreshToken)
		wantGrantError(t, status, bad, 400, "invalid_grant")
		for _, a := range []string{tok.AccessToken, tok2.AccessToken, tok3.AccessToken} {
			e.wantAccess(t, a, false)
		}
		status, bad = e.refresh(t, tok3.RefreshToken)
		wantGrantError(t, status, bad, 400, "invalid_grant")

		// Code replay: refused, and what the first exchange issued dies.
		code = e.code(t)
		status, tok = e.exchange(t, code)
		if status != 200 {
			t.Fatalf("second flow exchange = %d %+v", status, tok)
		}
		e.wantAccess(t, tok.AccessToken, true)
		status, bad = e.exchange(t, code)
		wantGrantError(t, status, bad, 400, "invalid_grant")
		e.wantAccess(t, tok.AccessToken, false)
		status, bad = e.refresh(t, tok.RefreshToken)
		wantGrantError(t, status, bad, 400, "invalid_grant")

		grants, err := st.OAuthGrants(ctx, e.user.AccountID, e.user.ID)
		if err != nil || len(grants) != 2 || grants[0].RevokedAt == nil || grants[1].RevokedAt == nil {
			t.Fatalf("grants = %+v, %v; want two, both revoked", grants, err)
		}
	})
}

func TestDeny(t *testing.T) {
	e := setup(t, storetest.Open(t, store.SQLite))
	b := browser(t)
	form := e.signIn(t, b, nil)
	form.Set("decision", "deny")
	resp, body := e.postForm(t, b, "/oauth/consent", form)
	wantStatus(t, resp, body, http.StatusSeeOther)
	back, _ := url.Parse(resp.Header.Get("Location"))
	if q := back.Query(); back.Host != "app.example" || q.Get("error") != "access_denied" || q.Get("state") != "st-123" || q.Get("code") != "" {
		t.Fatalf("deny redirected to %s, want access_denied with state", back)
	}
	grants, _ := e.st.OAuthGrants(ctx, e.user.AccountID, 0)
	if len(grants) != 0 {
		t.Fatalf("deny created grants: %+v", grants)
	}
}

func TestCSRF(t *testing.T) {
	e := setup(t, storetest.Open(t, store.SQLite))
	b := browser(t)
	resp, page := e.get(t, b, e.authorizePath(nil))
	wantStatus(t, resp, page, http.StatusOK)
	login := hidden(t, page)
	login.Set("username", "amy")
	login.Set("password", password)

	// Consent before sign-in.
	early := url.Values{"request": {login.Get("request")}, "csrf_token": {login.Get("csrf_token")}, "decision": {"approve"}}
	resp, body := e.postForm(t, b, "/oauth/consent", early)
	wantStatus(t, resp, body, http.StatusForbidden)

	for _, tc := range []struct {
		name   string
		client *http.Client
		mut    func(url.Values)
	}{
		{"no cookie", browser(t), func(url.Values) {}},
		{"missing field", b, func(v url.Values) { v.Del("csrf_token") }},
		{"mismatched field", b, func(v url.Values) { v.Set("csrf_token", strings.Repeat("A", 43)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{}
			for k, v := range login {
				form[k] = v
			}
			tc.mut(form)
			resp, body := e.postForm(t, tc.client, "/oauth/login", form)
			wantStatus(t, resp, body, http.StatusForbidden)
			wantPageHeaders(t, resp)
		})
	}

	// A cookie that does not belong to the request (another browser's).
	other := browser(t)
	resp, page = e.get(t, other, e.authorizePath(nil))
	wantStatus(t, resp, page, http.StatusOK)
	otherCSRF := hidden(t, page).Get("csrf_token")
	form := url.Values{"request": {login.Get("request")}, "csrf_token": {otherCSRF}, "username": {"amy"}, "password": {password}}
	resp, body = e.postForm(t, other, "/oauth/login", form)
	wantStatus(t, resp, body, http.StatusForbidden)

	// The genuine browser still can; consent then needs its token too.
	resp, body = e.postForm(t, b, "/oauth/login", login)
	wantStatus(t, resp, body, http.StatusSeeOther)
	bad := url.Values{"request": {login.Get("request")}, "csrf_token": {otherCSRF}, "decision": {"approve"}}
	resp, body = e.postForm(t, b, "/oauth/consent", bad)
	wantStatus(t, resp, body, http.StatusForbidden)
}

func TestTokenErrors(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := setup(t, st)
		code := e.code(t)
		base := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier}, "client_id": {e.client}, "redirect_uri": {redirect}}
		with := func(k, v string) url.Values {
			f := url.Values{}
			for kk, vv := range base {
				f[kk] = vv
			}
			if v == "" {
				f.Del(k)
			} else {
				f.Set(k, v)
			}
			return f
		}
		for _, tc := range []struct {
			name   string
			form   url.Values
			status int
			err    string
		}{
			{"PKCE mismatch", with("code_verifier", strings.Repeat("x", 43)), 400, "invalid_grant"},
			{"malformed verifier", with("code_verifier", "short"), 400, "invalid_grant"},
			{"wrong redirect_uri", with("redirect_uri", "https://app.example/other"), 400, "invalid_grant"},
			{"unknown code", with("code", "sbac_"+strings.Repeat("A", 43)), 400, "invalid_grant"},
			{"unknown client", with("client_id", "nope"), 401, "invalid_client"},
			{"missing client", with("client_id", ""), 400, "invalid_request"},
			{"missing verifier", with("code_verifier", ""), 400, "invalid_request"},
			{"missing grant type", with("grant_type", ""), 400, "invalid_request"},
			{"password grant", with("grant_type", "password"), 400, "unsupported_grant_type"},
			{"bad refresh token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"nope"}, "client_id": {e.client}}, 400, "invalid_grant"},
			{"refresh unknown scope", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"sbrt_x"}, "client_id": {e.client}, "scope": {"admin"}}, 400, "invalid_scope"},
		} {
			status, tok := e.token(t, tc.form)
			if status != tc.status || tok.Error != tc.err {
				t.Errorf("%s: got %d %+v, want %d %s", tc.name, status, tok, tc.status, tc.err)
			}
		}
		// JSON bodies are refused.
		resp, err := http.Post(e.url+"/api/v1/oauth/token", "application/json", strings.NewReader(`{"grant_type":"authorization_code"}`))
		if err != nil {
			t.Fatal(err)
		}
		if body := read(t, resp); resp.StatusCode != 400 || !bytes.Contains(body, []byte(`"invalid_request"`)) {
			t.Errorf("JSON token request: %d %s, want 400 invalid_request", resp.StatusCode, body)
		}

		// None of the failures spent the code.
		status, tok := e.exchange(t, code)
		if status != 200 {
			t.Fatalf("exchange after failures = %d %+v", status, tok)
		}

		// An expired code.
		code = e.code(t)
		later := time.Now().Add(store.OAuthCodeTTL + time.Second)
		st.SetClock(func() time.Time { return later })
		status, tok = e.exchange(t, code)
		wantGrantError(t, status, tok, 400, "invalid_grant")
	})
}

func TestRevoke(t *testing.T) {
	e := setup(t, storetest.Open(t, store.SQLite))
	revoke := func(form url.Values) int {
		t.Helper()
		resp, body := e.postForm(t, nil, "/api/v1/oauth/revoke", form)
		if resp.StatusCode != 200 && !bytes.Contains(body, []byte(`"error"`)) {
			t.Fatalf("revoke error without an OAuth error body: %s", body)
		}
		return resp.StatusCode
	}
	_, tok := e.exchange(t, e.code(t))
	if got := revoke(url.Values{"token": {"sbat_unknown"}}); got != 200 {
		t.Fatalf("unknown token: %d, want 200", got)
	}
	if got := revoke(url.Values{}); got != 400 {
		t.Fatalf("missing token: %d, want 400", got)
	}
	if got := revoke(url.Values{"token": {tok.AccessToken}, "client_id": {"nope"}}); got != 401 {
		t.Fatalf("unknown client: %d, want 401", got)
	}
	e.wantAccess(t, tok.AccessToken, true)
	if got := revoke(url.Values{"token": {tok.AccessToken}, "token_type_hint": {"access_token"}, "client_id": {e.client}}); got != 200 {
		t.Fatalf("revoke access token: %d", got)
	}
	e.wantAccess(t, tok.AccessToken, false)
	status, tok2 := e.refresh(t, tok.RefreshToken)
	if status != 200 {
		t.Fatalf("refresh after access revocation = %d %+v", status, tok2)
	}
	if got := revoke(url.Values{"token": {tok2.RefreshToken}}); got != 200 {
		t.Fatalf("revoke refresh token: %d", got)
	}
	e.wantAccess(t, tok2.AccessToken, false)
	status, bad := e.refresh(t, tok2.RefreshToken)
	wantGrantError(t, status, bad, 400, "invalid_grant")
}

func TestSignInThrottled(t *testing.T) {
	proxies, err := oauth.ParseTrustedProxies("127.0.0.1,::1")
	if err != nil {
		t.Fatal(err)
	}
	e := setup(t, storetest.Open(t, store.SQLite), func(c *oauth.Config) { c.TrustedProxies = proxies })
	b := browser(t)
	// from signs in, in browser b, as a client at addr behind the trusted proxy.
	from := func(addr string, form url.Values) (*http.Response, []byte) {
		req, err := http.NewRequest(http.MethodPost, e.url+"/oauth/login", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Forwarded-For", addr)
		resp, err := b.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp, read(t, resp)
	}
	resp, page := e.get(t, b, e.authorizePath(nil))
	wantStatus(t, resp, page, http.StatusOK)
	form := hidden(t, page)
	form.Set("username", "amy")
	form.Set("password", "wrong")
	for range 4 {
		resp, body := from("192.0.2.1", form)
		wantStatus(t, resp, body, http.StatusUnauthorized)
	}
	// Past the free attempts, even the right password waits at that address.
	form.Set("password", password)
	resp, body := from("192.0.2.1", form)
	wantStatus(t, resp, body, http.StatusTooManyRequests)
	if resp.Header.Get("Retry-After") == "" || !bytes.Contains(body, []byte(`id="sign-in"`)) {
		t.Fatalf("throttled answer lacks Retry-After or the form:\n%s", body)
	}
	// Amy herself, from an address that never failed, is not locked out.
	resp, body = from("198.51.100.7", form)
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusUnauthorized {
		t.Fatalf("right password from a clean address: %d, want it let through\n%s", resp.StatusCode, body)
	}
}

// TestNULRefused: a NUL character in any parameter of the authorization
// server is 400 naming it, on both engines: the machine endpoints answer
// invalid_request, the pages their error page. Before, PostgreSQL answered
// 500 for a client_id (authorize, token, revoke), a username, and a state
// (stored at sign-in), while SQLite took them as unknown or stored them.
func TestNULRefused(t *testing.T) {
	const nul = "a\x00b"
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := setup(t, st)
		wantPage := func(what string, resp *http.Response, body []byte, name string) {
			t.Helper()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), name+" holds the NUL character") {
				t.Errorf("%s: %d, want 400 naming %s:\n%.600s", what, resp.StatusCode, name, body)
			}
		}
		for _, name := range []string{"client_id", "redirect_uri", "state", "scope", "code_challenge"} {
			resp, body := e.get(t, browser(t), e.authorizePath(map[string]string{name: nul}))
			wantPage("authorize with a NUL in "+name, resp, body, name)
		}
		for _, name := range []string{"username", "password", "csrf_token"} {
			b := browser(t)
			resp, page := e.get(t, b, e.authorizePath(nil))
			wantStatus(t, resp, page, http.StatusOK)
			form := hidden(t, page)
			form.Set("username", "amy")
			form.Set("password", password)
			form.Set(name, nul)
			resp, body := e.postForm(t, b, "/oauth/login", form)
			wantPage("sign-in with a NUL in "+name, resp, body, name)
		}
		b := browser(t)
		form := e.signIn(t, b, nil)
		form.Set("decision", nul)
		resp, body := e.postForm(t, b, "/oauth/consent", form)
		wantPage("consent with a NUL in decision", resp, body, "decision")

		for _, c := range []struct {
			path string
			form url.Values
		}{
			{"/api/v1/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {"sbc_x"}, "code_verifier": {verifier}, "client_id": {nul}, "redirect_uri": {redirect}}},
			{"/api/v1/oauth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"sbr_x"}, "client_id": {nul}}},
			{"/api/v1/oauth/revoke", url.Values{"token": {"x"}, "client_id": {nul}}},
		} {
			resp, body := e.postForm(t, nil, c.path, c.form)
			var got tokens
			json.Unmarshal(body, &got)
			if resp.StatusCode != http.StatusBadRequest || got.Error != "invalid_request" || !strings.Contains(got.Description, "client_id holds the NUL character") {
				t.Errorf("%s with a NUL in client_id: %d %s, want 400 invalid_request naming client_id", c.path, resp.StatusCode, body)
			}
		}
	})
}
