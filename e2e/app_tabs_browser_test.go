package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// One person's tabs share one event stream: over plain HTTP/1.1 a browser
// opens at most six connections to a server, and a stream per tab left the
// sixth tab of the app unable to load anything (docs/decisions.md, "One
// stream for a person's tabs"). Every tab here is in one browser context,
// so they share Web Locks and BroadcastChannels as a person's tabs do; a
// fourth tab, signed in as someone else, must get a stream of its own.
func TestAppTabsShareOneStream(t *testing.T) {
	t.Parallel()
	b := newAppBrowser(t)
	db := storetest.DSN(t, store.SQLite)

	acct, maria, james := createAppTeam(t, db)
	desk := createLine(t, db, acct, "--number", "4155550100", "--name", "Front desk", "--users", ids(maria, james)).Number
	// Billing is maria's alone: james's stream must carry none of it.
	billing := createLine(t, db, acct, "--number", "4155550101", "--name", "Billing", "--users", ids(maria)).Number
	cliJSON(t, db, &struct{}{}, "rate", "set", "--account", fmt.Sprint(acct), "--prefix", "1", "--sms", "0.0079", "--mms", "0.02")
	key := createKey(t, db, acct, "front desk system", "all").Key
	kannel := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, "0: Accepted for delivery")
	}))
	t.Cleanup(kannel.Close)
	base, private := startServerAddrs(t, db, "--metrics-addr", "127.0.0.1:0", "--carrier", "kannel", "--kannel-send-url", kannel.URL+"/cgi-bin/sendsms",
		"--kannel-user", "u", "--kannel-password", "p", "--kannel-secret", "app-tabs-test-secret")
	const patient, payer = "12125550101", "12125550199"
	appAPIKeySend(t, base, key, desk, patient, "Hello: your appointment is on Tuesday.")
	appAPIKeySend(t, base, key, billing, payer, "Your invoice is ready.")

	// streamsOpen reads how many streams the server holds open.
	openRe := regexp.MustCompile(`(?m)^switchboard_event_streams_open (\d+)$`)
	streamsOpen := func() int {
		t.Helper()
		r := request(t, http.MethodGet, private+"/metrics", "")
		m := openRe.FindSubmatch(r.body)
		if r.status != http.StatusOK || m == nil {
			t.Fatalf("GET /metrics: status %d, no switchboard_event_streams_open", r.status)
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	waitStreams := func(what string, want int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			got := streamsOpen()
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the server holds %d streams open, want %d", what, got, want)
			}
		}
	}

	// A tab that holds a browser context for the others, so that closing
	// any app tab leaves the context (and the rest) open.
	holder, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The first action opens the tab: not under a timeout, which would
	// close the tab with it.
	if err := chromedp.Do(holder, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("browser: the holder tab: %v", err)
	}
	beside := chromedp.WithExistingBrowserContext(chromedp.FromContext(holder).BrowserContextID)
	// The first tab signs in; the browser's later tabs are signed in by
	// its session cookie. Another person signs in in a browser context of
	// their own (one browser holds one session).
	openTab := func(username, password string, n int, opts ...chromedp.ContextOption) *appTab {
		t.Helper()
		if opts == nil {
			opts = []chromedp.ContextOption{beside}
		}
		a := b.openAppWith(base, fmt.Sprintf("%s-%d", username, n), opts...)
		if n == 1 {
			a.signIn(username, password)
		} else {
			a.waitJS("the inbox, signed in by the session", `location.pathname.startsWith("/app/inbox") && !!document.querySelector(".inbox") && !document.querySelector(".list-status .spinner")`, 15*time.Second)
			a.checkTokens()
		}
		return a
	}
	live := `document.querySelector(".live").dataset.state === "open"`
	// A tab's role, as the network shows it (appTab.streamRole): the
	// leader holds a stream open, a follower none yet is live.
	roleOf := func(a *appTab) string {
		t.Helper()
		return a.streamRole()
	}
	waitRole := func(a *appTab, what, want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			got := roleOf(a)
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s's role is %q, want %q", what, a.who, got, want)
			}
		}
	}
	// oneLeader waits until exactly one of the tabs reads the stream, the
	// others follow it, and every one of them says it is live.
	oneLeader := func(tabs ...*appTab) *appTab {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			var leaders []*appTab
			roles := make([]string, len(tabs))
			for i, a := range tabs {
				roles[i] = roleOf(a)
				if roles[i] == "leader" {
					leaders = append(leaders, a)
				}
			}
			if len(leaders) == 1 && strings.Count(strings.Join(roles, " "), "follower") == len(tabs)-1 {
				for _, a := range tabs {
					a.waitJS("live (the leader's state)", live, 5*time.Second)
				}
				return leaders[0]
			}
			if time.Now().After(deadline) {
				t.Fatalf("the tabs' roles: %q, want one leader and the rest followers", roles)
			}
		}
	}
	showsLive := func(text string, tabs ...*appTab) {
		t.Helper()
		for _, a := range tabs {
			d := a.waitText("the API's text in the list, live", ".conv-list", text, 10*time.Second)
			t.Logf("%s (%s): the text was on screen %v after the send returned", a.who, roleOf(a), d)
		}
	}

	// ---- three tabs of maria's: one stream ----
	m := []*appTab{openTab("maria", "maria-password", 1), openTab("maria", "maria-password", 2), openTab("maria", "maria-password", 3)}
	leader := oneLeader(m...)
	waitStreams("maria's three tabs", 1)
	t.Logf("leader: %s", leader.who)

	appAPIKeySend(t, base, key, desk, patient, "First change, seen by every tab.")
	showsLive("First change", m...)
	if n := streamsOpen(); n != 1 {
		t.Errorf("after a change reached maria's three tabs the server holds %d streams, want 1", n)
	}
	for _, a := range m {
		if a != leader {
			a.screenshots("follower-live")
			break
		}
	}

	// ---- the leader's tab closes: another takes over, missing nothing ----
	// The text is sent while no tab may be reading: the new leader resumes
	// after the last id it heard.
	leader.close()
	appAPIKeySend(t, base, key, desk, patient, "Second change, after the leader closed.")
	var rest []*appTab
	for _, a := range m {
		if a != leader {
			rest = append(rest, a)
		}
	}
	showsLive("Second change", rest...)
	next := oneLeader(rest...)
	waitStreams("maria's two tabs left", 1)
	t.Logf("new leader: %s", next.who)
	third := appAPIKeySend(t, base, key, desk, patient, "Third change, through the new leader.")
	if third == 0 {
		t.Fatal("the third text: no message id")
	}
	showsLive("Third change", rest...)
	// The new leader resumed after the last id it heard (so it replays
	// nothing it had, and misses nothing): its stream was opened with a
	// Last-Event-ID.
	if last := next.lastResume(); !strings.HasPrefix(last, "evt_") {
		t.Errorf("the new leader %s opened its stream with Last-Event-ID %q, want the last id it heard", next.who, last)
	}

	// ---- a follower away (as in the back/forward cache) misses nothing ----
	// The page closes its stream on pagehide and starts it on pageshow; the
	// leader keeps no history to replay, so the tab reloads its screen.
	var away *appTab
	for _, a := range rest {
		if a != next {
			away = a
		}
	}
	away.do("leave, as on pagehide", chromedp.Evaluate[chromedp.Void](`document.querySelector(".inbox").dataset.before = "away"; `+leavePage))
	appAPIKeySend(t, base, key, desk, patient, "Sent while a tab was away.")
	next.waitText("the text in the leader's list", ".conv-list", "while a tab was away", 10*time.Second)
	if strings.Contains(away.text(), "while a tab was away") {
		t.Fatalf("the tab away shows the text sent while its stream was stopped: the test does not test coming back%s", away.where())
	}
	away.do("come back, as on pageshow", chromedp.Evaluate[chromedp.Void](comeBack))
	away.waitJS("the screen drawn again on coming back", `document.querySelector(".inbox") && !document.querySelector(".inbox").dataset.before`, 10*time.Second)
	away.waitText("the text missed while away", ".conv-list", "while a tab was away", 10*time.Second)
	if r := roleOf(away); r != "follower" {
		t.Errorf("the tab back: role %q, want follower (the other tab kept the lead)", r)
	}
	away.waitJS("live again", live, 5*time.Second)

	// ---- james signs in beside them: a stream of his own ----
	// In a browser context of his own: the lock's name would keep maria's
	// events from his tab even where locks were shared.
	jt := openTab("james", "james-password", 1, chromedp.WithNewBrowserContext())
	waitRole(jt, "james's tab leads its own stream", "leader")
	jt.waitJS("james live", live, 10*time.Second)
	waitStreams("maria's tabs and james's", 2)
	appAPIKeySend(t, base, key, billing, payer, "Billing only: maria may see this.")
	appAPIKeySend(t, base, key, desk, patient, "Fourth change, for both.")
	showsLive("Fourth change", append(rest, jt)...)
	showsLive("Billing only", rest...)
	// The billing text was sent first: had james's tab been handed it, it
	// would show it before the fourth change it shows.
	if strings.Contains(jt.text(), "Billing only") {
		t.Errorf("james's tab was handed an event about the Billing line, which is maria's alone")
	}

	// ---- signing out of one tab signs out every tab of the browser ----
	next.do("sign out", chromedp.Click(chromedp.CSS(".who button")))
	next.waitText("the signed-out screen", "main", "You signed out", 5*time.Second)
	for _, a := range rest {
		if a != next {
			a.waitText("signed out by the other tab", "main", "You signed out in another tab", 5*time.Second)
		}
		// The page closes its stream before it says so; the network's
		// word of the closed request may come a moment after.
		waitRole(a, "a signed-out tab's stream", "stopped")
	}
	waitStreams("james's alone", 1)
	fifth := appAPIKeySend(t, base, key, desk, patient, "Fifth change, after a sign-out.")
	if fifth == 0 {
		t.Fatal("the fifth text: no message id")
	}
	showsLive("Fifth change", jt)
	for _, a := range rest {
		if strings.Contains(a.text(), "Fifth change") {
			t.Errorf("%s: a tab signed out was still handed events", a.who)
		}
		a.checkTokens()
	}
}
