package webhooks_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store/storetest"
	"switchboard/internal/webhooks"
)

// TestTestSendsShareTheDispatcherSlots sends test events and events at once
// to one slow subscription: the endpoint never has more requests open than
// the subscription's slots (before, each test send opened its own
// connection beside the dispatcher's), every test succeeds, and every
// delivery queued behind a test's slot is delivered once the slot frees.
func TestTestSendsShareTheDispatcherSlots(t *testing.T) {
	for _, engine := range storetest.Engines(t) {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			e := setup(t, engine)
			var open, most, count atomic.Int64
			// The endpoint holds every request until it has 3 open at once:
			// then the subscription's slots are all taken, and a request past
			// them would come while they are held.
			full, fill := make(chan struct{}), sync.Once{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				n := open.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				count.Add(1)
				if n >= 3 {
					fill.Do(func() { close(full) })
				}
				select {
				case <-full:
				case <-req.Context().Done():
				}
				open.Add(-1)
			}))
			t.Cleanup(srv.Close)
			t.Cleanup(func() { fill.Do(func() { close(full) }) }) // before srv.Close waits for the held requests
			h := e.hook(t, e.account, srv.URL, domain.EventAccountSMS, true)
			d := e.start(t, webhooks.DispatcherConfig{PerWebhook: 3, Timeout: 5 * time.Second})

			const tests, events = 12, 6
			var wg sync.WaitGroup
			for range tests {
				wg.Go(func() {
					dl, err := d.SendTest(ctx, e.account, h.ID)
					if err != nil || dl.State != domain.DeliverySucceeded {
						t.Errorf("test send: %+v, %v", dl, err)
					}
				})
			}
			for range events {
				e.event(t, e.account, domain.EventAccountSMS, map[string]any{})
			}
			wg.Wait()
			e.waitFor(t, "every delivery", func() bool {
				n := 0
				for _, dl := range e.deliveries(t, e.account, h.ID) {
					if dl.State == domain.DeliverySucceeded {
						n++
					}
				}
				return n == tests+events
			})
			if m := most.Load(); m != 3 {
				t.Errorf("%d requests open at once to one subscription, want its 3 slots' worth and no more", m)
			}
			if n := count.Load(); n != tests+events {
				t.Errorf("%d requests, want %d", n, tests+events)
			}
		})
	}
}
