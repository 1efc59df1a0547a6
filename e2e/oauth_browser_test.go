package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"switchboard/internal/apitest"
)

// The OAuth browser test drives the sign-in and consent pages in a real
// headless Chromium, as a person on a phone would, and then uses the tokens
// the flow produced against the public API.
const (
	// browserEnv=1 makes a missing Chromium a failure instead of a skip (CI).
	browserEnv = "SWITCHBOARD_TEST_BROWSER"
	// artifactsEnv names a directory for the screenshots; without it they go
	// to $TMPDIR/switchboard-e2e-screenshots.
	artifactsEnv = "SWITCHBOARD_TEST_ARTIFACTS"

	oauthRedirectHost = "app.example.test"
	oauthRedirectURI  = "https://" + oauthRedirectHost + "/callback"
	// The client chooses its own name: markup in it must show as text.
	oauthClientName = "Helpdesk <b>Pro</b> & Co"

	// A phone-sized viewport (CSS pixels), so the screenshots show what a
	// person signing in on a phone sees.
	phoneWidth, phoneHeight = 390, 844

	browserBudget = 5 * time.Minute  // the browser is killed after this, whatever happens
	stepTimeout   = 45 * time.Second // one browser step (navigate, click and load, wait)
	// loadAllowance multiplies each wait's bound, written as what a person
	// would wait on an idle machine: a test fails on a bound only when the
	// app is broken, not when CI's machine is busy (Chromium beside two
	// CPU burners took over 15 s to run axe on one screen). Latency itself
	// is a figure in docs/benchmarks.md, not a test's bound.
	loadAllowance = 4
)

// browserSlots bounds the Chromiums running at once. The e2e tests run
// eight at a time (TestMain: most of them wait on child processes), but a
// browser computes: with nine browser tests, eight Chromiums beside their
// servers overran a 2-core machine, and tests that never open a browser
// missed their start-up bounds. A browser test takes its slot first, before
// it starts a server, and its budget starts once it holds one.
var browserSlots = make(chan struct{}, 2)

// takeBrowserSlot waits for a browser slot and gives it back when t ends.
func takeBrowserSlot(t *testing.T) {
	browserSlots <- struct{}{}
	t.Cleanup(func() { <-browserSlots })
}

// chromiumPath finds a Chromium binary, or returns "".
func chromiumPath() string {
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func TestOAuthInBrowser(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath()
	if chromium == "" {
		if os.Getenv(browserEnv) == "1" {
			t.Fatalf("no Chromium found (/usr/bin/chromium, chromium, chromium-browser) and %s=1: install Debian's chromium (.ci/install-deps does)", browserEnv)
		}
		t.Skipf("no Chromium found (/usr/bin/chromium, chromium, chromium-browser): skipping the OAuth browser test; install Debian's chromium, or set %s=1 to make this a failure", browserEnv)
	}
	engines(t, func(t *testing.T, db string) { testOAuthInBrowser(t, db, chromium) })
}

func testOAuthInBrowser(t *testing.T, db, chromium string) {
	// ---- provisioning: a person with a narrow role, and lines around her ----
	acct := createAccount(t, db, "Acme Corp")
	var role struct {
		ID          int64  `json:"id"`
		Permissions string `json:"permissions"`
	}
	cliJSON(t, db, &role, "role", "create", "--account", fmt.Sprint(acct), "--name", "agent", "--permissions", "users:self,numbers:assigned")
	if role.ID <= 0 || role.Permissions != "users:self,numbers:assigned" {
		t.Fatalf("role create: got %+v, want an id and permissions users:self,numbers:assigned", role)
	}
	alice := createUser(t, db, acct, "--first", "Alice", "--last", "Smith", "--username", "alice", "--password", "correct horse", "--role", "agent")
	bob := createUser(t, db, acct, "--first", "Bob", "--last", "Jones", "--username", "bob", "--password", "battery staple")
	unassigned := createLine(t, db, acct, "--number", "4155550100", "--name", "Main").Number
	alicesLine := createLine(t, db, acct, "--number", "4155550101", "--name", "Alice", "--users", ids(alice)).Number
	bobsLine := createLine(t, db, acct, "--number", "4155550102", "--name", "Bob", "--users", ids(bob)).Number

	base := startServer(t, db)
	// The operator allows the client's redirect host while the server runs.
	if out, exit := cli(t, db, "oauth", "allow-host", oauthRedirectHost); exit != 0 {
		t.Fatalf("switchboard oauth allow-host %s: exit status %d, want 0\nstdout: %s", oauthRedirectHost, exit, out)
	}

	// ---- discovery and registration, as a client does them ----
	md := discover(t, base)
	clientID := registerClient(t, md.RegistrationEndpoint)

	// ---- the sign-in page over plain HTTP: it must refuse to be framed ----
	{
		_, challenge := pkce(t)
		r := oauthDo(t, http.MethodGet, authorizeURL(md, clientID, "users:read sms:read", randomState(t), challenge), "", nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET authorization_endpoint: status got %d, want 200 (the sign-in page)\nbody: %.500s", r.status, r.body)
		}
		checkFrameHeaders(t, "the sign-in page (plain HTTP)", r.header)
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("the sign-in page: Content-Type got %q, want text/html", ct)
		}
	}

	b := newBrowser(t, chromium)

	// ---- first authorization: wrong password, right password, approve ----
	verifier, challenge := pkce(t)
	state := randomState(t)
	b.open("the sign-in page", authorizeURL(md, clientID, "users:read sms:read", state, challenge), http.StatusOK)
	b.do("wait for the sign-in form",
		chromedp.WaitVisible(chromedp.CSS(`input[name="username"]`)),
		chromedp.WaitVisible(chromedp.CSS(`input[name="password"]`)),
		chromedp.WaitVisible(chromedp.ID("sign-in")))
	signInText := b.text()
	if !strings.Contains(signInText, oauthClientName) {
		t.Errorf("sign-in page: got no client name %q (as text), want the page to say which application asks\npage text:\n%s", oauthClientName, signInText)
	}
	b.checkPhoneLayout("sign-in page")
	b.screenshot("1-sign-in")

	b.fill("alice", "wrong horse")
	resp := b.load("submit a wrong password", chromedp.Click(chromedp.ID("sign-in")))
	if resp.Status != http.StatusUnauthorized {
		t.Errorf("wrong password: status got %d, want 401 (the sign-in page again, with an error)", resp.Status)
	}
	checkFrameHeaders(t, "the sign-in page after a wrong password", browserHeader(resp.Headers))
	b.do("wait for the sign-in form again",
		chromedp.WaitVisible(chromedp.CSS(`input[name="password"]`)),
		chromedp.WaitVisible(chromedp.ID("sign-in")))
	errText := newLines(b.text(), signInText)
	if !containsAny(strings.ToLower(errText), "wrong", "incorrect", "invalid", "not match", "didn't match", "not recognized") {
		t.Errorf("wrong password: the page got no error message (new text: %q), want one saying the username or password is wrong", errText)
	}
	if html := b.html(); strings.Contains(html, "wrong horse") {
		t.Errorf("wrong password: the page echoes the password it was given")
	}
	b.screenshot("2-wrong-password")

	b.fill("alice", "correct horse")
	resp = b.load("sign in", chromedp.Click(chromedp.ID("sign-in")))
	if resp.Status != http.StatusOK {
		t.Errorf("sign in: the page after it has status %d, want 200 (the consent page)", resp.Status)
	}
	checkFrameHeaders(t, "the consent page", browserHeader(resp.Headers))
	b.do("wait for the consent buttons", chromedp.WaitVisible(chromedp.ID("approve")), chromedp.WaitVisible(chromedp.ID("deny")))
	b.checkPhoneLayout("consent page")
	b.screenshot("3-consent")
	checkConsentText(t, b.text(), []string{"users:read", "sms:read"}, md.ScopesSupported)

	code := b.decide("approve", state, md)

	// ---- the code, exchanged with PKCE ----
	tok := exchangeCode(t, md, clientID, code, verifier)
	if got := scopeSet(tok.Scope); !slices.Equal(got, []string{"sms:read", "users:read"}) {
		t.Errorf("token: scope got %q, want users:read and sms:read (what was asked for and approved)", tok.Scope)
	}

	// ---- the token acts for alice: scopes and her role both apply ----
	checkAlicesView(t, base, tok.AccessToken, alice, []string{unassigned, alicesLine}, bobsLine)
	r := postJSON(t, base+apiPrefix+"/sms/messages", tok.AccessToken,
		fmt.Sprintf(`{"from": %q, "to": ["14155550199"], "message": "hello"}`, alicesLine))
	if got := errorEnvelope(t, "POST /sms/messages with a token lacking sms:send", r, http.StatusForbidden, "insufficient_scope"); got != "sms:send" {
		t.Errorf("POST /sms/messages with a token lacking sms:send: error.scope got %q, want sms:send", got)
	}

	// ---- refresh rotates; the old refresh token is dead ----
	refreshed := refreshToken(t, md, clientID, tok.RefreshToken)
	if refreshed.AccessToken == tok.AccessToken || refreshed.RefreshToken == tok.RefreshToken {
		t.Errorf("refresh: got the same access or refresh token back, want new ones")
	}
	if got := scopeSet(refreshed.Scope); !slices.Equal(got, []string{"sms:read", "users:read"}) {
		t.Errorf("refresh: scope got %q, want users:read sms:read as before", refreshed.Scope)
	}
	checkAlicesView(t, base, refreshed.AccessToken, alice, []string{unassigned, alicesLine}, bobsLine)
	r = oauthForm(t, md.TokenEndpoint, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.RefreshToken}, "client_id": {clientID}})
	oauthErrorIs(t, "reusing a rotated refresh token", r, "invalid_grant")
	// Reuse means the token may be in two hands: the whole grant is revoked
	// (docs/decisions.md, "Reuse detection").
	unauthenticated(t, "GET /users with the newest access token after the old refresh token was reused",
		request(t, http.MethodGet, base+apiPrefix+"/users", "Bearer "+refreshed.AccessToken), "users:read")
	// A code works once.
	r = oauthForm(t, md.TokenEndpoint, url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"code_verifier": {verifier}, "client_id": {clientID}, "redirect_uri": {oauthRedirectURI}})
	oauthErrorIs(t, "reusing an authorization code", r, "invalid_grant")

	// ---- second authorization: the person says no ----
	_, challenge2 := pkce(t)
	state2 := randomState(t)
	b.open("the authorization page, again", authorizeURL(md, clientID, "users:read sms:read", state2, challenge2), http.StatusOK)
	// Whether the server remembers the sign-in is its choice: take either page.
	b.do("wait for the sign-in or consent page", chromedp.WaitVisible(chromedp.CSS("#sign-in, #deny")))
	if b.exists("#sign-in") {
		b.fill("alice", "correct horse")
		b.load("sign in again", chromedp.Click(chromedp.ID("sign-in")))
	}
	b.do("wait for the deny button", chromedp.WaitVisible(chromedp.ID("deny")))
	b.decide("deny", state2, md)
}

// ---- the browser ----

// browser is one headless Chromium tab.
type browser struct {
	t          *testing.T
	ctx        context.Context
	redirects  chan string // URLs the browser was sent to on the client's host
	shots      string      // where screenshots go
	shotPrefix string

	mu      sync.Mutex
	console []string // what the page logged, for failure messages
	output  *lineWriter
}

func newBrowser(t *testing.T, chromium string) *browser {
	t.Helper()
	takeBrowserSlot(t)
	b := &browser{t: t, redirects: make(chan string, 8), output: newLineWriter()}
	root, cancelRoot := context.WithTimeout(context.Background(), browserBudget)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(root,
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		// /dev/shm is small in many containers; Chromium crashes when it fills.
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.CombinedOutput(b.output),
	)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	b.ctx = ctx
	t.Cleanup(func() {
		cancelCtx()
		cancelAlloc()
		cancelRoot()
		if t.Failed() {
			t.Logf("chromium output (last lines):\n%s", chromiumLog(b.output, 30))
		}
	})

	// The first action starts the browser: it must not run under a step's
	// timeout, which would end the browser with it.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulateMobile, chromedp.EmulatePortrait, chromedp.EmulateTouch)); err != nil {
		t.Fatalf("start chromium %s: %v\noutput:\n%s", chromium, err, chromiumLog(b.output, 30))
	}

	// The client's redirect URI is not a real site: the browser's request for
	// it is intercepted and answered here, and its URL (code, state) recorded.
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{
		Patterns: []*fetch.RequestPattern{{URLPattern: "https://" + oauthRedirectHost + "/*"}},
	}); err != nil {
		t.Fatalf("chromium: Fetch.enable: %v", err)
	}
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	go func() {
		for ev, err := range paused {
			if err != nil {
				return // the browser is closing
			}
			if ev.ResourceType != network.ResourceTypeDocument { // the favicon
				chromedp.Call(ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: ev.RequestID, ResponseCode: http.StatusNotFound})
				continue
			}
			select {
			case b.redirects <- ev.Request.URL:
			default:
			}
			chromedp.Call(ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{
				RequestID:       ev.RequestID,
				ResponseCode:    http.StatusOK,
				ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: "text/html; charset=utf-8"}},
				Body:            []byte("<!doctype html><title>Back at the app</title><p>Back at the app.</p>"),
			})
		}
	}()
	console := chromedp.Console(ctx)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m.String())
			b.mu.Unlock()
		}
	}()

	b.shots = os.Getenv(artifactsEnv)
	if b.shots == "" {
		b.shots = filepath.Join(os.TempDir(), "switchboard-e2e-screenshots")
	}
	if err := os.MkdirAll(b.shots, 0o755); err != nil {
		t.Fatalf("screenshot directory: %v", err)
	}
	b.shotPrefix = strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	return b
}

// where describes the page the browser is on, for failure messages.
func (b *browser) where() string {
	ctx, cancel := context.WithTimeout(b.ctx, 3*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	b.mu.Lock()
	console := strings.Join(b.console, "\n  ")
	b.mu.Unlock()
	return fmt.Sprintf("\nbrowser at: %s\npage text:\n%.1500s\nconsole:\n  %s", loc, text, console)
}

// do runs actions within one step's time.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %s: %v%s", what, err, b.where())
	}
}

// load runs actions that navigate and returns the response of the document
// the navigation ends on.
func (b *browser) load(what string, actions ...chromedp.Action[chromedp.Void]) *network.Response {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, actions...)
	if err != nil {
		b.t.Fatalf("browser: %s: %v%s", what, err, b.where())
	}
	if resp == nil {
		b.t.Fatalf("browser: %s: no document loaded%s", what, b.where())
	}
	return resp
}

// open navigates to u and requires the status want.
func (b *browser) open(what, u string, want int64) {
	b.t.Helper()
	resp := b.load("open "+what, chromedp.Navigate(u))
	if resp.Status != want {
		b.t.Fatalf("browser: open %s: status got %d, want %d%s", what, resp.Status, want, b.where())
	}
}

// fill types a username and password into the sign-in form, replacing
// whatever the page put there.
func (b *browser) fill(username, password string) {
	b.t.Helper()
	user, pass := chromedp.CSS(`input[name="username"]`), chromedp.CSS(`input[name="password"]`)
	b.do("fill in the sign-in form",
		chromedp.WaitVisible(user), chromedp.WaitVisible(pass),
		// Empty both first (chromedp.SetValue cannot set ""), then type as a person does.
		chromedp.Evaluate[chromedp.Void](`for (const el of document.querySelectorAll('input[name="username"], input[name="password"]')) el.value = ""`),
		chromedp.SendKeys(user, username), chromedp.SendKeys(pass, password))
}

func (b *browser) text() string {
	b.t.Helper()
	return evaluate[string](b, "read the page text", `document.body.innerText`)
}

func (b *browser) html() string {
	b.t.Helper()
	return evaluate[string](b, "read the page HTML", `document.documentElement.outerHTML`)
}

func (b *browser) exists(selector string) bool {
	b.t.Helper()
	return evaluate[bool](b, "look for "+selector, fmt.Sprintf(`document.querySelector(%q) !== null`, selector))
}

func evaluate[T any](b *browser, what, expression string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expression))
	if err != nil {
		b.t.Fatalf("browser: %s: %v%s", what, err, b.where())
	}
	return v
}

// checkPhoneLayout checks the page is laid out for the phone's width: a
// viewport meta tag, nothing wider than the screen (no sideways scrolling),
// and text of a readable size.
func (b *browser) checkPhoneLayout(page string) {
	b.t.Helper()
	var m struct {
		Viewport    bool    `json:"viewport"`
		Inner       float64 `json:"inner"`
		ScrollWidth float64 `json:"scrollWidth"`
		FontSize    float64 `json:"fontSize"`
		Widest      string  `json:"widest"`
	}
	raw := evaluate[[]byte](b, "measure the "+page, `(() => {
		let widest = "", right = 0;
		for (const el of document.body.querySelectorAll("*")) {
			const r = el.getBoundingClientRect();
			if (r.right > right) { right = r.right; widest = el.tagName + (el.id ? "#" + el.id : ""); }
		}
		return {
			viewport: document.querySelector('meta[name="viewport"]') !== null,
			inner: window.innerWidth,
			scrollWidth: document.documentElement.scrollWidth,
			fontSize: parseFloat(getComputedStyle(document.body).fontSize),
			widest: widest + " (right edge " + Math.round(right) + "px)",
		};
	})()`)
	if err := json.Unmarshal(raw, &m); err != nil {
		b.t.Fatalf("measure the %s: %v: %s", page, err, raw)
	}
	if !m.Viewport {
		b.t.Errorf("%s: no <meta name=\"viewport\">: a phone lays it out %.0fpx wide and shrinks it, want it readable on a phone", page, m.Inner)
	}
	if m.Inner != phoneWidth {
		b.t.Errorf("%s: layout width got %.0fpx on a %dpx-wide phone, want %d (width=device-width)", page, m.Inner, phoneWidth, phoneWidth)
	}
	if m.ScrollWidth > m.Inner {
		b.t.Errorf("%s: content is %.0fpx wide on a %.0fpx screen (widest: %s), want no sideways scrolling on a phone", page, m.ScrollWidth, m.Inner, m.Widest)
	}
	if m.FontSize < 14 {
		b.t.Errorf("%s: body text is %.0fpx, want at least 14px to be readable on a phone", page, m.FontSize)
	}
}

// screenshot saves a full-page PNG of what the browser shows and checks that
// it is one.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100: PNG
	if err != nil {
		b.t.Fatalf("browser: screenshot %s: %v", name, err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		b.t.Fatalf("browser: screenshot %s: not a PNG: %v", name, err)
	}
	if got := img.Bounds().Dx(); got != phoneWidth || img.Bounds().Dy() < phoneHeight {
		b.t.Errorf("screenshot %s: %v, want %dpx wide and at least %dpx tall (the phone's screen)", name, img.Bounds(), phoneWidth, phoneHeight)
	}
	path := filepath.Join(b.shots, b.shotPrefix+"-"+name+".png")
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		b.t.Fatalf("save screenshot: %v", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		b.t.Fatalf("screenshot %s: %v, want a non-empty file", path, err)
	}
	b.t.Logf("screenshot: %s", path)
}

// decide clicks #approve or #deny on the consent page and returns the code of
// the redirect back to the client (approve), after checking the redirect:
// a 303 to the registered redirect URI with the state and, on deny,
// error=access_denied.
func (b *browser) decide(button, state string, md oauthMetadata) (code string) {
	b.t.Helper()
	t := b.t
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	for len(b.redirects) > 0 {
		<-b.redirects
	}
	requests := chromedp.Events(ctx, network.RequestWillBeSent)
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID(button)))
	if err != nil {
		t.Fatalf("browser: click #%s: %v%s", button, err, b.where())
	}
	var got string
	select {
	case got = <-b.redirects:
	case <-ctx.Done():
		t.Fatalf("browser: click #%s: the browser never went to %s (the answer went %s with status %d)%s",
			button, oauthRedirectURI, resp.URL, resp.Status, b.where())
	}
	// The redirect itself: its status, as the browser saw it.
	for ev, err := range requests {
		if err != nil {
			t.Errorf("click #%s: saw no redirect response leading to %s: %v", button, got, err)
			break
		}
		if ev.RedirectResponse != nil && ev.Request.URL == got {
			if ev.RedirectResponse.Status != http.StatusSeeOther {
				t.Errorf("click #%s: redirect status got %d, want 303 (the form was a POST)", button, ev.RedirectResponse.Status)
			}
			break
		}
	}

	u, err := url.Parse(got)
	if err != nil {
		t.Fatalf("click #%s: redirect to %q: %v", button, got, err)
	}
	q := u.Query()
	if base := u.Scheme + "://" + u.Host + u.Path; base != oauthRedirectURI {
		t.Errorf("click #%s: redirected to %s, want the registered %s", button, base, oauthRedirectURI)
	}
	if q.Get("state") != state {
		t.Errorf("click #%s: state got %q, want %q (the client's, unchanged)", button, q.Get("state"), state)
	}
	if md.IssParameterSupported && q.Get("iss") != md.Issuer {
		t.Errorf("click #%s: iss got %q, want the issuer %q (discovery says authorization responses carry it)", button, q.Get("iss"), md.Issuer)
	}
	switch button {
	case "approve":
		if q.Get("code") == "" || q.Has("error") {
			t.Fatalf("approve: redirected to %s, want a code and no error", got)
		}
	case "deny":
		if q.Get("error") != "access_denied" || q.Has("code") {
			t.Errorf("deny: redirected to %s, want error=access_denied and no code", got)
		}
	}
	return q.Get("code")
}

// ---- the consent page ----

// checkConsentText checks the consent page names the client, where the person
// will be sent, and what each requested scope allows in words, and names no
// scope that was not requested.
func checkConsentText(t *testing.T, text string, requested, supported []string) {
	t.Helper()
	for _, want := range []string{oauthClientName, oauthRedirectHost} {
		if !strings.Contains(text, want) {
			t.Errorf("consent page: got no %q, want it named (as text)\npage text:\n%s", want, text)
		}
	}
	// Words, not just the scope's name: what is left once the names are
	// taken out must still say what the application gets.
	words := strings.ToLower(text)
	for _, s := range supported {
		words = strings.ReplaceAll(words, s, "")
	}
	plain := map[string][]string{
		"users:read": {"people", "users", "contacts", "colleagues"},
		"sms:read":   {"text message", "text-message", "sms"},
	}
	for _, s := range requested {
		if !containsAny(words, plain[s]...) {
			t.Errorf("consent page: no words for %s (one of %q), want each scope explained in plain words\npage text:\n%s", s, plain[s], text)
		}
	}
	for _, s := range supported {
		if !slices.Contains(requested, s) && strings.Contains(text, s) {
			t.Errorf("consent page: names %s, which was not requested", s)
		}
	}
}

// newLines returns the lines of after that before does not have.
func newLines(after, before string) string {
	old := strings.Split(before, "\n")
	var out []string
	for _, l := range strings.Split(after, "\n") {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(old, l) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// browserHeader makes an http.Header of the headers the browser reports.
func browserHeader(h network.Headers) http.Header {
	out := http.Header{}
	for k, v := range h {
		for _, line := range strings.Split(fmt.Sprint(v), "\n") {
			out.Add(k, line)
		}
	}
	return out
}

// checkFrameHeaders checks a page refuses to be shown in a frame of another
// site (clickjacking of the sign-in and consent forms).
func checkFrameHeaders(t *testing.T, what string, h http.Header) {
	t.Helper()
	if got := h.Get("X-Frame-Options"); !strings.EqualFold(got, "DENY") {
		t.Errorf("%s: X-Frame-Options got %q, want DENY", what, got)
	}
	csp := strings.Join(h.Values("Content-Security-Policy"), ", ")
	if !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("%s: Content-Security-Policy got %q, want frame-ancestors 'none'", what, csp)
	}
}

// ---- OAuth over plain HTTP ----

type oauthMetadata struct {
	Issuer                        string   `json:"issuer"`
	AuthorizationEndpoint         string   `json:"authorization_endpoint"`
	TokenEndpoint                 string   `json:"token_endpoint"`
	RegistrationEndpoint          string   `json:"registration_endpoint"`
	RevocationEndpoint            string   `json:"revocation_endpoint"`
	ScopesSupported               []string `json:"scopes_supported"`
	CodeChallengeMethodsSupported []string `json:"code_challenge_methods_supported"`
	IssParameterSupported         bool     `json:"authorization_response_iss_parameter_supported"`
}

func discover(t *testing.T, base string) oauthMetadata {
	t.Helper()
	r := oauthDo(t, http.MethodGet, base+"/.well-known/oauth-authorization-server", "", nil)
	var md oauthMetadata
	if r.status != http.StatusOK || json.Unmarshal(r.body, &md) != nil {
		t.Fatalf("GET /.well-known/oauth-authorization-server: got %d %s, want 200 and the metadata document", r.status, r.body)
	}
	// The harness gives no --public-url: the issuer is http://<listen address>.
	if md.Issuer != base {
		t.Errorf("discovery: issuer got %q, want %q (the server's public URL)", md.Issuer, base)
	}
	if md.AuthorizationEndpoint != base+"/oauth/authorize" {
		t.Errorf("discovery: authorization_endpoint got %q, want %s/oauth/authorize", md.AuthorizationEndpoint, base)
	}
	for name, ep := range map[string]string{"token_endpoint": md.TokenEndpoint, "registration_endpoint": md.RegistrationEndpoint, "revocation_endpoint": md.RevocationEndpoint} {
		if !strings.HasPrefix(ep, base+"/") {
			t.Errorf("discovery: %s got %q, want a URL under %s", name, ep, base)
		}
	}
	if !slices.Equal(md.CodeChallengeMethodsSupported, []string{"S256"}) {
		t.Errorf("discovery: code_challenge_methods_supported got %q, want [S256]", md.CodeChallengeMethodsSupported)
	}
	for _, s := range []string{"users:read", "sms:read", "sms:send"} {
		if !slices.Contains(md.ScopesSupported, s) {
			t.Errorf("discovery: scopes_supported got %q, want it to list %s", md.ScopesSupported, s)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return md
}

func registerClient(t *testing.T, endpoint string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"client_name": oauthClientName, "redirect_uris": []string{oauthRedirectURI}})
	r := oauthDo(t, http.MethodPost, endpoint, "application/json", body)
	var out struct {
		ClientID     string   `json:"client_id"`
		RedirectURIs []string `json:"redirect_uris"`
	}
	if r.status != http.StatusCreated || json.Unmarshal(r.body, &out) != nil || out.ClientID == "" {
		t.Fatalf("POST %s: got %d %s, want 201 with a client_id", endpoint, r.status, r.body)
	}
	if !slices.Equal(out.RedirectURIs, []string{oauthRedirectURI}) {
		t.Errorf("registration: redirect_uris got %q, want [%s]", out.RedirectURIs, oauthRedirectURI)
	}
	return out.ClientID
}

// pkce returns a code verifier (base64url of 32 random bytes) and its S256
// challenge.
func pkce(t *testing.T) (verifier, challenge string) {
	t.Helper()
	b := make([]byte, 32)
	rand.Read(b)
	verifier = base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

func randomState(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func authorizeURL(md oauthMetadata, clientID, scope, state, challenge string) string {
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {clientID},
		"redirect_uri":          {oauthRedirectURI},
		"scope":                 {scope},
		"state":                 {state},
		"code_challenge":        {challenge},
		"code_challenge_method": {"S256"},
	}
	// url.Values encodes spaces as +; the spec's example uses %20. Both are
	// form encoding a server must read; use %20 as clients commonly do.
	return md.AuthorizationEndpoint + "?" + strings.ReplaceAll(q.Encode(), "+", "%20")
}

type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

func exchangeCode(t *testing.T, md oauthMetadata, clientID, code, verifier string) tokenResponse {
	t.Helper()
	return tokenOK(t, "exchange the code", oauthForm(t, md.TokenEndpoint, url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"code_verifier": {verifier}, "client_id": {clientID}, "redirect_uri": {oauthRedirectURI}}))
}

func refreshToken(t *testing.T, md oauthMetadata, clientID, refresh string) tokenResponse {
	t.Helper()
	return tokenOK(t, "refresh", oauthForm(t, md.TokenEndpoint, url.Values{"grant_type": {"refresh_token"},
		"refresh_token": {refresh}, "client_id": {clientID}}))
}

func tokenOK(t *testing.T, what string, r response) tokenResponse {
	t.Helper()
	var tok tokenResponse
	if r.status != http.StatusOK || json.Unmarshal(r.body, &tok) != nil {
		t.Fatalf("token endpoint (%s): got %d %s, want 200 with tokens", what, r.status, r.body)
	}
	if tok.AccessToken == "" || tok.RefreshToken == "" || tok.TokenType != "Bearer" || tok.ExpiresIn != 3600 {
		t.Errorf("token endpoint (%s): got %s, want access_token, refresh_token, token_type Bearer, expires_in 3600", what, r.body)
	}
	if cc := r.header.Get("Cache-Control"); !strings.Contains(cc, "no-store") {
		t.Errorf("token endpoint (%s): Cache-Control got %q, want no-store (RFC 6749 §5.1)", what, cc)
	}
	return tok
}

// oauthErrorIs checks an RFC 6749 §5.2 error from the token endpoint.
func oauthErrorIs(t *testing.T, what string, r response, code string) {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if r.status != http.StatusBadRequest || json.Unmarshal(r.body, &e) != nil || e.Error != code {
		t.Errorf("%s: got %d %s, want 400 with error %s", what, r.status, r.body, code)
	}
}

func scopeSet(scope string) []string {
	s := strings.Fields(scope)
	slices.Sort(s)
	return s
}

// oauthDo sends a request outside the public API (no validation applies)
// and does not follow redirects.
func oauthDo(t *testing.T, method, u, contentType string, body []byte) response {
	t.Helper()
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	c := &http.Client{Timeout: httpTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, u, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func oauthForm(t *testing.T, endpoint string, form url.Values) response {
	t.Helper()
	return oauthDo(t, http.MethodPost, endpoint, "application/x-www-form-urlencoded", []byte(form.Encode()))
}

// postJSON POSTs body to a public API URL with a bearer token through the
// validating client.
func postJSON(t *testing.T, u, token, body string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	c := apitest.Client(t)
	c.Timeout = httpTimeout
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: reading body: %v", u, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// checkAlicesView checks what an access token of alice's sees: herself only
// (users:self) and the lines assigned to her or to nobody (numbers:assigned).
func checkAlicesView(t *testing.T, base, token string, alice int64, wantLines []string, hidden string) {
	t.Helper()
	users := getUsers(t, base, token)
	if len(users) != 1 || users[0].ID != alice || users[0].Username != "alice" {
		t.Errorf("GET /users with alice's token: got %s, want only alice (id %d): her role sees herself only", jsonString(users), alice)
	}
	var got []string
	for _, l := range getLines(t, base, token) {
		got = append(got, l.Number)
	}
	want := slices.Sorted(slices.Values(wantLines))
	if !slices.Equal(got, want) {
		t.Errorf("GET /sms/lines with alice's token: got %q, want %q (hers and unassigned ones, not %s)", got, want, hidden)
	}
}

// tail returns the last n lines of s.
// chromiumLog is the last n lines of Chromium's own output, without its
// complaints that the machine has no D-Bus (every start prints dozens on a
// server or in a container, and they hide what went wrong).
func chromiumLog(w *lineWriter, n int) string {
	var kept []string
	for _, l := range strings.Split(w.String(), "\n") {
		if !strings.Contains(l, ":ERROR:dbus/") {
			kept = append(kept, l)
		}
	}
	return tail(strings.Join(kept, "\n"), n)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
