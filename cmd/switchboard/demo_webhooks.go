package main

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/webhooks"
)

// demoReceiver is the demo's own webhook endpoint: it checks each delivery's
// signature and keeps a tally that it prints as one line at most once a
// second, and only when it changed (the seeded inbox alone is thousands of
// deliveries at start: one line each would scroll the banner's key and
// commands out of sight). It answers the first attempt of the first event
// (evt_1, whose delivery is the first one, id 1, in the demo's fresh
// database) 503, so that the attempt log
// (GET /webhooks/{id}/deliveries/1/attempts) shows a failure and the retry
// that succeeded.
type demoReceiver struct {
	url    string
	id     int64
	secret string
	srv    *http.Server
	out    io.Writer
	stop   chan struct{}
	done   chan struct{}

	mu sync.Mutex
	// failed is set once the receiver has failed evt_1's first attempt.
	failed    bool
	reporting bool
	tally     receiverTally
}

// receiverTally is what the receiver has seen: deliveries, those whose
// signature did not verify, and the last one's id and event.
type receiverTally struct {
	received, invalid int
	lastID, lastEvent string
	lastStatus        int
}

// startDemoReceiver listens on a free loopback port and subscribes it to the
// account's AccountSMS events. The caller lists 127.0.0.1 as an allowed host.
func startDemoReceiver(ctx context.Context, st *store.Store, accountID int64, out io.Writer) (*demoReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &demoReceiver{url: "http://" + ln.Addr().String() + "/webhook", out: out, stop: make(chan struct{}), done: make(chan struct{})}
	w := domain.Webhook{AccountID: accountID, Name: "demo receiver", Description: "started by switchboard demo; prints each delivery",
		URL: r.url, Type: domain.EventAccountSMS, Enabled: true, Secret: webhooks.NewSecret()}
	if err := st.CreateWebhook(ctx, &w); err != nil {
		ln.Close()
		return nil, err
	}
	r.secret, r.id = w.Secret, w.ID
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	go r.srv.Serve(ln)
	return r, nil
}

// startReport prints the tally once a second when it changed, until close.
// The demo starts it once its banner is out, which nothing should precede.
func (r *demoReceiver) startReport() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reporting {
		return
	}
	r.reporting = true
	go r.report()
}

func (r *demoReceiver) report() {
	defer close(r.done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var shown receiverTally
	for {
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
		r.mu.Lock()
		t := r.tally
		r.mu.Unlock()
		if t == shown {
			continue
		}
		shown = t
		fmt.Fprintln(r.out, termSafe(t.String()))
	}
}

func (t receiverTally) String() string {
	bad := ""
	if t.invalid > 0 {
		bad = fmt.Sprintf(", %d with a signature that did not verify", t.invalid)
	}
	return fmt.Sprintf("[webhooks] %d deliveries received%s; last: %s %s, answered %d", t.received, bad, t.lastID, t.lastEvent, t.lastStatus)
}

func (r *demoReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	id, ts, sigs := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"), req.Header.Get("webhook-signature")
	verified := false
	if unix, err := strconv.ParseInt(ts, 10, 64); err == nil {
		want, _ := webhooks.Sign(r.secret, id, time.Unix(unix, 0), body)
		for _, s := range strings.Fields(sigs) {
			verified = verified || hmac.Equal([]byte(s), []byte(want))
		}
	}
	var event struct {
		Type string `json:"type"`
		Data struct {
			Event string `json:"event"`
		} `json:"data"`
	}
	json.Unmarshal(body, &event) // a body that is not an event leaves it empty
	r.mu.Lock()
	fail := !r.failed && id == demoFailEvent
	r.failed = r.failed || fail
	t := &r.tally
	t.received++
	if !verified {
		t.invalid++
	}
	t.lastID, t.lastEvent, t.lastStatus = id, strings.TrimSpace(event.Type+" "+event.Data.Event), http.StatusNoContent
	if fail {
		t.lastStatus = http.StatusServiceUnavailable
	}
	r.mu.Unlock()
	if fail {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "demo receiver: failing the first delivery once, to show a retry\n")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// demoFailEvent is the event whose first attempt the demo's receiver fails.
const demoFailEvent = "evt_1"

func (r *demoReceiver) close() {
	close(r.stop)
	r.mu.Lock()
	reporting := r.reporting
	r.mu.Unlock()
	if reporting {
		<-r.done
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r.srv.Shutdown(ctx)
}
