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
	openTab := func(username, password string, n int) *appTab {
		t.Helper()
		a := b.openAppWith(base, fmt.Sprintf("%s-%d", username, n), beside)
		a.signIn(username, password)
		// Every event the tab's stream hands its listeners, read or relayed.
		a.do("record the events", chromedp.Evaluate[chromedp.Void](`window.__heard = []; window.__switchboard.stream.on("*", (p) => window.__heard.push(JSON.stringify(p)))`))
		return a
	}
	live := `document.querySelector(".live").dataset.state === "open"`
	roleOf := func(a *appTab) string {
		t.Helper()
		return appEval[string](a, "read the stream's role", `window.__switchboard.stream.role`)
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
	// Each text heard once: a new leader's replay of what the old one
	// relayed is dropped.
	for _, a := range rest {
		sent := appEval[[]float64](a, "list the texts heard", `window.__heard.map((j) => JSON.parse(j).data).filter((d) => d && d.event === "message.sent").map((d) => d.messageId)`)
		heard := map[int64]int{}
		for _, id := range sent {
			heard[int64(id)]++
		}
		if heard[third] != 1 {
			t.Errorf("%s heard the third text (message %d) %d times, want once (heard %v)", a.who, third, heard[third], sent)
		}
		for id, n := range heard {
			if n > 1 {
				t.Errorf("%s heard message %d sent %d times, want once (heard %v)", a.who, id, n, sent)
			}
		}
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
	away.do("leave, as on pagehide", chromedp.Evaluate[chromedp.Void](`document.querySelector(".inbox").dataset.before = "away"; window.__switchboard.stream.stop()`))
	appAPIKeySend(t, base, key, desk, patient, "Sent while a tab was away.")
	next.waitText("the text in the leader's list", ".conv-list", "while a tab was away", 10*time.Second)
	if strings.Contains(away.text(), "while a tab was away") {
		t.Fatalf("the tab away shows the text sent while its stream was stopped: the test does not test coming back%s", away.where())
	}
	away.do("come back, as on pageshow", chromedp.Evaluate[chromedp.Void](`window.__switchboard.stream.start()`))
	away.waitJS("the screen drawn again on coming back", `document.querySelector(".inbox") && !document.querySelector(".inbox").dataset.before`, 10*time.Second)
	away.waitText("the text missed while away", ".conv-list", "while a tab was away", 10*time.Second)
	if r := roleOf(away); r != "follower" {
		t.Errorf("the tab back: role %q, want follower (the other tab kept the lead)", r)
	}
	away.waitJS("live again", live, 5*time.Second)

	// ---- james signs in beside them: a stream of his own ----
	// sessionStorage is per tab, so one browser may hold two people's
	// sessions; the lock's name keeps maria's events from his tab.
	jt := openTab("james", "james-password", 1)
	jt.waitJS("james's tab leads its own stream", `window.__switchboard.stream.role === "leader"`, 10*time.Second)
	jt.waitJS("james live", live, 10*time.Second)
	waitStreams("maria's tabs and james's", 2)
	appAPIKeySend(t, base, key, billing, payer, "Billing only: maria may see this.")
	appAPIKeySend(t, base, key, desk, patient, "Fourth change, for both.")
	showsLive("Fourth change", append(rest, jt)...)
	showsLive("Billing only", rest...)
	for _, a := range rest {
		a.waitJS("the billing event heard", `window.__heard.some((j) => j.includes("`+payer+`"))`, 5*time.Second)
	}
	// The billing text was sent first: had james's tab been handed it, it
	// would have been before the fourth change it shows.
	if appEval[bool](jt, "look for maria's billing event", `window.__heard.some((j) => j.includes("`+payer+`"))`) ||
		strings.Contains(jt.text(), "Billing only") {
		t.Errorf("james's tab was handed an event about the Billing line, which is maria's alone")
	}

	// ---- signing out of the leader's tab hands the stream on ----
	next.do("sign out", chromedp.Click(chromedp.CSS(".who button")))
	next.waitText("the signed-out screen", "main", "You signed out", 5*time.Second)
	var last *appTab
	for _, a := range rest {
		if a != next {
			last = a
		}
	}
	last.waitJS("the last tab leads", `window.__switchboard.stream.role === "leader"`, 10*time.Second)
	fifth := appAPIKeySend(t, base, key, desk, patient, "Fifth change, after a sign-out.")
	if fifth == 0 {
		t.Fatal("the fifth text: no message id")
	}
	showsLive("Fifth change", last, jt)
	last.waitJS("the fifth text heard", fmt.Sprintf(`window.__heard.some((j) => JSON.parse(j).data?.messageId === %d)`, fifth), 5*time.Second)
	if r := roleOf(next); r != "stopped" {
		t.Errorf("the signed-out tab's stream: role %q, want stopped", r)
	}
	if appEval[bool](next, "look for the fifth text", fmt.Sprintf(`window.__heard.some((j) => JSON.parse(j).data?.messageId === %d)`, fifth)) {
		t.Errorf("the tab signed out was still handed events")
	}
	waitStreams("maria's last tab and james's", 2)
}
