package httpapi_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"switchboard/internal/auth"
	"switchboard/internal/httpapi"
	"switchboard/internal/sms"
	"switchboard/internal/users"
	"switchboard/internal/webhooks"
)

// TestWebhookTestSendsAreCapped asks for 40 test events to one slow endpoint
// at once: the endpoint never has more than the subscription's 8 slots of
// requests open (before, 40 connections), and every test still answers 200
// with a succeeded delivery, each having waited for its turn.
func TestWebhookTestSendsAreCapped(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		srv := httptest.NewServer(httpapi.New(httpapi.Config{
			Store: f.st, Auth: &auth.Authenticator{Store: f.st},
			SMS: sms.New(sms.Config{Store: f.st}), Users: users.New(users.Config{Store: f.st}),
			Webhooks: webhooks.New(webhooks.Config{Store: f.st, AllowHosts: webhooks.ParseAllowList("127.0.0.1")}),
			Log:      slog.New(slog.DiscardHandler),
		}))
		t.Cleanup(srv.Close)
		f.url = srv.URL
		var open, most, total atomic.Int64
		// The endpoint holds every request until it has 8 open at once: then
		// the subscription's slots are all taken, and a request past the cap
		// would come while they are held.
		full, fill := make(chan struct{}), sync.Once{}
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := open.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			total.Add(1)
			if n >= 8 {
				fill.Do(func() { close(full) })
			}
			select {
			case <-full:
			case <-r.Context().Done():
			}
			open.Add(-1)
		}))
		t.Cleanup(rcv.Close)
		t.Cleanup(func() { fill.Do(func() { close(full) }) }) // before rcv.Close waits for the held requests
		w := f.createWebhook(t, f.keys["acme"], `{"url":"`+rcv.URL+`/in","type":"AccountSMS"}`)

		var wg sync.WaitGroup
		for range 40 {
			wg.Go(func() {
				status, _, b := f.do(t, "POST", "/api/public/v1/webhooks/"+strconv.FormatInt(w.ID, 10)+"/test", f.keys["acme"], "")
				if status != 200 || decodeInto[struct{ Data testDelivery }](t, b).Data.State != "succeeded" {
					t.Errorf("test: %d %s", status, b)
				}
			})
		}
		wg.Wait()
		if m := most.Load(); m != 8 {
			t.Errorf("%d test requests open at once to one subscription, want its 8 slots' worth and no more", m)
		}
		if n := total.Load(); n != 40 {
			t.Errorf("%d requests reached the endpoint, want 40", n)
		}
	})
}
