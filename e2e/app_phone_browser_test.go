package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// The app on a phone (375 × 812) and what the first run of issue 33 found:
// a thread gives most of the screen to its messages (its actions in a
// menu), the call history shows its results first (the filters behind a
// button) in the person's time zone, with extensions named and calls
// linked to their number's texts; new messages come into view and the
// composer never hides the last one; opening a thread without a draft
// logs no error.
func TestAppPhoneLayoutInBrowser(t *testing.T) {
	t.Parallel()
	requireAxe(t)
	b := newAppBrowser(t)
	db := storetest.DSN(t, store.SQLite)
	dir := t.TempDir()

	acct := createAccount(t, db, "Acme Dental")
	cli(t, db, "role", "create", "--account", fmt.Sprint(acct), "--name", "admin", "--permissions", "all")
	// Pia reads times in New York's zone and answers on extension 100.
	createUser(t, db, acct, "--first", "Pia", "--last", "Phone", "--username", "pia", "--password", "pia-password", "--role", "admin",
		"--timezone", "America/New_York", "--extensions", "100")
	desk := createLine(t, db, acct, "--number", "4155550100", "--name", "Front desk").Number
	cliJSON(t, db, &struct{}{}, "rate", "set", "--account", fmt.Sprint(acct), "--prefix", "1", "--sms", "0.0079", "--mms", "0.02")
	key := createKey(t, db, acct, "front desk system", "all").Key

	// Two calls from one caller (the second has an earlier call) and one
	// Pia made from her extension to a patient.
	const caller, patient = "14155550123", "12125550101"
	now := time.Now().UTC().Truncate(time.Second)
	t1, t2, t3 := now.Add(-3*time.Hour), now.Add(-2*time.Hour), now.Add(-time.Hour)
	ts := func(t time.Time) string { return t.Format(time.RFC3339) }
	calls := []map[string]any{
		{"id": fmt.Sprintf("%d.1", t1.Unix()), "direction": "inbound", "status": "missed", "callerNumber": caller, "calledNumber": desk,
			"dialledNumber": desk, "startTime": ts(t1), "durationSeconds": 20, "talkTimeSeconds": 0},
		{"id": fmt.Sprintf("%d.2", t2.Unix()), "direction": "inbound", "status": "answered", "callerName": "Pat Caller", "callerNumber": caller,
			"calledNumber": desk, "dialledNumber": desk, "startTime": ts(t2), "durationSeconds": 95, "talkTimeSeconds": 80},
		{"id": fmt.Sprintf("%d.3", t3.Unix()), "direction": "outbound", "status": "answered", "callerNumber": "100", "callerIdExternal": desk,
			"calledNumber": patient, "dialledNumber": patient, "startTime": ts(t3), "durationSeconds": 60, "talkTimeSeconds": 50},
	}
	var jsonl bytes.Buffer
	for _, c := range calls {
		line, err := json.Marshal(c)
		must(t, err)
		jsonl.Write(append(line, '\n'))
	}
	callsFile := filepath.Join(dir, "calls.jsonl")
	must(t, os.WriteFile(callsFile, jsonl.Bytes(), 0o600))
	var sum struct{ Imported, Skipped int }
	cliJSON(t, db, &sum, "calls", "import", callsFile, "--account", fmt.Sprint(acct), "--media", "file://"+filepath.ToSlash(filepath.Join(dir, "media")))
	if sum.Imported != 3 {
		t.Fatalf("calls import: %+v, want 3 imported", sum)
	}

	base := startServer(t, db)
	// A thread longer than a phone's screen.
	for i := range 14 {
		appAPIKeySend(t, base, key, desk, patient, fmt.Sprintf("Reminder %d: your cleaning is on Tuesday at 9.", i+1))
	}

	a := b.signIn(base, "pia", "pia-password")
	a.do("phone size", chromedp.EmulateViewport(appPhoneWidth, appPhoneHeight))

	// ---- the thread: at least 60% of the screen is messages ----
	// Only what opening the thread logs counts below (the first visit's
	// session probe answers 401 before the sign-in, as designed).
	a.mu.Lock()
	consoleFrom := len(a.console)
	a.mu.Unlock()
	a.do("open the thread", chromedp.Click(chromedp.CSS(fmt.Sprintf(`a.conv[href*="/%s/%s"]`, desk, patient))))
	a.waitText("the newest message", ".timeline", "Reminder 14:", 5*time.Second)
	// lastInView: the newest message is wholly inside the scrolling timeline.
	const lastInView = `(() => { const s = document.querySelector('.timeline-scroll').getBoundingClientRect();
		const m = [...document.querySelectorAll('.timeline .msg')].pop().getBoundingClientRect();
		return m.top >= s.top - 1 && m.bottom <= s.bottom + 1 && s.bottom <= innerHeight; })()`
	a.waitJS("the newest message in view", lastInView, 3*time.Second)
	share := appEval[float64](a, "measure the timeline", `document.querySelector('.timeline-scroll').getBoundingClientRect().height / innerHeight`)
	t.Logf("at %d×%d the messages take %.0f%% of the screen", appPhoneWidth, appPhoneHeight, share*100)
	if share < 0.6 {
		t.Errorf("at %d×%d the thread's messages take %.0f%% of the screen, want at least 60%%", appPhoneWidth, appPhoneHeight, share*100)
	}
	if appEval[bool](a, "look for the actions", `getComputedStyle(document.querySelector('.thread-actions')).display !== 'none'`) {
		t.Errorf("at %dpx the thread's actions are on screen, want them in a menu", appPhoneWidth)
	}
	if w := appEval[float64](a, "measure the page", `document.documentElement.scrollWidth`); w > appPhoneWidth {
		t.Errorf("the thread at %dpx is %.0fpx wide, want no sideways scrolling", appPhoneWidth, w)
	}
	a.screenshots("phone-thread")
	a.do("phone size again", chromedp.EmulateViewport(appPhoneWidth, appPhoneHeight))
	a.do("open the actions menu", chromedp.Click(chromedp.CSS(".thread-menu-btn")))
	a.waitJS("the actions shown", `getComputedStyle(document.querySelector('.thread-actions')).display !== 'none' && document.querySelector('.thread-menu-btn').getAttribute('aria-expanded') === 'true'`, 3*time.Second)
	a.axe("the thread's actions menu on a phone")
	a.do("close it with Escape", chromedp.Focus(".thread-actions button"), chromedp.KeyEvent("\x1b"))
	a.waitJS("the actions hidden", `getComputedStyle(document.querySelector('.thread-actions')).display === 'none'`, 3*time.Second)

	// ---- no draft, no error ----
	a.mu.Lock()
	var errs []string
	for _, m := range a.console[consoleFrom:] {
		if strings.HasPrefix(m, "error") {
			errs = append(errs, m)
		}
	}
	a.mu.Unlock()
	if len(errs) > 0 {
		t.Errorf("opening a thread without a draft logged errors: %q", errs)
	}

	// ---- a new message comes into view; the composer hides none ----
	appAPIKeySend(t, base, key, desk, patient, "Reminder 15: bring your insurance card.")
	a.waitText("the live message", ".timeline", "Reminder 15:", 5*time.Second)
	a.waitJS("the live message in view", lastInView, 3*time.Second)
	a.do("desktop size", chromedp.EmulateViewport(appDesktopWidth, appDesktopHeight))
	a.waitJS("the newest message in view on a desktop", lastInView, 3*time.Second)
	// The preview of what the box would send grows the composer.
	a.do("write a reply", chromedp.SendKeys(`form.composer textarea`, "Thank you!\nSee you then.\nBest,\nthe front desk"))
	a.waitJS("the preview under the box", `!document.querySelector('.cmp-preview').hidden`, 5*time.Second)
	a.waitJS("the newest message still in view", lastInView, 3*time.Second)

	// Older messages show their day and time.
	stamp := appEval[string](a, "format an older message's time", `import('/app/js/ui.js').then((m) => m.formatStamp('2025-03-04T15:04:00Z'))`)
	if !strings.Contains(stamp, "2025") || !strings.Contains(stamp, ":04") {
		t.Errorf("an older message's time shows as %q, want its date and its time of day", stamp)
	}

	// ---- the call history: results first, filters behind a button ----
	a.do("phone size", chromedp.EmulateViewport(appPhoneWidth, appPhoneHeight))
	a.do("open the call history", chromedp.Navigate(base+"/app/calls"))
	a.waitJS("three calls", `document.querySelectorAll('.calls-table tbody tr').length === 3`, 10*time.Second)
	if appEval[bool](a, "look for the filters", `getComputedStyle(document.querySelector('.calls-search')).display !== 'none'`) {
		t.Errorf("at %dpx the call filters are shown before the results, want them behind a button", appPhoneWidth)
	}
	if top := appEval[float64](a, "find the results", `document.querySelector('.calls-table tbody tr').getBoundingClientRect().top`); top > appPhoneHeight/2 {
		t.Errorf("at %dpx the first call is %.0fpx down the screen, want the results first", appPhoneWidth, top)
	}
	text := a.text()
	for _, want := range []string{"America/New_York", "Pia Phone", "ext. 100"} {
		if !strings.Contains(text, want) {
			t.Errorf("call history: no %q on the page (the person's zone named, the extension named)%s", want, a.where())
		}
	}
	// The table's times are the zone's: the newest call's hour in New York.
	ny, err := time.LoadLocation("America/New_York")
	must(t, err)
	if first := appEval[string](a, "read the first call's time", `document.querySelector('.calls-table tbody th').innerText`); !strings.Contains(first, t3.In(ny).Format("3:04")) {
		t.Errorf("the newest call shows %q, want its time in New York (%s)", first, t3.In(ny).Format("3:04 PM"))
	}
	a.screenshots("phone-calls")
	a.do("phone size again", chromedp.EmulateViewport(appPhoneWidth, appPhoneHeight))
	a.do("show the filters", chromedp.Click(chromedp.CSS(".filters-toggle")))
	a.waitJS("the filters shown", `getComputedStyle(document.querySelector('.calls-search')).display !== 'none'`, 3*time.Second)
	a.axe("the call filters on a phone")

	// A call links to its number's texts.
	href := appEval[string](a, "read the outbound call's texts link", `[...document.querySelectorAll('.calls-table tbody tr')].find((r) => r.innerText.includes('Pia Phone')).querySelector('a.texts-link').getAttribute('href')`)
	if want := "/app/inbox/" + desk + "/" + patient + "?new=1"; href != want {
		t.Errorf("the outbound call links to %q, want the conversation %q", href, want)
	}
	// The caller's second call links to the earlier one.
	a.do("desktop size", chromedp.EmulateViewport(appDesktopWidth, appDesktopHeight))
	a.do("open the caller's second call", chromedp.Click(chromedp.CSS(`.calls-table tbody tr:nth-child(2) th a`)))
	a.waitText("the call", "main", "Call from Pat Caller", 5*time.Second)
	a.do("follow the earlier calls", chromedp.Click(chromedp.CSS(`a[href^="/app/calls?"][href*="search="]`)))
	a.waitJS("the caller's calls", `document.querySelectorAll('.calls-table tbody tr').length === 2`, 10*time.Second)

	// ---- the header's places for what comes next ----
	// "/" focuses the search field anywhere (not while typing).
	a.do("press /", chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`), chromedp.KeyEvent("/"))
	a.waitJS("the search field focused", `document.activeElement === document.getElementById('app-search')`, 3*time.Second)
	a.do("search", chromedp.SendKeys("#app-search", "Tuesday\r"))
	a.waitJS("the search screen", `location.pathname === '/app/search' && new URLSearchParams(location.search).get('q') === 'Tuesday'`, 5*time.Second)
	if nav := appEval[string](a, "read the navigation", `document.querySelector('#topbar nav').innerText`); !strings.Contains(nav, "Contacts") {
		t.Errorf("the navigation %q has no Contacts entry", nav)
	}
	// "New text": a line and a number open the conversation, ready for its
	// first text, which sends.
	a.do("New text", chromedp.Click(chromedp.CSS(".btn-new")))
	a.do("a number", chromedp.WaitVisible(chromedp.ID("new-text-number")), chromedp.SendKeys(chromedp.ID("new-text-number"), "(212) 555-0177"))
	a.waitText("the number as it will be texted", "#new-text-shown", "(212) 555-0177", 3*time.Second)
	a.axe("the New text dialog")
	a.do("write the text", chromedp.Click(chromedp.CSS("dialog .btn-primary")))
	a.waitJS("the new conversation", fmt.Sprintf(`location.pathname === "/app/inbox/%s/12125550177" && document.activeElement === document.querySelector('form.composer textarea')`, desk), 5*time.Second)
	a.do("type the first text", chromedp.SendKeys(`form.composer textarea`, "Hello from the front desk."),
		chromedp.Click(chromedp.CSS(".composer button[type=submit]")))
	a.waitText("the first text in the thread", ".timeline", "Hello from the front desk.", 5*time.Second)
	a.waitText("the conversation in the list", ".conv-list", "Hello from the front desk.", 5*time.Second)
	// Clicking Send left the box (a blur saves the draft): the draft is
	// gone once the text is sent, and the box does not say it was saved.
	a.waitText("the send confirmed", ".cmp-status", "Sent.", 5*time.Second)
	if got := appEval[float64](a, "the draft after sending", fmt.Sprintf(`import('/app/js/api.js').then((m) =>
		m.api('GET', '/sms/drafts/sms-%s-12125550177').then(() => 200, (e) => e.status))`, desk)); got != 404 {
		t.Errorf("GET the draft after sending: %v, want 404 (discarded)", got)
	}
	a.screenshots("new-text")
}
