package main

import (
	"bytes"
	"context"
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
// signature and prints it, so a newcomer sees events flow after the first send.
// It answers the first attempt of the first event (evt_1, whose delivery is
// the first one, id 1, in the demo's fresh database) 503, so that the
// attempt log (GET /webhooks/{id}/deliveries/1/attempts) shows a failure and
// the retry that succeeded.
type demoReceiver struct {
	url    string
	id     int64
	secret string
	srv    *http.Server
	mu     sync.Mutex
	out    io.Writer
	// failed is set once the receiver has failed evt_1's first attempt.
	failed bool
}

// startDemoReceiver listens on a free loopback port and subscribes it to the
// account's AccountSMS events. The caller lists 127.0.0.1 as an allowed host.
func startDemoReceiver(ctx context.Context, st *store.Store, accountID int64, out io.Writer) (*demoReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &demoReceiver{url: "http://" + ln.Addr().String() + "/webhook", out: out}
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

func (r *demoReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	id, ts, sigs := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"), req.Header.Get("webhook-signature")
	verdict := "signature INVALID"
	if unix, err := strconv.ParseInt(ts, 10, 64); err == nil {
		want, _ := webhooks.Sign(r.secret, id, time.Unix(unix, 0), body)
		for _, s := range strings.Fields(sigs) {
			if s == want {
				verdict = "signature ok"
			}
		}
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, body, "    ", "  ") != nil {
		pretty.Write(body)
	}
	r.mu.Lock()
	fail := !r.failed && id == demoFailEvent
	r.failed = r.failed || fail
	if fail {
		fmt.Fprintf(r.out, "\n[webhook] POST %s  webhook-id=%s  %s  -> answered 503 on purpose, once: the retry shows in the attempt log\n", req.URL.Path, id, verdict)
	} else {
		fmt.Fprintf(r.out, "\n[webhook] POST %s  webhook-id=%s  %s\n    %s\n", req.URL.Path, id, verdict, pretty.String())
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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	r.srv.Shutdown(ctx)
}
