package webhooks_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"switchboard/internal/background"
	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/webhooks"
)

var ctx = context.Background()

// received is one request a test receiver got.
type received struct {
	header http.Header
	body   []byte
	at     time.Time
}

// receiver is an endpoint that records what it gets and answers with reply.
type receiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	got   []received
	reply func(n int, w http.ResponseWriter) // n counts from 1
	ch    chan received
}

func newReceiver(t *testing.T, reply func(n int, w http.ResponseWriter)) *receiver {
	r := &receiver{reply: reply, ch: make(chan received, 1000)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		rec := received{header: req.Header.Clone(), body: b, at: time.Now()}
		r.mu.Lock()
		r.got = append(r.got, rec)
		n := len(r.got)
		r.mu.Unlock()
		r.ch <- rec
		if r.reply != nil {
			r.reply(n, w)
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// next waits for the receiver's next request.
func (r *receiver) next(t *testing.T) received {
	t.Helper()
	select {
	case rec := <-r.ch:
		return rec
	// 30 s: in a whole uncached CI run (every package's PostgreSQL tests
	// beside the e2e servers) two of these waits once ran out at 10 s.
	case <-time.After(30 * time.Second):
		t.Fatalf("no delivery arrived at %s", r.srv.URL)
		return received{}
	}
}

type env struct {
	st      *store.Store
	account int64
	other   int64
	// d is the dispatcher started last: waitFor waits on its signals.
	d *webhooks.Dispatcher
}

func setup(t *testing.T, engine store.Engine) *env {
	st := storetest.Open(t, engine)
	a := storetest.Account(t, st, &storetest.AccountOpts{Name: "A"})
	b := storetest.Account(t, st, &storetest.AccountOpts{Name: "B"})
	return &env{st: st, account: a.ID, other: b.ID}
}

func (e *env) hook(t *testing.T, account int64, url, typ string, enabled bool) domain.Webhook {
	t.Helper()
	w := domain.Webhook{AccountID: account, URL: url, Type: typ, Enabled: enabled, Secret: webhooks.NewSecret()}
	must(t, e.st.CreateWebhook(ctx, &w))
	return w
}

// start runs a dispatcher allowed to reach 127.0.0.1, stopped at cleanup.
func (e *env) start(t *testing.T, cfg webhooks.DispatcherConfig) *webhooks.Dispatcher {
	return e.startAllowing(t, webhooks.ParseAllowList("127.0.0.1"), cfg)
}

// startAllowing runs a dispatcher allowed to reach allow, stopped at cleanup.
func (e *env) startAllowing(t *testing.T, allow webhooks.AllowList, cfg webhooks.DispatcherConfig) *webhooks.Dispatcher {
	if cfg.Poll == 0 {
		cfg.Poll = 10 * time.Millisecond
	}
	d := webhooks.New(webhooks.Config{Store: e.st, AllowHosts: allow}).Dispatcher(cfg)
	d.TestSignals.Init()
	must(t, d.Start(ctx))
	t.Cleanup(d.Stop)
	e.d = d
	return d
}

func (e *env) event(t *testing.T, account int64, typ string, payload any) {
	t.Helper()
	ev, err := domain.NewEvent(typ, payload)
	must(t, err)
	must(t, e.st.AddEvents(ctx, account, []domain.Event{ev}))
}

// waitFor waits, on the last dispatcher's signals, until cond holds: every
// condition the tests wait for turns when a batch of outcomes commits, and
// each commit is signalled after it.
func (e *env) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		e.d.TestSignals.Recorded.WaitOrTimeout(t)
	}
}

func (e *env) deliveries(t *testing.T, account, hook int64) []domain.WebhookDelivery {
	t.Helper()
	list, err := e.st.WebhookDeliveries(ctx, account, hook, 0, 100)
	must(t, err)
	return list
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// verify checks a delivery's signature with the reference implementation
// and with ours.
func verify(t *testing.T, secret string, rec received) {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	must(t, err)
	if err := wh.Verify(rec.body, rec.header); err != nil {
		t.Errorf("reference library rejects the delivery: %v (headers %v)", err, rec.header)
	}
	ts, _ := time.Parse(time.RFC3339, "2000-01-01T00:00:00Z")
	_ = ts
}

func TestDeliverySignedFannedOutAndIsolated(t *testing.T) {
	for _, engine := range storetest.Engines(t) {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			e := setup(t, engine)
			r1, r2, rOff, rCalls, rOther := newReceiver(t, nil), newReceiver(t, nil), newReceiver(t, nil), newReceiver(t, nil), newReceiver(t, nil)
			h1 := e.hook(t, e.account, r1.srv.URL+"/a", domain.EventAccountSMS, true)
			h2 := e.hook(t, e.account, r2.srv.URL+"/b", domain.EventAccountSMS, true)
			e.hook(t, e.account, rOff.srv.URL, domain.EventAccountSMS, false)
			e.hook(t, e.account, rCalls.srv.URL, domain.EventEndedCalls, true)
			hOther := e.hook(t, e.other, rOther.srv.URL, domain.EventAccountSMS, true)
			e.start(t, webhooks.DispatcherConfig{})

			e.event(t, e.account, domain.EventAccountSMS, map[string]any{"event": "message.received", "messageId": 7, "line": "14155550100", "number": "14155550111", "direction": "in"})
			a, b := r1.next(t), r2.next(t)
			verify(t, h1.Secret, a)
			verify(t, h2.Secret, b)
			if wh, _ := standardwebhooks.NewWebhook(h2.Secret); wh.Verify(a.body, a.header) == nil {
				t.Error("a delivery verifies with another subscription's secret")
			}
			var p struct {
				ID, Type, Timestamp string
				Data                map[string]any
			}
			must(t, json.Unmarshal(a.body, &p))
			if p.ID != a.header.Get("webhook-id") || !strings.HasPrefix(p.ID, "evt_") || p.Type != "AccountSMS" || p.Data["messageId"] != float64(7) || p.Data["number"] != "14155550111" {
				t.Errorf("payload %s, webhook-id %q", a.body, a.header.Get("webhook-id"))
			}
			if _, err := time.Parse(time.RFC3339, p.Timestamp); err != nil {
				t.Errorf("timestamp %q: %v", p.Timestamp, err)
			}
			if a.header.Get("webhook-id") != b.header.Get("webhook-id") || a.header.Get("Content-Type") != "application/json" {
				t.Errorf("headers %v / %v", a.header, b.header)
			}
			e.waitFor(t, "both deliveries recorded", func() bool {
				d1, d2 := e.deliveries(t, e.account, h1.ID), e.deliveries(t, e.account, h2.ID)
				return len(d1) == 1 && d1[0].State == domain.DeliverySucceeded && len(d2) == 1 && d2[0].State == domain.DeliverySucceeded
			})
			d := e.deliveries(t, e.account, h1.ID)[0]
			if d.Attempts != 1 || d.Last == nil || d.Last.StatusCode != 200 || d.NextAttemptAt != nil {
				t.Errorf("delivery = %+v, last %+v", d, d.Last)
			}
			// The other account's event reaches only the other account.
			e.event(t, e.other, domain.EventAccountSMS, map[string]any{"event": "message.sent"})
			verify(t, hOther.Secret, rOther.next(t))
			e.waitFor(t, "the other account's delivery recorded", func() bool {
				l := e.deliveries(t, e.other, hOther.ID)
				return len(l) == 1 && l[0].State == domain.DeliverySucceeded
			})
			if r1.count() != 1 || r2.count() != 1 || rOff.count() != 0 || rCalls.count() != 0 {
				t.Errorf("received %d %d, disabled %d, other type %d; want 1 1 0 0", r1.count(), r2.count(), rOff.count(), rCalls.count())
			}
		})
	}
}

func TestRetryUntilRecoveryWithRetryAfterAndGone(t *testing.T) {
	for _, engine := range storetest.Engines(t) {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			e := setup(t, engine)
			flaky := newReceiver(t, func(n int, w http.ResponseWriter) {
				switch n {
				case 1:
					w.WriteHeader(500)
				case 2:
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(429)
				case 3:
					http.Redirect(w, &http.Request{}, "https://example.com/", http.StatusFound)
				}
			})
			gone := newReceiver(t, func(n int, w http.ResponseWriter) { w.WriteHeader(http.StatusGone) })
			hf := e.hook(t, e.account, flaky.srv.URL, domain.EventAccountSMS, true)
			hg := e.hook(t, e.account, gone.srv.URL, domain.EventAccountSMS, true)
			e.start(t, webhooks.DispatcherConfig{Retry: []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}})
			e.event(t, e.account, domain.EventAccountSMS, map[string]any{"event": "message.sent"})

			var got []received
			for range 4 {
				got = append(got, flaky.next(t))
			}
			for i, rec := range got {
				if rec.header.Get("webhook-id") != got[0].header.Get("webhook-id") {
					t.Errorf("attempt %d webhook-id %q, want %q", i+1, rec.header.Get("webhook-id"), got[0].header.Get("webhook-id"))
				}
				verify(t, hf.Secret, rec)
			}
			if wait := got[2].at.Sub(got[1].at); wait < time.Second {
				t.Errorf("retry after 429 with Retry-After: 1 came %v later, want at least 1s", wait)
			}
			e.waitFor(t, "success recorded", func() bool {
				l := e.deliveries(t, e.account, hf.ID)
				return len(l) == 1 && l[0].State == domain.DeliverySucceeded && l[0].Attempts == 4
			})
			gone.next(t)
			e.waitFor(t, "410 disables the subscription", func() bool {
				w, err := e.st.Webhook(ctx, e.account, hg.ID)
				must(t, err)
				l := e.deliveries(t, e.account, hg.ID)
				return !w.Enabled && len(l) == 1 && l[0].State == domain.DeliveryFailed && l[0].Attempts == 1 && l[0].Last.StatusCode == 410
			})
			// A disabled subscription receives nothing more.
			e.event(t, e.account, domain.EventAccountSMS, map[string]any{"event": "message.sent"})
			flaky.next(t)
			e.waitFor(t, "second event delivered", func() bool {
				return len(e.deliveries(t, e.account, hf.ID)) == 2 && e.deliveries(t, e.account, hf.ID)[0].State == domain.DeliverySucceeded
			})
			if gone.count() != 1 {
				t.Errorf("the 410 endpoint got %d requests, want 1", gone.count())
			}
		})
	}
}

func TestGivesUpAfterSchedule(t *testing.T) {
	e := setup(t, store.SQLite)
	down := newReceiver(t, func(n int, w http.ResponseWriter) { w.WriteHeader(503) })
	h := e.hook(t, e.account, down.srv.URL, domain.EventAccountSMS, true)
	e.start(t, webhooks.DispatcherConfig{Retry: []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}})
	e.event(t, e.account, domain.EventAccountSMS, map[string]any{})
	e.waitFor(t, "given up", func() bool {
		l := e.deliveries(t, e.account, h.ID)
		return len(l) == 1 && l[0].State == domain.DeliveryFailed
	})
	if l := e.deliveries(t, e.account, h.ID); l[0].Attempts != 3 || down.count() != 3 || l[0].NextAttemptAt != nil || l[0].Last.Error != "http_status: the endpoint answered HTTP 503" {
		t.Errorf("delivery %+v after %d requests; want 3 attempts", l[0], down.count())
	}
}

func TestRotationSignsWithBothSecrets(t *testing.T) {
	e := setup(t, store.SQLite)
	r := newReceiver(t, nil)
	h := e.hook(t, e.account, r.srv.URL, domain.EventAccountSMS, true)
	rotated, err := e.st.RotateWebhookSecret(ctx, e.account, h.ID, webhooks.NewSecret(), 24*time.Hour)
	must(t, err)
	e.start(t, webhooks.DispatcherConfig{})
	e.event(t, e.account, domain.EventAccountSMS, map[string]any{})
	rec := r.next(t)
	if sigs := strings.Fields(rec.header.Get("webhook-signature")); len(sigs) != 2 {
		t.Fatalf("webhook-signature %q, want two", rec.header.Get("webhook-signature"))
	}
	verify(t, rotated.Secret, rec)
	verify(t, h.Secret, rec)
	ts := rec.header.Get("webhook-timestamp")
	sec, _ := time.Parse(time.RFC3339, "1970-01-01T00:00:00Z")
	_ = sec
	for _, secret := range []string{rotated.Secret, h.Secret} {
		var unix int64
		for _, c := range ts {
			unix = unix*10 + int64(c-'0')
		}
		want, err := webhooks.Sign(secret, rec.header.Get("webhook-id"), time.Unix(unix, 0), rec.body)
		must(t, err)
		if !strings.Contains(rec.header.Get("webhook-signature"), want) {
			t.Errorf("our own signature %s is not among %s", want, rec.header.Get("webhook-signature"))
		}
	}
	// A secret past its overlap signs no more; one replaced earlier, still
	// within its own, does.
	third, err := e.st.RotateWebhookSecret(ctx, e.account, h.ID, webhooks.NewSecret(), time.Nanosecond)
	must(t, err)
	e.event(t, e.account, domain.EventAccountSMS, map[string]any{})
	rec = r.next(t)
	if sigs := strings.Fields(rec.header.Get("webhook-signature")); len(sigs) != 2 {
		t.Errorf("after the overlap: %d signatures, want 2 (the new secret and the first)", len(sigs))
	}
	verify(t, third.Secret, rec)
	verify(t, h.Secret, rec)
}

func TestSlowEndpointDoesNotDelayOthers(t *testing.T) {
	e := setup(t, store.SQLite)
	release := make(chan struct{})
	slow := newReceiver(t, func(n int, w http.ResponseWriter) { <-release })
	t.Cleanup(func() { close(release) }) // before the receiver closes
	fast := newReceiver(t, nil)
	e.hook(t, e.account, slow.srv.URL, domain.EventAccountSMS, true)
	e.hook(t, e.account, fast.srv.URL, domain.EventAccountSMS, true)
	e.start(t, webhooks.DispatcherConfig{Workers: 8, PerWebhook: 2, Timeout: time.Minute})
	for range 30 {
		e.event(t, e.account, domain.EventAccountSMS, map[string]any{})
	}
	for range 30 {
		fast.next(t)
	}
	if n := slow.count(); n > 2 {
		t.Errorf("slow endpoint has %d requests in flight, want at most 2", n)
	}
}

func TestCrashedAttemptIsRedeliveredWithSameID(t *testing.T) {
	for _, engine := range storetest.Engines(t) {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			e := setup(t, engine)
			hang := make(chan struct{})
			r := newReceiver(t, func(n int, w http.ResponseWriter) {
				if n == 1 {
					<-hang // the first process "crashes" while this is in flight
				}
			})
			t.Cleanup(func() { close(hang) })
			h := e.hook(t, e.account, r.srv.URL, domain.EventAccountSMS, true)
			// PerWebhook 1: when its lease runs out, the "crashed" process
			// cannot take the delivery back (its attempt still holds the
			// subscription's only slot), so the survivor is the one to deliver it.
			e.start(t, webhooks.DispatcherConfig{Owner: "crashed", Lease: 300 * time.Millisecond, Timeout: time.Minute, PerWebhook: 1})
			e.event(t, e.account, domain.EventAccountSMS, map[string]any{})
			first := r.next(t)
			// A second process takes the delivery once the lease runs out.
			e.start(t, webhooks.DispatcherConfig{Owner: "survivor"})
			second := r.next(t)
			if first.header.Get("webhook-id") != second.header.Get("webhook-id") {
				t.Errorf("redelivery webhook-id %q, want %q", second.header.Get("webhook-id"), first.header.Get("webhook-id"))
			}
			verify(t, h.Secret, second)
			e.waitFor(t, "survivor's success recorded", func() bool {
				l := e.deliveries(t, e.account, h.ID)
				return len(l) == 1 && l[0].State == domain.DeliverySucceeded
			})
		})
	}
}

func TestDialerRefusesPrivateAddresses(t *testing.T) {
	e := setup(t, store.SQLite)
	r := newReceiver(t, nil)
	port := r.srv.URL[strings.LastIndex(r.srv.URL, ":"):]
	hooks := []domain.Webhook{
		e.hook(t, e.account, "http://127.0.0.1"+port, domain.EventAccountSMS, true),
		// A name, resolved at dial time to loopback.
		e.hook(t, e.account, "http://localhost"+port, domain.EventAccountSMS, true),
	}
	e.startAllowing(t, webhooks.AllowList{}, webhooks.DispatcherConfig{Retry: []time.Duration{}})
	e.event(t, e.account, domain.EventAccountSMS, map[string]any{})
	for _, h := range hooks {
		e.waitFor(t, "refusal recorded", func() bool {
			l := e.deliveries(t, e.account, h.ID)
			return len(l) == 1 && l[0].State == domain.DeliveryFailed
		})
		if l := e.deliveries(t, e.account, h.ID); l[0].Last.Error != "destination_refused: the host resolves to a loopback address, which deliveries may not reach" || l[0].Last.StatusCode != 0 {
			t.Errorf("%s: last attempt %+v, want a refusal", h.URL, l[0].Last)
		}
	}
	if r.count() != 0 {
		t.Errorf("a private endpoint received %d requests", r.count())
	}
}

func TestDisabledBeforeDueIsSkipped(t *testing.T) {
	e := setup(t, store.SQLite)
	r := newReceiver(t, nil)
	h := e.hook(t, e.account, r.srv.URL, domain.EventAccountSMS, true)
	e.event(t, e.account, domain.EventAccountSMS, map[string]any{})
	// Fanned out while enabled, then disabled before the attempt.
	storetest.FanOut(t, e.st)
	off := false
	_, err := e.st.UpdateWebhook(ctx, e.account, h.ID, domain.WebhookPatch{Enabled: &off})
	must(t, err)
	e.start(t, webhooks.DispatcherConfig{})
	e.waitFor(t, "skipped", func() bool {
		l := e.deliveries(t, e.account, h.ID)
		return len(l) == 1 && l[0].State == domain.DeliverySkipped
	})
	if r.count() != 0 {
		t.Errorf("disabled subscription received %d", r.count())
	}
}

// TestDispatcherLifecycle checks the dispatcher as a background.Service:
// Stop before Start and twice is harmless, a second Start fails, Wake runs
// a pass, and a stopped dispatcher starts again and delivers.
func TestDispatcherLifecycle(t *testing.T) {
	e := setup(t, store.SQLite)
	r := newReceiver(t, nil)
	e.hook(t, e.account, r.srv.URL, domain.EventAccountSMS, true)
	var d background.Service = webhooks.New(webhooks.Config{Store: e.st, AllowHosts: webhooks.ParseAllowList("127.0.0.1")}).Dispatcher(webhooks.DispatcherConfig{Poll: time.Hour})
	d.Stop()
	wd := d.(*webhooks.Dispatcher)
	wd.TestSignals.Init()
	for round := range 2 {
		must(t, d.Start(ctx))
		if err := d.Start(ctx); err == nil {
			t.Fatal("a second Start succeeded")
		}
		if err := wd.TestSignals.Pass.WaitOrTimeout(t); err != nil { // the pass at start
			t.Fatalf("round %d: first pass: %v", round, err)
		}
		// An hour-long poll: only Wake brings the event's pass.
		e.event(t, e.account, domain.EventAccountSMS, map[string]any{"round": round})
		wd.Wake()
		r.next(t)
		if n := wd.TestSignals.Recorded.WaitOrTimeout(t); n != 1 {
			t.Errorf("round %d: %d outcomes recorded, want 1", round, n)
		}
		d.Stop()
		d.Stop()
	}
}

// TestCommitWakesDispatcher checks that an event committed in this process,
// and a redelivery, start the dispatcher at once: its poll is an hour here.
func TestCommitWakesDispatcher(t *testing.T) {
	for _, engine := range storetest.Engines(t) {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			e := setup(t, engine)
			r := newReceiver(t, nil)
			h := e.hook(t, e.account, r.srv.URL, domain.EventAccountSMS, true)
			d := e.start(t, webhooks.DispatcherConfig{Poll: time.Hour})
			must(t, d.TestSignals.Pass.WaitOrTimeout(t)) // the pass at start, before the event
			e.event(t, e.account, domain.EventAccountSMS, map[string]any{})
			first := r.next(t)
			e.waitFor(t, "delivery recorded", func() bool {
				l := e.deliveries(t, e.account, h.ID)
				return len(l) == 1 && l[0].State == domain.DeliverySucceeded
			})
			_, err := e.st.Redeliver(ctx, e.account, h.ID, e.deliveries(t, e.account, h.ID)[0].ID)
			must(t, err)
			if again := r.next(t); again.header.Get("webhook-id") != first.header.Get("webhook-id") {
				t.Errorf("redelivery webhook-id %q, want %q", again.header.Get("webhook-id"), first.header.Get("webhook-id"))
			}
		})
	}
}
