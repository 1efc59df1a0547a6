package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// The app's browser tests: people sign in to the Switchboard app at /app/
// through the real sign-in page, each in a fresh incognito browser context
// of one headless Chromium, and work the inbox. The helpers here (appBrowser,
// appTab) are shared by every app browser test (the composer's, the
// calls' and webhooks').

const (
	// Screens are photographed at a desktop's and a phone's width.
	appDesktopWidth, appDesktopHeight = 1280, 800
	appPhoneWidth, appPhoneHeight     = 375, 812

	appBrowserBudget = 10 * time.Minute // the whole browser, whatever happens
)

// appBrowser is one headless Chromium for an app test.
type appBrowser struct {
	t      *testing.T
	ctx    context.Context // the browser (its first, default context)
	output *lineWriter
	shots  string
}

// newAppBrowser starts Chromium, or skips the test when there is none
// (a failure when SWITCHBOARD_TEST_BROWSER=1).
func newAppBrowser(t *testing.T) *appBrowser {
	t.Helper()
	chromium := chromiumPath()
	if chromium == "" {
		if os.Getenv(browserEnv) == "1" {
			t.Fatalf("no Chromium found and %s=1: install Debian's chromium (.ci/install-deps does)", browserEnv)
		}
		t.Skipf("no Chromium found: skipping the app browser test; set %s=1 to make this a failure", browserEnv)
	}
	takeBrowserSlot(t)
	b := &appBrowser{t: t, output: newLineWriter()}
	root, cancelRoot := context.WithTimeout(context.Background(), appBrowserBudget)
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
		chromedp.Flag("disable-dev-shm-usage", true),
		// Background tabs must keep their timers: two people work side by side.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.CombinedOutput(b.output),
	)
	ctx, cancel := chromedp.NewContext(allocCtx)
	b.ctx = ctx
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		cancelRoot()
		if t.Failed() {
			t.Logf("chromium output (last lines):\n%s", chromiumLog(b.output, 20))
		}
	})
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium %s: %v\noutput:\n%s", chromium, err, chromiumLog(b.output, 30))
	}
	b.shots = os.Getenv(artifactsEnv)
	if b.shots == "" {
		b.shots = filepath.Join(os.TempDir(), "switchboard-e2e-screenshots")
	}
	if err := os.MkdirAll(b.shots, 0o755); err != nil {
		t.Fatalf("screenshot directory: %v", err)
	}
	return b
}

// appTab is one person's tab in their own incognito browser context: no
// cookie or storage shared with anyone else's.
type appTab struct {
	t     *testing.T
	b     *appBrowser
	ctx   context.Context
	base  string
	who   string
	close context.CancelFunc // closes the tab

	mu        sync.Mutex
	requests  []string // every URL the page requested
	offOrigin []string // requests that left the server's origin
	console   []string
	// The tab's event streams (GET /events without after=, which the
	// webhook screen's payload reads use), as the network saw them: the
	// ones still open, and the Last-Event-ID each one resumed after.
	streamsOpen map[network.RequestID]bool
	resumes     []string
}

// openApp opens a fresh incognito context at the desktop size, records
// its requests, and loads base/app/ (which sends a person who is not
// signed in to the sign-in page).
func (b *appBrowser) openApp(base, who string) *appTab {
	b.t.Helper()
	return b.openAppWith(base, who, chromedp.WithNewBrowserContext())
}

// openAppWith is openApp in a tab made with opts: with
// chromedp.WithExistingBrowserContext, a tab beside others that shares
// their cookies, locks and channels (but not their sessionStorage).
func (b *appBrowser) openAppWith(base, who string, opts ...chromedp.ContextOption) *appTab {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, opts...)
	b.t.Cleanup(cancel)
	a := &appTab{t: b.t, b: b, ctx: ctx, base: base, who: who, close: cancel, streamsOpen: map[network.RequestID]bool{}}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(appDesktopWidth, appDesktopHeight)); err != nil {
		b.t.Fatalf("browser (%s): new context: %v", who, err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		b.t.Fatalf("browser (%s): Network.enable: %v", who, err)
	}
	origin := base
	go func() {
		for ev, err := range chromedp.Events(ctx, network.RequestWillBeSent) {
			if err != nil {
				return
			}
			u := ev.Request.URL
			a.mu.Lock()
			a.requests = append(a.requests, u)
			if strings.HasPrefix(u, origin+apiPrefix+"/events") && !strings.Contains(u, "after=") {
				a.streamsOpen[ev.RequestID] = true
				last, _ := ev.Request.Headers["Last-Event-ID"].(string)
				a.resumes = append(a.resumes, last)
			}
			if !strings.HasPrefix(u, origin+"/") && u != origin && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:") && u != "about:blank" {
				a.offOrigin = append(a.offOrigin, u)
			}
			a.mu.Unlock()
		}
	}()
	ended := func(id network.RequestID) {
		a.mu.Lock()
		delete(a.streamsOpen, id)
		a.mu.Unlock()
	}
	go func() {
		for ev, err := range chromedp.Events(ctx, network.LoadingFinished) {
			if err != nil {
				return
			}
			ended(ev.RequestID)
		}
	}()
	go func() {
		for ev, err := range chromedp.Events(ctx, network.LoadingFailed) {
			if err != nil {
				return
			}
			ended(ev.RequestID)
		}
	}()
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			a.mu.Lock()
			a.console = append(a.console, m.String())
			a.mu.Unlock()
		}
	}()
	// Whatever else fails, no request may have left the origin.
	b.t.Cleanup(a.checkOrigin)
	a.do("open the app", chromedp.Navigate(base+"/app/"))
	return a
}

// backgroundWithNotifications grants the tab's origin the permission to
// notify (as a click on "Allow" would) and makes the page see itself
// behind another tab, as the app shows notifications only then; each
// notification the page shows through the browser's Notification API is
// also kept in window.shownNotifications for waitNotification.
func (a *appTab) backgroundWithNotifications() {
	a.t.Helper()
	_, err := chromedp.CallBrowser(a.ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
		Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: cdpbrowser.PermissionSettingGranted,
		Origin: a.base, BrowserContextID: chromedp.FromContext(a.ctx).BrowserContextID})
	if err != nil {
		a.t.Fatalf("%s: grant notifications: %v", a.who, err)
	}
	a.do("go behind another tab", chromedp.Evaluate[chromedp.Void](`(() => {
		Object.defineProperty(document, "visibilityState", { configurable: true, get: () => "hidden" });
		window.shownNotifications = [];
		const Real = window.Notification;
		window.Notification = class extends Real {
			constructor(title, opts) { super(title, opts); window.shownNotifications.push({ title, body: opts?.body || "" }); }
		};
	})()`))
	if p := appEval[string](a, "read the permission", `Notification.permission`); p != "granted" {
		a.t.Fatalf("%s: Notification.permission is %q after the grant", a.who, p)
	}
}

// waitNotification waits for a notification whose title starts with title
// and whose body is body.
func (a *appTab) waitNotification(title, body string) {
	a.t.Helper()
	a.waitJS("the notification "+title+"…", fmt.Sprintf(`(window.shownNotifications || []).some((n) => n.title.startsWith(%q) && n.body === %q)`, title, body), 5*time.Second)
}

// foreground undoes backgroundWithNotifications' view of the page.
func (a *appTab) foreground() {
	a.t.Helper()
	a.do("come to the front", chromedp.Evaluate[chromedp.Void](`delete document.visibilityState`))
}

// signIn opens the app as a person who is not signed in, signs in on the
// server's own sign-in page (the app's consent is implied) and waits for
// the inbox.
func (b *appBrowser) signIn(base, username, password string) *appTab {
	b.t.Helper()
	a := b.openApp(base, username)
	a.signIn(username, password)
	return a
}

// signIn signs in on the sign-in page a tab just opened at /app/ shows.
func (a *appTab) signIn(username, password string) {
	a.t.Helper()
	base := a.base
	a.do("wait for the sign-in page", chromedp.WaitVisible(chromedp.CSS(`input[name="username"]`)), chromedp.WaitVisible(chromedp.ID("sign-in")))
	if loc := a.location(); !strings.HasPrefix(loc, base+"/oauth/authorize?") || !strings.Contains(loc, "client_id=switchboard-app") {
		a.t.Errorf("%s: the app sent the browser to %s, want the server's sign-in page for client switchboard-app", username, loc)
	}
	a.do("sign in",
		chromedp.SendKeys(chromedp.CSS(`input[name="username"]`), username),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), password),
		chromedp.Click(chromedp.ID("sign-in")))
	a.waitJS("the inbox after signing in", `location.pathname.startsWith("/app/inbox") && !!document.querySelector(".inbox") && !document.querySelector(".list-status .spinner")`, 15*time.Second)
	a.checkTokens()
}

func (a *appTab) where() string {
	ctx, cancel := context.WithTimeout(a.ctx, 3*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	a.mu.Lock()
	console := strings.Join(a.console, "\n  ")
	a.mu.Unlock()
	return fmt.Sprintf("\n%s's browser at: %s\npage text:\n%.2000s\nconsole:\n  %s", a.who, loc, text, console)
}

// do runs actions within one step's time.
func (a *appTab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(a.ctx, stepTimeout)
	defer cancel()
	for {
		err := chromedp.Do(ctx, actions...)
		// A live update may replace the node between the query that found
		// it and the action on it: a person would act on the new one, and
		// so does the step (once the page has it), until its timeout.
		if err != nil && strings.Contains(err.Error(), "Could not find node with given id") && ctx.Err() == nil {
			continue
		}
		if err != nil {
			a.t.Fatalf("browser (%s): %s: %v%s", a.who, what, err, a.where())
		}
		return
	}
}

func appEval[T any](a *appTab, what, expression string) T {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(a.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expression, chromedp.EvalAwaitPromise))
	if err != nil {
		a.t.Fatalf("browser (%s): %s: %v%s", a.who, what, err, a.where())
	}
	return v
}

func (a *appTab) location() string {
	a.t.Helper()
	return appEval[string](a, "read the address", `location.href`)
}

func (a *appTab) text() string {
	a.t.Helper()
	return appEval[string](a, "read the page text", `document.body.innerText`)
}

// waitJS waits until the expression is true and returns how long that took.
func (a *appTab) waitJS(what, expression string, timeout time.Duration) time.Duration {
	a.t.Helper()
	timeout *= loadAllowance
	start := time.Now()
	for {
		ctx, cancel := context.WithTimeout(a.ctx, stepTimeout)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expression+")"))
		cancel()
		if err == nil && ok {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			a.t.Fatalf("browser (%s): %s: not so after %v (%s; last error %v)%s", a.who, what, timeout, expression, err, a.where())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// waitText waits until the page shows s and returns how long that took.
func (a *appTab) waitText(what, selector, s string, timeout time.Duration) time.Duration {
	a.t.Helper()
	return a.waitJS(what, fmt.Sprintf(`[...document.querySelectorAll(%q)].some((e) => e.innerText.includes(%q))`, selector, s), timeout)
}

// screenshots photographs the screen at a desktop's width and at a
// phone's (then goes back to the desktop), into the artifacts directory as
// <test>-<who>-<name>-1280.png and -375.png. Look at them.
func (a *appTab) screenshots(name string) {
	a.t.Helper()
	for _, size := range [][2]int64{{appDesktopWidth, appDesktopHeight}, {appPhoneWidth, appPhoneHeight}} {
		a.do("resize to "+fmt.Sprint(size[0]), chromedp.EmulateViewport(size[0], size[1]), chromedp.Sleep(150*time.Millisecond))
		if size[0] == appPhoneWidth {
			if w := appEval[float64](a, "measure the page", `document.documentElement.scrollWidth`); w > appPhoneWidth {
				widest := appEval[string](a, "find the widest element", `(() => {
					let out = "", right = 0;
					for (const el of document.body.querySelectorAll("*")) {
						const r = el.getBoundingClientRect();
						if (r.right > right) { right = r.right; out = el.tagName + "." + el.className + " (right edge " + Math.round(r.right) + "px)"; }
					}
					return out;
				})()`)
				a.t.Errorf("%s at %dpx: the page is %.0fpx wide (widest: %s), want no sideways scrolling on a phone", name, appPhoneWidth, w, widest)
			}
		}
		ctx, cancel := context.WithTimeout(a.ctx, stepTimeout)
		buf, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		cancel()
		if err != nil {
			a.t.Fatalf("browser (%s): screenshot %s: %v", a.who, name, err)
		}
		if _, err := png.Decode(bytes.NewReader(buf)); err != nil {
			a.t.Fatalf("screenshot %s: not a PNG: %v", name, err)
		}
		p := filepath.Join(a.b.shots, fmt.Sprintf("%s-%s-%s-%d.png", strings.NewReplacer("/", "-", " ", "_").Replace(a.t.Name()), a.who, name, size[0]))
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			a.t.Fatalf("save screenshot: %v", err)
		}
		a.t.Logf("screenshot: %s", p)
	}
	a.do("back to the desktop size", chromedp.EmulateViewport(appDesktopWidth, appDesktopHeight))
}

// requireAxe skips a test that checks its screens with axe-core, an npm
// package, when it is not installed: a fresh clone has only Go. With
// SWITCHBOARD_TEST_BROWSER=1 (CI) its absence is a failure.
func requireAxe(t *testing.T) {
	t.Helper()
	if _, err := axeSource(); err != nil {
		if os.Getenv(browserEnv) == "1" {
			t.Fatalf("axe-core is missing (%v) and %s=1: run npm ci --prefix e2e (.ci/install-deps does)", err, browserEnv)
		}
		t.Skipf("axe-core is missing (%v): skipping this browser test, which checks its screens with it; run npm ci --prefix e2e, or set %s=1 to make this a failure", err, browserEnv)
	}
}

// axeSource is axe-core's script, installed by npm ci --prefix e2e.
var axeSource = sync.OnceValues(func() ([]byte, error) {
	return os.ReadFile(filepath.Join("node_modules", "axe-core", "axe.min.js"))
})

// axe runs axe-core (WCAG 2 A and AA rules) on the screen as it is and
// fails on any serious or critical violation.
func (a *appTab) axe(screen string) {
	a.t.Helper()
	src, err := axeSource()
	if err != nil {
		a.t.Fatalf("axe-core: %v: run npm ci --prefix e2e (.ci/install-deps does)", err)
	}
	if !appEval[bool](a, "is axe loaded", `typeof window.axe === "object"`) {
		// Injected through the DevTools protocol, which the page's CSP does
		// not govern.
		appEval[bool](a, "inject axe-core", string(src)+"\n;true")
	}
	raw := appEval[string](a, "run axe on "+screen, `axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]}, resultTypes: ["violations"]})
		.then((r) => JSON.stringify(r.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ") + ": " + n.failureSummary)}))))`)
	var violations []struct {
		ID, Impact, Help string
		Nodes            []string
	}
	if err := json.Unmarshal([]byte(raw), &violations); err != nil {
		a.t.Fatalf("axe on %s: %v: %s", screen, err, raw)
	}
	for _, v := range violations {
		msg := fmt.Sprintf("axe on %s (%s): %s [%s] %s\n  %s", screen, a.who, v.Impact, v.ID, v.Help, strings.Join(v.Nodes, "\n  "))
		if v.Impact == "serious" || v.Impact == "critical" {
			a.t.Error(msg)
		} else {
			a.t.Log(msg)
		}
	}
}

// checkTokens checks that no token is where a script, the history or a
// log could find it: not in document.cookie, localStorage, sessionStorage
// or IndexedDB, not in the address, not in any URL the page requested. The
// session's cookie is HttpOnly: the browser holds it, no script reads it.
func (a *appTab) checkTokens() {
	a.t.Helper()
	stores := appEval[string](a, "read what script can read", `(async () => {
		const out = {cookie: document.cookie, local: Object.entries(localStorage), session: Object.entries(sessionStorage), idb: []};
		for (const info of (indexedDB.databases ? await indexedDB.databases() : [])) {
			const db = await new Promise((ok, fail) => { const r = indexedDB.open(info.name); r.onsuccess = () => ok(r.result); r.onerror = () => fail(r.error); });
			for (const name of db.objectStoreNames) {
				const rows = await new Promise((ok) => { const r = db.transaction(name).objectStore(name).getAll(); r.onsuccess = () => ok(r.result); r.onerror = () => ok([]); });
				out.idb.push([info.name, name, rows]);
			}
			db.close();
		}
		return JSON.stringify(out);
	})()`)
	for _, p := range []string{"sbat_", "sbrt_", "sbac_", "sbas_"} {
		if strings.Contains(stores, p) {
			a.t.Errorf("%s: a token (%s…) is readable by script: %.300s", a.who, p, stores)
		}
	}
	if loc := a.location(); strings.Contains(loc, "code=") || strings.Contains(loc, "sbat_") || strings.Contains(loc, "sbrt_") {
		a.t.Errorf("%s: the address still carries a code or token: %s", a.who, loc)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, u := range a.requests {
		if strings.Contains(u, "sbat_") || strings.Contains(u, "sbrt_") || strings.Contains(u, "sbas_") {
			a.t.Errorf("%s: a request carried a token in its URL: %.120s", a.who, u)
		}
	}
}

// sessionCookie is the app's session cookie as the browser keeps it
// (through the DevTools protocol: no script of the page can read it).
func (a *appTab) sessionCookie() *network.Cookie {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(a.ctx, stepTimeout)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{a.base + "/app/"}})
	if err != nil {
		a.t.Fatalf("browser (%s): read cookies: %v", a.who, err)
	}
	for _, c := range res.Cookies {
		if c.Name == "switchboard-session" {
			return c
		}
	}
	return nil
}

// sessionToken asks the server for an access token with cookie, as the
// app's page would (its header and origin), and returns the status.
func sessionTokenStatus(t *testing.T, base, cookie string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/app/session/token", nil)
	req.Header.Set("X-Switchboard-App", "1")
	req.Header.Set("Origin", base)
	req.AddCookie(&http.Cookie{Name: "switchboard-session", Value: cookie})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /app/session/token: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (a *appTab) checkOrigin() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, u := range a.offOrigin {
		a.t.Errorf("%s: the page requested %s, outside the server's origin %s", a.who, u, a.base)
	}
}

// streamRole says what the tab does for its person's event stream, as the
// network and the screen show it: "leader" (it reads the stream itself),
// "follower" (it reads none, yet says it is live: another tab relays the
// events) or "stopped".
func (a *appTab) streamRole() string {
	a.t.Helper()
	a.mu.Lock()
	reading := len(a.streamsOpen)
	a.mu.Unlock()
	if reading > 0 {
		return "leader"
	}
	if appEval[bool](a, "read the live indicator", `!!document.querySelector('.live[data-state="open"]')`) {
		return "follower"
	}
	return "stopped"
}

// lastResume is the Last-Event-ID the tab's latest stream was opened with
// ("" for a stream opened afresh).
func (a *appTab) lastResume() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.resumes) == 0 {
		return ""
	}
	return a.resumes[len(a.resumes)-1]
}

// leavePage and comeBack are what the browser does to a page it keeps in
// the back/forward cache (pagehide, then pageshow with persisted).
const (
	leavePage = `dispatchEvent(new PageTransitionEvent("pagehide", {persisted: true}))`
	comeBack  = `dispatchEvent(new PageTransitionEvent("pageshow", {persisted: true}))`
)

// resumeNextStreamFrom makes the tab's next stream ask to resume after id,
// whatever the page held (as after the server lost what the page last
// heard): the DevTools protocol rewrites that one request's Last-Event-ID.
func resumeNextStreamFrom(t *testing.T, a *appTab, id string) {
	t.Helper()
	if _, err := chromedp.Call(a.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
		{URLPattern: "*" + apiPrefix + "/events*", RequestStage: fetch.RequestStageRequest}}}); err != nil {
		t.Fatalf("Fetch.enable: %v", err)
	}
	go func() {
		for ev, err := range chromedp.Events(a.ctx, fetch.RequestPaused) {
			if err != nil {
				return
			}
			var headers []*fetch.HeaderEntry
			for k, v := range ev.Request.Headers {
				if !strings.EqualFold(k, "Last-Event-ID") {
					headers = append(headers, &fetch.HeaderEntry{Name: k, Value: fmt.Sprint(v)})
				}
			}
			headers = append(headers, &fetch.HeaderEntry{Name: "Last-Event-ID", Value: id})
			chromedp.Call(a.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID, Headers: headers})
			chromedp.Call(a.ctx, fetch.Disable, cdp.Empty{})
			return
		}
	}()
}

// appAPIKeySend sends a text through the public API with an API key and
// returns the message id.
func appAPIKeySend(t *testing.T, base, key, from, to, text string) int64 {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"from": from, "to": []string{to}, "message": text})
	r := postJSON(t, base+apiPrefix+"/sms/messages", key, string(body))
	var out struct {
		Data struct {
			Messages []struct {
				ID int64 `json:"id"`
			} `json:"messages"`
		} `json:"data"`
	}
	if r.status != http.StatusCreated && r.status != http.StatusOK {
		t.Fatalf("POST /sms/messages: status %d, want 201\nbody: %s", r.status, r.body)
	}
	if err := json.Unmarshal(r.body, &out); err != nil {
		t.Fatalf("POST /sms/messages: %v\nbody: %s", err, r.body)
	}
	if len(out.Data.Messages) == 0 {
		return 0 // every recipient skipped
	}
	return out.Data.Messages[0].ID
}

// ---- the inbox, worked by two people ----

// createAppTeam makes the account the app's multi-person tests work in:
// Maria, an admin, and James, front desk (only the lines assigned to him).
func createAppTeam(t *testing.T, db string) (acct, maria, james int64) {
	t.Helper()
	acct = createAccount(t, db, "Acme Dental")
	var role struct {
		ID int64 `json:"id"`
	}
	cliJSON(t, db, &role, "role", "create", "--account", fmt.Sprint(acct), "--name", "front-desk", "--permissions", "users:self,numbers:assigned")
	cliJSON(t, db, &role, "role", "create", "--account", fmt.Sprint(acct), "--name", "admin", "--permissions", "all")
	maria = createUser(t, db, acct, "--first", "Maria", "--last", "Garcia", "--username", "maria", "--password", "maria-password", "--role", "admin")
	james = createUser(t, db, acct, "--first", "James", "--last", "Chen", "--username", "james", "--password", "james-password", "--role", "front-desk")
	return acct, maria, james
}

func TestAppInboxInBrowser(t *testing.T) {
	t.Parallel()
	requireAxe(t)
	b := newAppBrowser(t)
	db := storetest.DSN(t, store.SQLite)

	acct, maria, james := createAppTeam(t, db)
	desk := createLine(t, db, acct, "--number", "4155550100", "--name", "Front desk").Number
	billing := createLine(t, db, acct, "--number", "4155550101", "--name", "Billing", "--users", ids(maria)).Number
	cliJSON(t, db, &struct{}{}, "rate", "set", "--account", fmt.Sprint(acct), "--prefix", "1", "--sms", "0.0079", "--mms", "0.02")
	key := createKey(t, db, acct, "front desk system", "all").Key
	// The Kannel driver, so that texts can arrive: the test plays Kannel's
	// sms-service calling the server's inbound URL, and a stub accepts every
	// send.
	kannel := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, "0: Accepted for delivery")
	}))
	t.Cleanup(kannel.Close)
	const kannelSecret = "app-browser-test-secret"
	base := startServer(t, db, "--carrier", "kannel", "--kannel-send-url", kannel.URL+"/cgi-bin/sendsms",
		"--kannel-user", "u", "--kannel-password", "p", "--kannel-secret", kannelSecret)
	inbound := func(from, to, text string) {
		t.Helper()
		q := url.Values{"secret": {kannelSecret}, "from": {from}, "to": {to}, "text": {text}, "coding": {"0"}, "charset": {"UTF-8"}, "ts": {fmt.Sprint(time.Now().Unix())}}
		r := oauthDo(t, http.MethodGet, base+"/carrier/kannel/inbound?"+q.Encode(), "", nil)
		if r.status/100 != 2 {
			t.Fatalf("inbound text %s -> %s: status %d, want 2xx\nbody: %s", from, to, r.status, r.body)
		}
	}

	// A line with more conversations than one page, to page through
	// (sent first: the patients' conversations are the newest).
	reminders := createLine(t, db, acct, "--number", "4155550102", "--name", "Reminders", "--users", ids(maria)).Number
	for i := range 52 {
		appAPIKeySend(t, base, key, reminders, fmt.Sprintf("1646555%04d", i), "Your cleaning is due.")
	}
	patients := []string{"12125550101", "12125550102", "12125550103"}
	for i, p := range patients {
		appAPIKeySend(t, base, key, desk, p, fmt.Sprintf("Hello patient %d: your appointment is on Tuesday.", i+1))
	}
	appAPIKeySend(t, base, key, billing, "12125550199", "Your invoice is ready.")

	// ---- both sign in; the role decides what each one sees ----
	mt := b.signIn(base, "maria", "maria-password")
	jt := b.signIn(base, "james", "james-password")
	for _, tab := range []*appTab{mt, jt} {
		for _, p := range patients {
			tab.waitText("the conversation with "+p+" in the list", ".conv-list", p[7:], 5*time.Second)
		}
	}
	if text := jt.text(); strings.Contains(text, "invoice") || strings.Contains(text, "Billing") {
		t.Errorf("james (numbers:assigned) sees the Billing line, which is assigned to maria only")
	}
	mt.waitText("the Billing conversation in maria's list", ".conv-list", "invoice", 5*time.Second)
	// What a role may not do is not offered: no call history for the front desk.
	if nav := appEval[string](jt, "read the navigation", `document.querySelector("nav").innerText`); strings.Contains(nav, "Calls") {
		t.Errorf("james's navigation offers Calls (%q), want it hidden: his role has no call reports", nav)
	}
	if nav := appEval[string](mt, "read the navigation", `document.querySelector("nav").innerText`); !strings.Contains(nav, "Calls") {
		t.Errorf("maria's navigation has no Calls (%q), want it: her role has call reports", nav)
	}
	if name := appEval[string](mt, "read the header", `document.querySelector(".who-name").textContent`); name != "Maria Garcia" {
		t.Errorf("maria's header names %q, want Maria Garcia", name)
	}
	mt.waitJS("the live indicator", `document.querySelector(".live").dataset.state === "open"`, 5*time.Second)
	jt.waitJS("the live indicator", `document.querySelector(".live").dataset.state === "open"`, 5*time.Second)
	mt.screenshots("inbox")
	mt.axe("the inbox")

	// ---- the line selector, and paging: 50 rows, then "Load more" ----
	mt.do("choose the Reminders line", chromedp.SetValue(chromedp.ID("line-select"), reminders),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("line-select").dispatchEvent(new Event("change"))`))
	mt.waitJS("the first page of the line", `location.search.includes("line=`+reminders+`") && document.querySelectorAll(".conv").length === 50 && !document.querySelector(".more").hidden`, 5*time.Second)
	mt.do("load more", chromedp.Click(chromedp.CSS(".more")))
	mt.waitJS("the second page", `document.querySelectorAll(".conv").length === 52 && document.querySelector(".more").hidden`, 5*time.Second)
	if n := appEval[int](mt, "count other lines' rows", `[...document.querySelectorAll(".conv")].filter((a) => !a.href.includes("/`+reminders+`/")).length`); n != 0 {
		t.Errorf("with the Reminders line chosen the list shows %d conversations of other lines", n)
	}
	mt.do("back to all lines", chromedp.SetValue(chromedp.ID("line-select"), ""),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("line-select").dispatchEvent(new Event("change"))`))
	mt.waitJS("all lines again", `!location.search.includes("line=") && document.querySelectorAll(".conv").length === 50`, 5*time.Second)

	// ---- both open the same conversation (james with the keyboard) ----
	patient := patients[2] // the newest: first in the list
	mt.do("open the conversation", chromedp.Click(chromedp.CSS(fmt.Sprintf(`a.conv[href*="/%s/%s"]`, desk, patient))))
	jt.do("move to the first conversation with j", chromedp.KeyEvent("j"))
	jt.waitJS("the first row focused", `document.activeElement.classList.contains("conv")`, 3*time.Second)
	jt.do("open it with Enter", chromedp.KeyEvent("\r"))
	for _, tab := range []*appTab{mt, jt} {
		tab.waitJS("the thread open", fmt.Sprintf(`location.pathname === "/app/inbox/%s/%s" && document.querySelector(".thread .msg")`, desk, patient), 5*time.Second)
		tab.waitText("the message in the thread", ".timeline", "Hello patient 3", 3*time.Second)
	}
	mt.screenshots("thread")
	mt.axe("the thread")

	// James's role sees only himself in GET /users, but the picker offers
	// the teammates who work the line (GET /sms/teammates): himself and
	// Maria, whose role has every line.
	jt.waitJS("the teammates in the assignee choices", `[...document.querySelectorAll("#assign-select option")].map((o) => o.textContent).join("|") === "Nobody|You|Maria Garcia"`, 5*time.Second)

	// ---- a text sent through the API appears live in both ----
	sentAt := time.Now()
	appAPIKeySend(t, base, key, desk, patient, "Reminder: bring your insurance card.")
	for _, tab := range []*appTab{mt, jt} {
		d := tab.waitText("the API's text in the open thread", ".timeline", "bring your insurance card", 5*time.Second)
		tab.waitText("the API's text in the list", ".conv-list", "bring your insurance card", 2*time.Second)
		t.Logf("%s: the text sent through the API was on screen %v after the send returned (%v after it started)", tab.who, d, time.Since(sentAt))
	}

	// ---- a text arrives for another conversation: unread badges, live ----
	other := patients[0]
	inbound(other, desk, "Can I move my appointment to Wednesday?")
	for _, tab := range []*appTab{mt, jt} {
		d := tab.waitJS("the unread text in the list", fmt.Sprintf(`(() => { const a = document.querySelector('a.conv[href*="/%s/%s"]'); return a && a.classList.contains("unread") && a.innerText.includes("Wednesday") && a.querySelector(".badge").textContent.startsWith("1"); })()`, desk, other), 5*time.Second)
		tab.waitJS("the header's unread badge", `document.querySelector(".nav .badge") && document.querySelector(".nav .badge").textContent === "1"`, 3*time.Second)
		tab.waitJS("the unread count in the tab's title", `document.title.startsWith("(1) ")`, 3*time.Second)
		tab.waitJS("the line's unread count", `[...document.querySelectorAll("#line-select option")].some((o) => o.textContent.includes("Front desk") && o.textContent.includes("(1 unread)"))`, 3*time.Second)
		t.Logf("%s: the inbound text was in the list, unread, %v after the carrier delivered it", tab.who, d)
		if tab.location() != base+"/app/inbox/"+desk+"/"+patient {
			t.Errorf("%s: the arriving text moved the person off the thread they had open (now at %s)", tab.who, tab.location())
		}
	}
	mt.screenshots("inbox-unread")
	// Opening it marks it read for maria only (read state is personal).
	mt.do("open the unread conversation", chromedp.Click(chromedp.CSS(fmt.Sprintf(`a.conv[href*="/%s/%s"]`, desk, other))))
	mt.waitText("the inbound text in the thread", ".timeline", "Wednesday", 5*time.Second)
	mt.waitJS("read: no unread badge in the header", `document.querySelector(".nav .badge").hidden`, 3*time.Second)
	mt.waitJS("read: the row is not unread", fmt.Sprintf(`!document.querySelector('a.conv[href*="/%s/%s"]').classList.contains("unread")`, desk, other), 3*time.Second)
	// For james it is still unread (read state is personal): a second text
	// to that conversation makes his count 2, not the 1 it would be had
	// maria's read cleared his.
	inbound(other, desk, "Or Thursday, if Wednesday is full?")
	jt.waitJS("james's unread count untouched by maria's read", fmt.Sprintf(`(() => { const b = document.querySelector('a.conv[href*="/%s/%s"] .badge'); return b && b.textContent.startsWith("2"); })()`, desk, other), 5*time.Second)
	mt.waitText("the second text in maria's open thread", ".timeline", "Or Thursday", 5*time.Second)
	mt.do("back to the first conversation", chromedp.Click(chromedp.CSS(fmt.Sprintf(`a.conv[href*="/%s/%s"]`, desk, patient))))
	mt.waitText("the thread", ".timeline", "insurance card", 5*time.Second)

	// ---- a text arrives in the open thread ----
	inbound(patient, desk, "Thanks! Is parking free?")
	for _, tab := range []*appTab{mt, jt} {
		d := tab.waitText("the inbound text in the open thread", ".timeline", "Is parking free?", 5*time.Second)
		t.Logf("%s: the inbound text was in the open thread %v after the carrier delivered it", tab.who, d)
	}

	// ---- james replies in the app; maria sees it live ----
	reply := "See you Tuesday at 9!"
	jt.do("type a reply", chromedp.Click(chromedp.CSS(".composer textarea")), chromedp.SendKeys(chromedp.CSS(".composer textarea"), reply))
	jt.do("send it", chromedp.Click(chromedp.CSS(".composer button[type=submit]")))
	jt.waitText("james's reply in his thread", ".timeline", reply, 5*time.Second)
	d := mt.waitText("james's reply in maria's thread", ".timeline", reply, 5*time.Second)
	mt.waitText("james's reply in maria's list", ".conv-list", reply, 2*time.Second)
	t.Logf("maria saw james's reply %v after his thread showed it", d)
	if n := appEval[int](jt, "count the reply", fmt.Sprintf(`[...document.querySelectorAll(".msg-text")].filter((e) => e.textContent === %q).length`, reply)); n != 1 {
		t.Errorf("james's thread shows his reply %d times, want once", n)
	}

	// ---- maria resolves (with a note) and assigns to james; james sees both ----
	mt.do("click Resolve", chromedp.Click(chromedp.CSS(".thread-actions .btn[aria-keyshortcuts=e]")))
	mt.do("write a note", chromedp.WaitVisible(chromedp.ID("resolve-note")), chromedp.SendKeys(chromedp.ID("resolve-note"), "Booked for Tuesday"))
	mt.screenshots("resolve-dialog")
	mt.do("confirm", chromedp.Click(chromedp.CSS("dialog .btn-primary")))
	mt.waitText("resolved in maria's thread", ".thread-state", "Resolved", 3*time.Second)
	d = jt.waitText("resolved in james's thread", ".thread-state", "Resolved", 3*time.Second)
	t.Logf("james saw the resolve %v after maria's screen did", d)
	jt.waitText("maria's note in james's thread", ".timeline .note", "Booked for Tuesday", 3*time.Second)
	jt.waitText("resolved in james's list", ".conv[aria-current=true]", "Resolved", 2*time.Second)

	mt.do("assign to james", chromedp.SetValue(chromedp.ID("assign-select"), fmt.Sprint(james)),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("assign-select").dispatchEvent(new Event("change"))`))
	mt.waitText("assigned in maria's thread", ".thread-state", "James Chen", 3*time.Second)
	d = jt.waitText("assigned in james's thread", ".thread-state", "Assigned to You", 3*time.Second)
	t.Logf("james saw the assignment %v after maria's screen did", d)
	// What the team did shows between the messages, in each one's words.
	mt.waitText("the assignment in maria's timeline", ".timeline .did", "You assigned it to James Chen", 5*time.Second)
	jt.waitText("the assignment in james's timeline", ".timeline .did", "Maria Garcia assigned it to you", 5*time.Second)
	jt.waitText("the resolve in james's timeline", ".timeline .did", "Maria Garcia resolved the conversation", 5*time.Second)

	// ---- james's tab behind another: the browser notifies him ----
	jt.backgroundWithNotifications()

	// ---- a note mentions james, picked from the teammates who work the line ----
	mt.do("open the note box", chromedp.Click(chromedp.CSS(".note-box summary")))
	mt.do("type @Jam", chromedp.SendKeys(chromedp.ID("note-text"), "@Jam"))
	mt.do("pick James", chromedp.WaitVisible(chromedp.CSS(".mention-option")), chromedp.Click(chromedp.CSS(".mention-option")))
	mt.waitJS("his name written", `document.getElementById("note-text").value === "@James Chen "`, 3*time.Second)
	mt.do("finish the note", chromedp.SendKeys(chromedp.ID("note-text"), "can you call back?"), chromedp.Click(chromedp.CSS(".note-form button[type=submit]")))
	jt.waitText("the note in james's thread", ".timeline .note", "@James Chen can you call back?", 5*time.Second)
	jt.waitNotification("Maria Garcia mentioned you", "@James Chen can you call back?")
	// A new patient's text: unassigned, on a line james works.
	inbound("12125550188", desk, "Running ten minutes late")
	jt.waitNotification("Text from +1 (212) 555-0188", "Running ten minutes late")
	jt.foreground()
	jt.screenshots("thread-assigned")

	// The "Mine" filter now holds it.
	jt.do("filter Mine with the keyboard", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`), chromedp.KeyEvent("3"))
	jt.waitJS("the Mine filter", `location.search.includes("view=mine")`, 3*time.Second)
	jt.waitJS("only the assigned conversation", fmt.Sprintf(`document.querySelectorAll(".conv").length === 1 && document.querySelector(".conv").href.includes("/%s")`, patient), 5*time.Second)

	// So does "Resolved" (resolved=true): the only resolved conversation.
	jt.do("filter Resolved with the keyboard", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`), chromedp.KeyEvent("6"))
	jt.waitJS("the Resolved filter", `location.search.includes("view=resolved")`, 3*time.Second)
	jt.waitJS("only the resolved conversation", fmt.Sprintf(`document.querySelectorAll(".conv").length === 1 && document.querySelector(".conv").href.includes("/%s")`, patient), 5*time.Second)

	jt.do("open it again", chromedp.Click(chromedp.CSS("a.conv")))
	jt.waitJS("the thread open", `document.querySelector(".thread .msg")`, 5*time.Second)

	// ---- after a lost connection the stream resumes from its last id ----
	// The text sent while the stream is stopped must come on the resumed
	// stream (a stream opened afresh starts after it): the page notes the
	// messages of the events the stream brings from the reconnection on.
	// The page stops its stream when left (pagehide) and resumes it when it
	// comes back (pageshow), as the back/forward cache does. The text comes
	// on the resumed stream if the screen shows it without being drawn
	// again (a reset would draw it again), and that stream asked to resume.
	jt.do("leave the page", chromedp.Evaluate[chromedp.Void](`document.querySelector(".inbox").dataset.before = "resume"; `+leavePage))
	jt.waitJS("the stream closed", `document.querySelector(".live").dataset.state === "closed"`, 5*time.Second)
	appAPIKeySend(t, base, key, desk, patient, "Sent while james was offline.")
	jt.do("come back", chromedp.Evaluate[chromedp.Void](comeBack))
	jt.waitText("the missed text after resuming", ".timeline", "while james was offline", 5*time.Second)
	if !appEval[bool](jt, "look at the screen", `document.querySelector(".inbox").dataset.before === "resume"`) {
		t.Errorf("coming back drew the screen again: the missed text did not come on the resumed stream")
	}
	if last := jt.lastResume(); !strings.HasPrefix(last, "evt_") {
		t.Errorf("the stream after coming back was opened with Last-Event-ID %q, want the last id the page heard", last)
	}

	// ---- a reset (an id the server does not hold) reloads the screen ----
	jt.do("mark the screen, leave", chromedp.Evaluate[chromedp.Void](`document.querySelector(".inbox").dataset.before = "reset"; `+leavePage))
	resumeNextStreamFrom(t, jt, "evt_999999999")
	jt.do("come back, resuming from an id the server does not hold", chromedp.Evaluate[chromedp.Void](comeBack))
	jt.waitJS("the screen drawn again after the reset", `document.querySelector(".inbox") && !document.querySelector(".inbox").dataset.before && document.querySelector(".thread .msg")`, 5*time.Second)
	jt.waitJS("live again", `document.querySelector(".live").dataset.state === "open"`, 5*time.Second)

	// ---- the phone's layout: list and thread are separate screens ----
	jt.do("phone size", chromedp.EmulateViewport(appPhoneWidth, appPhoneHeight))
	if appEval[bool](jt, "is the list visible", `getComputedStyle(document.querySelector(".list-pane")).display !== "none"`) {
		t.Errorf("at %dpx with a thread open the list is visible too, want the thread alone", appPhoneWidth)
	}
	jt.do("desktop size", chromedp.EmulateViewport(appDesktopWidth, appDesktopHeight))

	// ---- the help dialog ----
	jt.do("open the help", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`), chromedp.KeyEvent("?"))
	jt.waitText("the shortcuts", "dialog", "Next conversation", 3*time.Second)
	jt.axe("the help dialog")
	jt.do("close the help", chromedp.KeyEvent("\x1b"))

	// ---- a page left behind closes its stream ----
	// Over HTTP/1.1 a browser holds at most six connections to a server: if
	// pages kept in the back/forward cache kept their streams, a few visits
	// would leave the app unable to load anything.
	// A plain tab (no DevTools network domain), opening /app/ as a person
	// does: before the app closed its stream on pagehide, the fifth visit
	// here loaded nothing (seen in this test and in bench/app-budget.sh).
	{
		plain, cancel := chromedp.NewContext(b.ctx)
		// Its first action opens the tab, outside any step's timeout (which
		// would close the tab with it).
		if err := chromedp.Do(plain, chromedp.EmulateViewport(appDesktopWidth, appDesktopHeight)); err != nil {
			t.Fatalf("plain tab: %v", err)
		}
		step := func(what string, timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
			t.Helper()
			ctx, stop := context.WithTimeout(plain, timeout)
			defer stop()
			if err := chromedp.Do(ctx, actions...); err != nil {
				t.Fatalf("plain tab: %s: %v", what, err)
			}
		}
		step("open the app", 15*time.Second, chromedp.Navigate(base+"/app/"), chromedp.WaitVisible(chromedp.CSS(`input[name="username"]`)),
			chromedp.SendKeys(chromedp.CSS(`input[name="username"]`), "james"),
			chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "james-password"),
			chromedp.Click(chromedp.ID("sign-in")))
		listed := chromedp.Poll[chromedp.Void](`location.pathname.startsWith("/app/inbox") && document.querySelectorAll("a.conv").length > 0`)
		// Signing in navigates twice (back to the app, which then loads the
		// list): a poll a navigation interrupts starts again.
		for deadline := time.Now().Add(15 * time.Second); ; {
			ctx, stop := context.WithTimeout(plain, 5*time.Second)
			err := chromedp.Do(ctx, listed)
			stop()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("plain tab: the list after signing in: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		for i := range 8 {
			step(fmt.Sprintf("the list after opening the app again (%d of 8)", i+1), 10*time.Second, chromedp.Navigate(base+"/app/"), listed)
		}
		cancel()
	}

	for _, tab := range []*appTab{mt, jt} {
		tab.checkTokens()
	}

	// ---- sign-out revokes the grant ----
	mariasSession := mt.sessionCookie()
	if mariasSession == nil || !mariasSession.HTTPOnly || mariasSession.SameSite != network.CookieSameSiteStrict || mariasSession.Path != "/app/" {
		t.Fatalf("maria's session cookie: %+v, want HttpOnly, SameSite=Strict, Path=/app/", mariasSession)
	}
	mt.do("sign out", chromedp.Click(chromedp.CSS(".who button")))
	mt.waitText("the signed-out screen", "main", "You signed out", 5*time.Second)
	if c := mt.sessionCookie(); c != nil {
		t.Errorf("after signing out the browser still holds the session cookie")
	}
	if got := sessionTokenStatus(t, base, mariasSession.Value); got != http.StatusUnauthorized {
		t.Errorf("maria's session after she signed out: %d, want 401", got)
	}
	mt.screenshots("signed-out")
	mt.axe("the signed-out screen")

	// ---- a revoked grant ends the session: signed out, not stuck ----
	var grants struct {
		Grants []struct {
			ID      int64 `json:"id"`
			Revoked bool  `json:"revoked"`
		} `json:"grants"`
	}
	cliJSON(t, db, &grants, "oauth", "grants", "--account", fmt.Sprint(acct), "--user", fmt.Sprint(james))
	for _, g := range grants.Grants {
		if !g.Revoked {
			cliJSON(t, db, &struct{}{}, "oauth", "revoke-grant", "--account", fmt.Sprint(acct), "--id", fmt.Sprint(g.ID))
		}
	}
	jt.do("reload the app", chromedp.Reload())
	jt.waitText("the session-ended screen", "main", "Your session has ended", 10*time.Second)
	jt.waitJS("a sign-in button", `[...document.querySelectorAll("main button")].some((b) => b.textContent === "Sign in")`, 2*time.Second)
	requests := func() int {
		jt.mu.Lock()
		defer jt.mu.Unlock()
		return len(jt.requests)
	}
	// A loop has no end to wait for, so this is the one bounded quiet
	// period: a second in which the page may make at most one request. A
	// page that stops passes however loaded the machine; a loaded machine
	// only slows a loop down.
	before := requests()
	time.Sleep(time.Second)
	after := requests()
	if after > before+1 {
		t.Errorf("after the session ended the page made %d more requests in a second, want it to stop (no loop)", after-before)
	}
	if !strings.HasPrefix(jt.location(), base+"/app/") {
		t.Errorf("after the session ended the browser is at %s, want the app's signed-out screen", jt.location())
	}
	jt.screenshots("session-ended")
}
