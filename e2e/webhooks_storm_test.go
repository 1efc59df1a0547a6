package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"switchboard/internal/domain"
	"switchboard/internal/store/storetest"
)

// stormReceiver is a webhook endpoint for several subscriptions (one path
// each) that verifies every delivery with the Standard Webhooks reference
// library and remembers, per subscription and webhook-id, each body it got
// and whether the first copy arrived before the server was killed.
type stormReceiver struct {
	srv     *httptest.Server
	killed  atomic.Bool
	trigger int64         // after this many requests, killNow is closed
	killNow chan struct{} // closed once
	fire    sync.Once     // closes killNow
	done    chan struct{} // closed when the test ends: nothing is held any more
	n       atomic.Int64

	mu       sync.Mutex
	secrets  map[string]string // path → secret
	got      map[string][]string
	early    map[string]bool // key → first copy came before the kill
	problems []string
}

func newStormReceiver(t *testing.T, trigger int64) *stormReceiver {
	r := &stormReceiver{trigger: trigger, killNow: make(chan struct{}), done: make(chan struct{}), secrets: map[string]string{}, got: map[string][]string{}, early: map[string]bool{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		id := req.Header.Get("webhook-id")
		key := req.URL.Path + " " + id
		r.mu.Lock()
		if wh, err := standardwebhooks.NewWebhook(r.secrets[req.URL.Path]); err != nil || wh.Verify(body, req.Header) != nil {
			r.problems = append(r.problems, fmt.Sprintf("%s: signature does not verify", key))
		}
		if len(r.got[key]) == 0 {
			r.early[key] = !r.killed.Load()
		}
		r.got[key] = append(r.got[key], string(body))
		r.mu.Unlock()
		if r.n.Add(1) >= r.trigger && !r.killed.Load() {
			// From the trigger on, the server about to be killed gets no
			// answer: every delivery it sends now is in flight at the kill,
			// held until the kill ends its connection.
			r.fire.Do(func() { close(r.killNow) })
			select {
			case <-req.Context().Done():
				return
			case <-r.done:
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.srv.Close)
	t.Cleanup(func() { close(r.done) }) // before r.srv.Close waits for the held requests
	return r
}

// TestWebhookStormKilled fans a few hundred events out to three
// subscriptions, kills the server with SIGKILL mid-storm and restarts it on
// the same database: every event reaches every subscription, signed;
// duplicates are only of deliveries the killed server had under way (their
// first copy arrived before the kill, at most 8 per subscription: the
// attempts one subscription may have in flight), with the same webhook-id
// and the same body.
func TestWebhookStormKilled(t *testing.T) {
	for _, engine := range storetest.Engines(t) {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			testWebhookStorm(t, storetest.DSN(t, engine))
		})
	}
}

func testWebhookStorm(t *testing.T, db string) {
	const events, subs, perWebhook = 300, 3, 8
	account := createAccount(t, db, "Storm Inc")
	key := createKey(t, db, account, "hooks", "webhooks:read,webhooks:write").Key
	var tok struct{ Token string }
	cliJSON(t, db, &tok, "ingest-token", "create", "--account", fmt.Sprint(account))
	c := &crashSetup{db: db, account: account, port: crashFreePort(t), sim: "receipt-delay=1s",
		extra: []string{"--webhook-allow-hosts", "127.0.0.1"}}
	first := c.launch(t, false)
	client := crashClient(t)
	post := func(path, auth, body string) []byte {
		t.Helper()
		req, _ := http.NewRequest("POST", c.baseURL()+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+auth)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
		}
		return b
	}

	r := newStormReceiver(t, events*subs/3)
	hookIDs := map[string]int64{}
	for i := range subs {
		path := fmt.Sprintf("/hook/%d", i+1)
		var created struct {
			Data struct {
				ID     int64  `json:"id"`
				Secret string `json:"secret"`
			}
		}
		must(t, json.Unmarshal(post("/api/public/v1/webhooks", key, `{"url":"`+r.srv.URL+path+`","type":"AccountRealTimeCalls","enabled":true}`), &created))
		r.mu.Lock()
		r.secrets[path] = created.Data.Secret
		r.mu.Unlock()
		hookIDs[path] = created.Data.ID
	}
	// The storm: one ingest request of real-time call events, each an event.
	var lines strings.Builder
	for i := range events {
		fmt.Fprintf(&lines, `{"event":"ringing","id":"1772323200.%d","direction":"inbound","startTime":"2026-03-01T00:00:00Z"}`+"\n", i+1)
	}
	if b := post("/api/ingest/v1/calls", tok.Token, lines.String()); !strings.Contains(string(b), fmt.Sprintf(`"events":%d`, events)) {
		t.Fatalf("ingest: %.500s", b)
	}

	select {
	case <-r.killNow:
	case <-time.After(60 * time.Second):
		t.Fatalf("only %d deliveries in 60 s", r.n.Load())
	}
	crashKill(t, first)
	// Whatever arrives from now on comes from the restarted server.
	r.killed.Store(true)
	atKill := r.n.Load()
	c.launch(t, true)

	st := crashOpenStore(t, db)
	evs, err := st.Events(context.Background(), account, 0, 10*events)
	must(t, err)
	if len(evs) != events {
		t.Fatalf("%d events in the outbox, want %d", len(evs), events)
	}
	// A killed server's deliveries come back when their leases end (the
	// attempt timeout plus 20 s).
	crashWaitUntil(t, time.Now().Add(90*time.Second), "every delivery after the restart", func() string {
		missing := 0
		r.mu.Lock()
		for path := range hookIDs {
			for _, e := range evs {
				if len(r.got[path+" "+domain.EventID(e.ID)]) == 0 {
					missing++
				}
			}
		}
		r.mu.Unlock()
		backlog, err := st.DeliveryBacklog(context.Background())
		must(t, err)
		if missing > 0 || backlog > 0 {
			return fmt.Sprintf("%d deliveries never arrived, backlog %d (%d requests before the kill, %d in all)", missing, backlog, atKill, r.n.Load())
		}
		return ""
	})

	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.problems {
		t.Error(p)
	}
	dups := map[string]int{}
	for k, bodies := range r.got {
		if len(bodies) == 1 {
			continue
		}
		path := strings.Fields(k)[0]
		dups[path]++
		if !r.early[k] {
			t.Errorf("%s arrived %d times, the first after the kill: not a delivery in flight", k, len(bodies))
		}
		for _, b := range bodies[1:] {
			if b != bodies[0] {
				t.Errorf("%s: a duplicate's body differs:\n%s\n%s", k, bodies[0], b)
			}
		}
	}
	total := 0
	for path, id := range hookIDs {
		total += dups[path]
		if dups[path] > perWebhook {
			t.Errorf("%s: %d events arrived twice, more than the %d a subscription has in flight", path, dups[path], perWebhook)
		}
		list, err := st.WebhookDeliveries(context.Background(), account, id, 0, 10*events)
		must(t, err)
		succeeded := 0
		for _, d := range list {
			if d.State == domain.DeliverySucceeded {
				succeeded++
			}
		}
		if len(list) != events || succeeded != events {
			t.Errorf("%s: %d deliveries, %d succeeded; want %d each", path, len(list), succeeded, events)
		}
	}
	t.Logf("%d requests before the kill, %d in all for %d deliveries; %d delivered twice", atKill, r.n.Load(), events*subs, total)
}
