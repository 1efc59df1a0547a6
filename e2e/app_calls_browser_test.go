package e2e

import (
	"bytes"
	"encoding/base64"
	le "encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestAppCallsAndWebhooksInBrowser drives the app's call history and webhook
// screens in Chromium as three people of one account:
//
//   - an administrator (role "all") searches the calls, opens a transferred,
//     recorded call and plays its recording in the page (the signed link on
//     this origin, under the CSP) beside its transcript; then creates a
//     webhook subscription to a local receiver, reads its secret off the page
//     (the receiver verifies every delivery with it), sends a test event the
//     receiver refuses, sees the failed delivery and its attempt, enables the
//     subscription, redelivers and sees it succeed, rotates the secret,
//     disables and deletes it;
//   - a manager (reports without recordings) sees the calls but no player
//     and no transcript, and the app never asks for them;
//   - a front-desk agent (no call reports, no webhooks) is offered no Calls
//     and no Webhooks screen.
//
// Every screen is photographed at 1280 and 375 px and checked with axe-core.
func TestAppCallsAndWebhooksInBrowser(t *testing.T) {
	t.Parallel()
	requireAxe(t)
	br := newAppBrowser(t)
	db := storetest.DSN(t, store.SQLite)
	dir := t.TempDir()
	media := "file://" + filepath.ToSlash(filepath.Join(dir, "media"))

	acct := createAccount(t, db, "Acme Clinic")
	for name, perms := range map[string]string{"admin": "all", "manager": "users:all,numbers:all,reports", "front-desk": "users:self,numbers:assigned"} {
		cli(t, db, "role", "create", "--account", fmt.Sprint(acct), "--name", name, "--permissions", perms)
	}
	createUser(t, db, acct, "--first", "Ana", "--last", "Admin", "--username", "ana", "--password", "ana-password", "--role", "admin")
	createUser(t, db, acct, "--first", "Raj", "--last", "Patel", "--username", "raj", "--password", "raj-password", "--role", "manager")
	createUser(t, db, acct, "--first", "Jo", "--last", "Desk", "--username", "jo", "--password", "jo-password", "--role", "front-desk")
	deskLine := createLine(t, db, acct, "--number", "4155550100", "--name", "Front desk").Number
	cliJSON(t, db, &struct{}{}, "rate", "set", "--account", fmt.Sprint(acct), "--prefix", "1", "--sms", "0.0079", "--mms", "0.02")

	// Three calls within the last day (the screen's default window is the
	// last 30 days): a transferred inbound call recorded on both legs with a
	// transcript of the first, a missed outbound call, a voicemail.
	now := time.Now().UTC().Truncate(time.Second)
	t1, t2, t3 := now.Add(-3*time.Hour), now.Add(-2*time.Hour), now.Add(-time.Hour)
	id1, id2, id3 := fmt.Sprintf("%d.1", t1.Unix()), fmt.Sprintf("%d.2", t2.Unix()), fmt.Sprintf("%d.3", t3.Unix())
	ts := func(t time.Time) string { return t.Format(time.RFC3339) }
	wav := base64.StdEncoding.EncodeToString(toneWAV(time.Second))
	calls := []map[string]any{
		{"id": id1, "direction": "inbound", "status": "answered", "callerName": "Pat Caller", "callerNumber": "14155550123",
			"calledName": "Front desk", "calledNumber": "14155550100", "dialledNumber": "14155550100", "callerType": "external",
			"startTime": ts(t1), "endTime": ts(t1.Add(95 * time.Second)), "durationSeconds": 95, "talkTimeSeconds": 80,
			"transferred": 1, "recorded": true,
			"legs": []map[string]any{
				{"uniqueId": id1, "callId": id1, "startTime": ts(t1), "durationSeconds": 40, "talkTimeSeconds": 30, "from": "14155550123", "to": "100",
					"recording": map[string]any{"contentType": "audio/wav", "content": wav}},
				{"uniqueId": id1 + "b", "callId": id1 + "b", "bridgedFromCallId": id1, "startTime": ts(t1.Add(40 * time.Second)), "durationSeconds": 55,
					"talkTimeSeconds": 50, "from": "100", "to": "104", "recording": map[string]any{"contentType": "audio/wav", "content": wav}},
			},
			"transcripts": []map[string]any{{"uniqueId": id1, "language": "en-US", "segments": []map[string]any{
				{"speaker": "caller", "channel": 0, "startMs": 0, "endMs": 2500, "text": "Hi, I need to move my appointment."},
				{"speaker": "agent", "channel": 1, "startMs": 2600, "endMs": 5200, "text": "Of course, let me put you through to scheduling."},
			}}}},
		{"id": id2, "direction": "outbound", "status": "missed", "callerName": "Front desk", "callerNumber": "100", "calledNumber": "14155550177",
			"dialledNumber": "14155550177", "startTime": ts(t2), "durationSeconds": 25, "talkTimeSeconds": 0},
		{"id": id3, "direction": "inbound", "status": "voicemail", "callerNumber": "14155550188", "calledNumber": "14155550100",
			"dialledNumber": "14155550100", "startTime": ts(t3), "durationSeconds": 48, "talkTimeSeconds": 30},
	}
	var jsonl bytes.Buffer
	for _, c := range calls {
		b, err := json.Marshal(c)
		must(t, err)
		jsonl.Write(append(b, '\n'))
	}
	callsFile := filepath.Join(dir, "calls.jsonl")
	must(t, os.WriteFile(callsFile, jsonl.Bytes(), 0o600))
	var sum struct{ Imported, Skipped int }
	cliJSON(t, db, &sum, "calls", "import", callsFile, "--account", fmt.Sprint(acct), "--media", media)
	if sum.Imported != 3 || sum.Skipped != 0 {
		t.Fatalf("calls import: %+v, want 3 imported", sum)
	}

	recv := newAppHookReceiver(t)
	base := startServer(t, db, "--media", media, "--webhook-allow-hosts", "127.0.0.1")

	// ---- the administrator: calls with recordings, then webhooks ----
	{
		b := callsTab(br.signIn(base, "ana", "ana-password"))
		b.waitJS("the Calls link in the header", `!!document.querySelector('#topbar a[href="/app/calls"]')`)
		b.clickJS("the Calls link", `document.querySelector('#topbar a[href="/app/calls"]')`)
		b.waitJS("three calls in the results", `document.querySelectorAll('.calls-table tbody tr').length === 3`)
		text := b.text()
		for _, want := range []string{"Calls 1\u20133 of 3", "Pat Caller", "Missed", "Voicemail", "Answered"} {
			if !strings.Contains(text, want) {
				t.Errorf("call history: no %q on the page%s", want, b.where())
			}
		}
		if n := appEval[int](b.appTab, "count the recorded icons", `document.querySelectorAll('.calls-table .recorded').length`); n != 1 {
			t.Errorf("call history: %d calls marked recorded, want 1", n)
		}
		b.shots("calls-search")

		// Filter: missed only; the address keeps the search.
		b.clickJS("the Missed status", `document.getElementById('calls-status-missed')`)
		b.clickJS("Search", `document.querySelector('.calls-search button[type=submit]')`)
		b.waitJS("one missed call", `document.querySelectorAll('.calls-table tbody tr').length === 1 && document.querySelector('.calls-table').innerText.includes('Missed')`)
		if q := appEval[string](b.appTab, "read the address", `location.search`); !strings.Contains(q, "status=missed") {
			t.Errorf("after filtering: the address %q does not keep the filter", q)
		}
		// Days of the week: every day but the one of the calls (in the
		// browser's zone, UTC in the test's Chromium) finds nothing.
		b.clickJS("More filters", `document.querySelector('.more-filters summary')`)
		b.clickJS("the call's day of the week", fmt.Sprintf(`document.getElementById('calls-day-%s')`, strings.ToLower(t2.Format("Mon"))))
		b.clickJS("Search", `document.querySelector('.calls-search button[type=submit]')`)
		b.waitJS("the missed call on its day", `document.querySelectorAll('.calls-table tbody tr').length === 1`)
		b.clickJS("the call's day of the week (off)", fmt.Sprintf(`document.getElementById('calls-day-%s')`, strings.ToLower(t2.Format("Mon"))))
		b.clickJS("another day of the week", fmt.Sprintf(`document.getElementById('calls-day-%s')`, strings.ToLower(t2.Add(24*time.Hour).Format("Mon"))))
		b.clickJS("Search", `document.querySelector('.calls-search button[type=submit]')`)
		b.waitJS("no call on another day", `!document.querySelector('.calls-table') && document.querySelector('.calls-results').innerText.includes('No calls match')`)
		b.shots("calls-search-empty")
		b.clickJS("Clear filters", `document.querySelector('.calls-search button[type=reset]')`)
		b.waitJS("three calls again", `document.querySelectorAll('.calls-table tbody tr').length === 3`)

		// The recorded call: legs, players and the transcript.
		b.clickJS("the recorded call", `[...document.querySelectorAll('.calls-table tbody tr')].find((r) => r.querySelector('.recorded')).querySelector('a')`)
		b.waitJS("the call's players", `document.querySelectorAll('.recordings audio').length === 2`)
		text = b.text()
		for _, want := range []string{"Call from Pat Caller", "Legs (2)", "Leg 1", "Leg 2", "Transcript (en-US)", "let me put you through to scheduling"} {
			if !strings.Contains(text, want) {
				t.Errorf("call detail: no %q on the page%s", want, b.where())
			}
		}
		// The player plays the signed link of this origin: the browser read
		// the audio's length (1 s) from the server.
		b.waitJS("the first recording's metadata", `(() => { const a = document.querySelector('.recordings audio'); return a.readyState >= 1 && Math.abs(a.duration - 1) < 0.1; })()`)
		if src := appEval[string](b.appTab, "read the player's source", `document.querySelector('.recordings audio').src`); !strings.HasPrefix(src, base+"/") {
			t.Errorf("player source %q, want a link on %s", src, base)
		}
		// A transcript segment's time seeks the player.
		b.clickJS("the second segment's time", `document.querySelectorAll('.segment .seek')[1]`)
		b.waitJS("the player at 2.6 s", `Math.abs(document.querySelector('.recordings audio').currentTime - 0.6) < 0.5 || document.querySelector('.recordings audio').currentTime >= 0.99`)
		b.shots("call-detail")

		// ---- webhooks ----
		b.clickJS("the Webhooks link", `document.querySelector('#topbar a[href="/app/webhooks"]')`)
		b.waitJS("the new-subscription form", `!!document.getElementById('wh-url') && document.querySelectorAll('#wh-type option').length >= 5`)
		b.waitJS("the empty list", `document.querySelector('.webhook-list').innerText.includes('No subscriptions yet')`)
		b.shots("webhooks-empty")
		b.typeInto("wh-url", recv.srv.URL+"/hooks/crm")
		b.typeInto("wh-name", "CRM sync")
		b.setSelect("wh-type", "AccountSMS")
		b.typeInto("wh-description", "Copies texts into the CRM.")
		b.clickJS("Create subscription", `document.querySelector('.webhook-create button[type=submit]')`)
		b.waitJS("the secret shown once", `!!document.querySelector('.secret-box .secret')`)
		secret := appEval[string](b.appTab, "read the secret", `document.querySelector('.secret-box .secret').textContent`)
		if !strings.HasPrefix(secret, "whsec_") {
			t.Fatalf("the page shows secret %q, want whsec_…", secret)
		}
		recv.setSecret(secret)
		b.waitJS("the subscription in the list", `document.querySelectorAll('.webhooks-table tbody tr').length === 1`)
		b.shots("webhooks-created")

		b.clickJS("the subscription", `document.querySelector('.webhooks-table tbody a')`)
		b.waitJS("the subscription's page", `document.querySelector('h1').textContent === 'CRM sync' && document.querySelector('.deliveries').innerText.includes('No deliveries yet')`)
		// The receiver refuses the first request: the test shows the failure.
		recv.failNext("busy: try again later")
		b.clickButton("Send a test event")
		b.waitJS("the test's outcome", `document.querySelector('.outcome').innerText.includes('not delivered')`)
		if text := b.text(); !strings.Contains(text, "HTTP 503") {
			t.Errorf("test outcome: no HTTP 503 on the page%s", b.where())
		}
		b.waitJS("the failed delivery", `document.querySelectorAll('.delivery').length === 1 && document.querySelector('.delivery .badge').textContent === 'Failed'`)
		b.clickJS("open the delivery", `document.querySelector('.delivery summary')`)
		b.waitJS("its attempt", `!!document.querySelector('.attempts-table') && document.querySelector('.attempts-table').innerText.includes('busy: try again later')`)
		if text := appEval[string](b.appTab, "read the attempt", `document.querySelector('.attempts-table').innerText`); !strings.Contains(text, "503") || !strings.Contains(text, "http_status") {
			t.Errorf("attempt row %q, want status 503 and the error category http_status", text)
		}
		b.shots("webhook-test-failed")
		// The list says a subscription whose deliveries all fail does.
		b.clickJS("back to the list", `document.querySelector('a.back')`)
		b.waitJS("the list says it fails", `document.querySelector('.webhooks-table') && document.querySelector('.webhooks-table').innerText.includes('Failing')`)
		b.shots("webhooks-failing")
		b.clickJS("the subscription again", `document.querySelector('.webhooks-table tbody a')`)
		b.waitJS("its failed delivery", `document.querySelectorAll('.delivery').length === 1`)

		b.clickButton("Enable")
		b.waitJS("enabled", `document.querySelector('.facts .badge').textContent === 'Enabled'`)
		b.clickButton("Redeliver")
		b.waitJS("the redelivery succeeded", `document.querySelectorAll('.delivery').length === 2 && document.querySelector('.delivery .badge').textContent === 'Succeeded'`)
		got := recv.received()
		if len(got) != 2 || got[0].id != got[1].id || got[0].id == "" {
			t.Errorf("receiver got %+v, want the test event twice with one webhook-id", got)
		}
		for _, g := range got {
			if !g.verified {
				t.Errorf("receiver: delivery %s does not verify with the secret the page showed", g.id)
			}
		}
		b.shots("webhook-redelivered")

		// A text's event: its delivery shows the event and the payload the
		// endpoint received.
		sender := createKey(t, db, acct, "sender", "all").Key
		appAPIKeySend(t, base, sender, deskLine, "14155550177", "Payload check")
		for deadline := time.Now().Add(10 * time.Second); len(recv.received()) < 3; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the receiver got %d deliveries, want the text's event as the third", len(recv.received()))
			}
		}
		b.clickButton("Refresh")
		b.waitJS("the text's delivery", `[...document.querySelectorAll('.delivery .delivery-type')].filter((e) => e.textContent === 'AccountSMS').length >= 3`)
		b.clickJS("open the newest delivery", `document.querySelector('.delivery summary')`)
		b.waitJS("its event and payload", `(() => { const p = document.querySelector('.delivery[open] .delivery-payload'); return p && p.querySelector('.payload-json') && p.innerText.includes('message.') && p.innerText.includes('"type": "AccountSMS"'); })()`)
		b.shots("webhook-payload")

		b.clickButton("Rotate secret\u2026")
		b.waitJS("the confirmation", `!!document.querySelector('dialog[open]')`)
		b.shots("webhook-rotate-confirm")
		b.clickJS("confirm", `[...document.querySelectorAll('dialog[open] button')].find((x) => x.textContent === 'Rotate secret')`)
		b.waitJS("the new secret", `!!document.querySelector('.outcome .secret')`)
		if s2 := appEval[string](b.appTab, "read the new secret", `document.querySelector('.outcome .secret').textContent`); s2 == secret || !strings.HasPrefix(s2, "whsec_") {
			t.Errorf("rotated secret %q, want a new whsec_ secret", s2)
		}
		b.clickButton("Disable")
		b.waitJS("disabled", `document.querySelector('.facts .badge').textContent === 'Disabled'`)
		b.shots("webhook-disabled")
		b.clickButton("Delete\u2026")
		b.waitJS("the confirmation", `!!document.querySelector('dialog[open]')`)
		b.clickJS("confirm", `[...document.querySelectorAll('dialog[open] button')].find((x) => x.textContent === 'Delete subscription')`)
		b.waitJS("the empty list again", `location.pathname === '/app/webhooks' && !!document.querySelector('.webhook-list') && document.querySelector('.webhook-list').innerText.includes('No subscriptions yet')`)
	}

	// What a role may do reaches the app through GET /me (its
	// permissions). A server without it leaves the app only the scopes,
	// which every sign-in of the app has: the screens are offered and the
	// API's 403 must then be shown as what it means, never as a broken
	// player or an empty list.
	key := createKey(t, db, acct, "probe", "all").Key
	hasMe := request(t, http.MethodGet, base+apiPrefix+"/me", "Bearer "+key).status != http.StatusNotFound
	if !hasMe {
		t.Logf("GET /me is not on this server: checking the fallback (the API's 403 explained)")
	}

	// ---- a manager: call reports without recordings ----
	{
		b := callsTab(br.signIn(base, "raj", "raj-password"))
		b.waitJS("the Calls link in the header", `!!document.querySelector('#topbar a[href="/app/calls"]')`)
		b.goTo("the recorded call", "/app/calls/"+id1)
		b.waitJS("the call's legs", `!!document.querySelector('.legs-table')`)
		if b.exists("audio") || b.exists(".transcript") {
			t.Errorf("manager without recordings: a player or transcript is offered%s", b.where())
		}
		var asked []string
		b.mu.Lock()
		for _, u := range b.requests {
			if strings.Contains(u, "/recordings") || strings.Contains(u, "/transcripts") {
				asked = append(asked, u)
			}
		}
		b.mu.Unlock()
		if hasMe {
			if text := b.text(); !strings.Contains(text, "Your role does not include listening to recordings") {
				t.Errorf("manager without recordings: the page does not say why there is no player%s", b.where())
			}
			if len(asked) != 0 {
				t.Errorf("manager without recordings: the app asked for %v, which the role may not have", asked)
			}
			if b.exists(".error") || b.exists(".recordings") {
				t.Errorf("manager without recordings: a recordings section or an error is shown%s", b.where())
			}
		} else {
			b.waitJS("the refusal explained", `!!document.querySelector('.recordings .error')`)
			if text := appEval[string](b.appTab, "read the refusal", `document.querySelector('.recordings').innerText`); !strings.Contains(text, "Your role does not allow") {
				t.Errorf("manager without recordings: the 403 is shown as %q, want it explained (your role does not allow…)", text)
			}
		}
		b.shots("call-detail-no-recordings")
	}

	// ---- the front desk: no call reports ----
	{
		b := callsTab(br.signIn(base, "jo", "jo-password"))
		b.waitJS("the header", `!!document.querySelector('#topbar nav')`)
		if hasMe && b.exists(`#topbar a[href="/app/calls"]`) {
			t.Errorf("front desk: a Calls link is offered to a role without call reports%s", b.where())
		}
		b.goTo("the calls address", "/app/calls")
		b.waitJS("the screen", `!!document.querySelector('main h1')`)
		if hasMe {
			b.waitJS("the screen's explanation", `document.querySelector('main').innerText.includes('Your role does not include call reports')`)
			if b.exists(".calls-search") {
				t.Errorf("front desk: the call search is offered at /app/calls%s", b.where())
			}
		} else {
			b.waitJS("the refusal explained", `!!document.querySelector('.calls-results .error')`)
			if b.exists(".calls-table") {
				t.Errorf("front desk: calls are listed for a role without call reports%s", b.where())
			}
		}
		b.shots("calls-not-offered")

		// Nor webhooks (issue 32): a subscription would show every line's
		// texts and every call.
		if hasMe {
			if b.exists(`#topbar a[href="/app/webhooks"]`) {
				t.Errorf("front desk: a Webhooks link is offered to a role without the webhooks permission%s", b.where())
			}
			b.goTo("the webhooks address", "/app/webhooks")
			b.waitJS("the screen's explanation", `document.querySelector('main').innerText.includes('Your role does not include webhooks')`)
			if b.exists(".webhooks-table") || b.exists(".webhook-list") {
				t.Errorf("front desk: subscriptions are listed at /app/webhooks%s", b.where())
			}
			b.shots("webhooks-not-offered")

			// The operator gives the role the permission (role set): the
			// screen is offered on the next load, without signing in again.
			var set struct{ Permissions string }
			cliJSON(t, db, &set, "role", "set", "--account", fmt.Sprint(acct), "--name", "front-desk", "--permissions", "users:self,numbers:assigned,webhooks")
			if set.Permissions != "users:self,numbers:assigned,webhooks" {
				t.Fatalf("role set: permissions %q, want users:self,numbers:assigned,webhooks", set.Permissions)
			}
			b.goTo("the webhooks address again", "/app/webhooks")
			b.waitJS("the Webhooks link in the header", `!!document.querySelector('#topbar a[href="/app/webhooks"]')`)
			b.waitJS("the subscription list", `!!document.querySelector('.webhook-list')`)
		}
	}
}

// toneWAV is d of a 440 Hz tone, 8 kHz mono 16-bit PCM: a recording the
// browser can decode, so the test sees the player read its length.
func toneWAV(d time.Duration) []byte {
	const rate = 8000
	n := int(d.Seconds() * rate)
	var b bytes.Buffer
	w := func(v any) { le.Write(&b, le.LittleEndian, v) }
	b.WriteString("RIFF")
	w(uint32(36 + 2*n))
	b.WriteString("WAVEfmt ")
	w(uint32(16))
	w(uint16(1))        // PCM
	w(uint16(1))        // mono
	w(uint32(rate))     // sample rate
	w(uint32(rate * 2)) // byte rate
	w(uint16(2))        // block align
	w(uint16(16))       // bits per sample
	b.WriteString("data")
	w(uint32(2 * n))
	for i := 0; i < n; i++ {
		w(int16(8000 * math.Sin(2*math.Pi*440*float64(i)/rate)))
	}
	return b.Bytes()
}

// appHookReceiver is the webhook endpoint of the test: it verifies each
// delivery with the secret the page showed, and refuses the requests it is
// told to (503 with a body, as a busy endpoint would).
type appHookReceiver struct {
	srv *httptest.Server

	mu     sync.Mutex
	secret string
	fail   []string
	got    []appHookDelivery
}

type appHookDelivery struct {
	id       string
	verified bool
}

func newAppHookReceiver(t *testing.T) *appHookReceiver {
	r := &appHookReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		d := appHookDelivery{id: req.Header.Get("webhook-id")}
		if wh, err := standardwebhooks.NewWebhook(r.secret); err == nil && wh.Verify(body, req.Header) == nil {
			d.verified = true
		}
		r.got = append(r.got, d)
		if len(r.fail) > 0 {
			msg := r.fail[0]
			r.fail = r.fail[1:]
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *appHookReceiver) setSecret(s string) { r.mu.Lock(); r.secret = s; r.mu.Unlock() }
func (r *appHookReceiver) failNext(body string) {
	r.mu.Lock()
	r.fail = append(r.fail, body)
	r.mu.Unlock()
}
func (r *appHookReceiver) received() []appHookDelivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]appHookDelivery(nil), r.got...)
}

// appCallsTab adds to appTab the few steps these screens need: click an
// element an expression finds, a button by its label, type, choose.
type appCallsTab struct{ *appTab }

func callsTab(a *appTab) appCallsTab { return appCallsTab{a} }

const appCallsStep = 15 * time.Second

func (b appCallsTab) waitJS(what, expression string) {
	b.t.Helper()
	b.appTab.waitJS(what, expression, appCallsStep)
}

// clickJS waits for the element expression finds and clicks it.
func (b appCallsTab) clickJS(what, element string) {
	b.t.Helper()
	b.waitJS(what, element)
	appEval[bool](b.appTab, "click "+what, "(() => { ("+element+").click(); return true; })()")
}

// clickButton clicks the enabled button whose text is label.
func (b appCallsTab) clickButton(label string) {
	b.t.Helper()
	b.clickJS("the button "+label, fmt.Sprintf(`[...document.querySelectorAll('button')].find((x) => x.textContent.trim() === %q && !x.disabled)`, label))
}

func (b appCallsTab) typeInto(id, text string) {
	b.t.Helper()
	b.do("type into #"+id, chromedp.SendKeys(chromedp.ID(id), text))
}

func (b appCallsTab) setSelect(id, value string) {
	b.t.Helper()
	appEval[bool](b.appTab, "choose "+value, fmt.Sprintf(`(() => { const s = document.getElementById(%q); s.value = %q; s.dispatchEvent(new Event('change')); return true; })()`, id, value))
}

func (b appCallsTab) exists(selector string) bool {
	b.t.Helper()
	return appEval[bool](b.appTab, "look for "+selector, fmt.Sprintf(`document.querySelector(%q) !== null`, selector))
}

// goTo loads an app address as a typed or bookmarked one (the app starts
// again from the tab's session).
func (b appCallsTab) goTo(what, path string) {
	b.t.Helper()
	b.do("open "+what, chromedp.Navigate(b.base+path))
}

// shots photographs the screen at both widths and checks it with axe-core.
func (b appCallsTab) shots(name string) {
	b.t.Helper()
	b.screenshots(name)
	b.axe(name)
}
