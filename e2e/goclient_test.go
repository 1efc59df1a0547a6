package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-server/switchboard/client"
	"github.com/switchboard-server/switchboard/client/webhook"
	"switchboard/internal/apitest"
)

// TestGoClientFlow is one integrator's whole flow through the public Go
// client (module github.com/switchboard-server/switchboard/client) against the real binary: subscribe a
// webhook, open the event stream, send texts, read them back in their
// conversations, lose the stream's connection once, and check that the
// stream gave every AccountSMS event the server holds exactly once and in
// order, and that each webhook delivery verifies with the client's
// Standard Webhooks verifier and carries the same bytes as the stream.
func TestGoClientFlow(t *testing.T) {
	engines(t, func(t *testing.T, db string) {
		c := crashProvision(t, db, nil)
		c.sim = "receipt-delay=0"
		c.extra = []string{"--webhook-allow-hosts", "127.0.0.1"}
		key := createKey(t, db, c.account, "go client",
			"sms:send,sms:read,messages:read,webhooks:read,webhooks:write").Key
		c.launch(t, true)
		recv := newDeliveryRecorder(t)
		tr := &streamTransport{t: t, base: &http.Transport{}}
		tr.validating = apitest.Transport(t, tr.base)
		api, err := client.New(c.baseURL(), key, client.WithHTTPClient(&http.Client{Transport: tr}))
		must(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()

		// The subscription, with its secret.
		hook, err := api.CreateWebhookWithResponse(ctx, client.WebhookCreate{
			Url: recv.srv.URL + "/hook", Type: client.AccountSMS, Enabled: client.Ptr(true)})
		must(t, err)
		must(t, client.ResponseError(hook.HTTPResponse, hook.Body))
		secret := hook.JSON201.Data.Secret

		// The stream, from the start of what the server holds, so that no
		// event can come before it connects.
		stream := newStreamRecorder()
		streamCtx, stopStream := context.WithCancel(ctx)
		streamDone := make(chan error, 1)
		go func() {
			var failed error
			for ev, err := range api.Events(streamCtx, client.EventsOptions{
				Types: []string{"AccountSMS"}, After: "evt_0",
				OnReconnect: func(err error, wait time.Duration) { t.Logf("stream reconnects in %v after: %v", wait, err) },
			}) {
				if err != nil {
					failed = err
					break
				}
				stream.add(ev)
			}
			streamDone <- failed
		}()

		send := func(to, text string) int64 {
			t.Helper()
			r, err := api.SendSMSWithResponse(ctx, nil, client.SendRequest{From: c.from, To: []string{to}, Message: client.Ptr(text)})
			must(t, err)
			must(t, client.ResponseError(r.HTTPResponse, r.Body))
			if r.StatusCode() != http.StatusCreated || len(r.JSON201.Data.Messages) != 1 || r.JSON201.Data.Messages[0].Id == nil {
				t.Fatalf("send to %s: %d %s", to, r.StatusCode(), r.Body)
			}
			if got := r.JSON201.Data.Billing.TotalPrice.String(); got != "0.0079" {
				t.Errorf("send to %s: totalPrice %s, want the rate 0.0079 exactly", to, got)
			}
			return *r.JSON201.Data.Messages[0].Id
		}
		first := send("+14155550101", "hello from the Go client")
		firstEv := stream.waitMessage(t, first)

		// The connection drops; the reader reconnects with Last-Event-ID.
		tr.cut()
		second := send("+14155550102", "sent while the stream was away")
		stream.waitMessage(t, second)
		if opens := tr.opens(); len(opens) < 2 || opens[0] != "evt_0" || opens[1] == "" {
			t.Errorf("stream connections' Last-Event-ID: %q, want evt_0 and then the last id received", opens)
		} else if !stream.has(opens[1]) {
			t.Errorf("the reconnection resumed after %s, an id the stream never gave", opens[1])
		}

		// Read back, through the page iterators (a page of one, so that
		// paging is exercised).
		convs := map[string]bool{}
		for conv, err := range api.Conversations(ctx, client.ListConversationsParams{Limit: client.Ptr("1")}) {
			must(t, err)
			convs[conv.Number] = true
		}
		// The API gives numbers normalized, without the "+".
		if !convs["14155550101"] || !convs["14155550102"] || len(convs) != 2 {
			t.Errorf("conversations: %v, want the two numbers texted", convs)
		}
		var thread []client.Message
		for m, err := range api.ThreadMessages(ctx, c.from, "+14155550101", client.ReadThreadParams{Limit: client.Ptr("1")}) {
			must(t, err)
			thread = append(thread, m)
		}
		if len(thread) != 1 || thread[0].Id != first || thread[0].Text != "hello from the Go client" {
			t.Errorf("thread: %+v, want message %d", thread, first)
		}

		// Every AccountSMS event the server holds came once, in order.
		st := crashOpenStore(t, db)
		var want []string
		crashWaitFor(t, "the stream has every AccountSMS event", func() string {
			evs, err := st.Events(ctx, c.account, 0, 1000)
			if err != nil {
				return err.Error()
			}
			want = want[:0]
			for _, e := range evs {
				if e.Type == "AccountSMS" {
					want = append(want, fmt.Sprintf("evt_%d", e.ID))
				}
			}
			if got := stream.ids(); !slices.Equal(got, want) {
				return fmt.Sprintf("stream %v, server %v", got, want)
			}
			return ""
		})
		stopStream()
		if err := <-streamDone; err != nil {
			t.Errorf("the stream ended with %v", err)
		}

		// Each event was delivered to the webhook, signed: the client's
		// verifier accepts every delivery as received, and refuses it with
		// a byte added or replayed after the tolerance.
		crashWaitFor(t, "a delivery of every event", func() string {
			if n := recv.count(want); n < len(want) {
				return fmt.Sprintf("%d of %d events delivered", n, len(want))
			}
			return ""
		})
		for _, id := range want {
			d := recv.first(id)
			if err := webhook.Verify(secret, d.header, d.body, time.Now()); err != nil {
				t.Errorf("delivery %s does not verify: %v", id, err)
			}
			if ev := stream.get(id); !bytes.Equal(ev.Data, d.body) {
				t.Errorf("delivery %s body %s, stream data %s", id, d.body, ev.Data)
			}
		}
		d := recv.first(firstEv.ID)
		tampered := append(slices.Clone(d.body), ' ')
		if err := webhook.Verify(secret, d.header, tampered, time.Now()); !errors.Is(err, webhook.ErrSignature) {
			t.Errorf("a tampered body verified: %v", err)
		}
		if err := webhook.Verify(secret, d.header, d.body, time.Now().Add(webhook.Tolerance+time.Minute)); !errors.Is(err, webhook.ErrTimestamp) {
			t.Errorf("a delivery replayed after the tolerance verified: %v", err)
		}
		payload, err := firstEv.Payload()
		if err != nil || payload.ID != firstEv.ID || payload.Type != "AccountSMS" {
			t.Errorf("payload of %s: %+v %v", firstEv.ID, payload, err)
		}

		// The subscription's deliveries, through the cursor iterator.
		var listed []string
		for dl, err := range api.Deliveries(ctx, fmt.Sprint(hook.JSON201.Data.Id), client.ListWebhookDeliveriesParams{Limit: client.Ptr(1)}) {
			must(t, err)
			listed = append(listed, dl.EventId)
		}
		slices.Reverse(listed) // newest first
		if !slices.Equal(listed, want) {
			t.Errorf("deliveries listed (oldest first) %v, want %v", listed, want)
		}
	})
}

// streamTransport validates every response against the OpenAPI document
// (apitest), except a 200 of GET /events, which is one long response that
// the client reads as it comes. It records the Last-Event-ID of each
// stream connection, and cut drops the current one as a network failure
// would.
type streamTransport struct {
	t                testing.TB
	base, validating http.RoundTripper

	mu      sync.Mutex
	lastIDs []string
	current io.Closer
}

func (s *streamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, "/events") {
		return s.validating.RoundTrip(req)
	}
	resp, err := s.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		apitest.Validate(s.t, req, resp)
		return resp, nil
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || resp.Header.Get("X-Request-Id") == "" {
		s.t.Errorf("GET /events: Content-Type %q, X-Request-Id %q", ct, resp.Header.Get("X-Request-Id"))
	}
	s.mu.Lock()
	s.lastIDs = append(s.lastIDs, req.Header.Get("Last-Event-ID"))
	s.current = resp.Body
	s.mu.Unlock()
	return resp, nil
}

func (s *streamTransport) cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current.Close()
}

func (s *streamTransport) opens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lastIDs)
}

// streamRecorder keeps the events a stream gave, failing on none: the
// test compares them with the server's afterwards.
type streamRecorder struct {
	mu      sync.Mutex
	events  []client.Event
	changed chan struct{}
}

func newStreamRecorder() *streamRecorder { return &streamRecorder{changed: make(chan struct{})} }

func (r *streamRecorder) add(ev client.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *streamRecorder) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.events {
		out = append(out, ev.ID)
	}
	return out
}

func (r *streamRecorder) has(id string) bool { return slices.Contains(r.ids(), id) }

func (r *streamRecorder) get(id string) client.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range r.events {
		if ev.ID == id {
			return ev
		}
	}
	return client.Event{}
}

// waitMessage waits for the message.sent event of message id.
func (r *streamRecorder) waitMessage(t *testing.T, id int64) client.Event {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		r.mu.Lock()
		changed := r.changed
		for _, ev := range r.events {
			p, err := ev.Payload()
			if err != nil {
				t.Errorf("event %s: %v", ev.ID, err)
				continue
			}
			var data client.SMSEventData
			if err := json.Unmarshal(p.Data, &data); err == nil && data.Event == "message.sent" && data.MessageId == id {
				r.mu.Unlock()
				return ev
			}
		}
		r.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no message.sent of %d on the stream in 30 s; it gave %v", id, r.ids())
		}
	}
}

// deliveryRecorder is a webhook endpoint that keeps every delivery.
type deliveryRecorder struct {
	srv *httptest.Server
	mu  sync.Mutex
	got map[string][]delivery // webhook-id → each delivery of it
}

type delivery struct {
	header http.Header
	body   []byte
}

func newDeliveryRecorder(t *testing.T) *deliveryRecorder {
	r := &deliveryRecorder{got: map[string][]delivery{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		id := req.Header.Get("webhook-id")
		r.got[id] = append(r.got[id], delivery{header: req.Header.Clone(), body: body})
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *deliveryRecorder) count(ids []string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, id := range ids {
		if len(r.got[id]) > 0 {
			n++
		}
	}
	return n
}

func (r *deliveryRecorder) first(id string) delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.got[id]) == 0 {
		return delivery{}
	}
	return r.got[id][0]
}
