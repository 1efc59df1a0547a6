package webhooks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/apitest"
	"switchboard/internal/domain"
	"switchboard/internal/store/storetest"
)

// TestSendTestWaitsForASlotThenIs503: with every slot of the subscription
// taken, a test send waits up to testSlotWait and is then 503 unavailable,
// having sent and recorded nothing; a slot freed while it waits is its.
func TestSendTestWaitsForASlotThenIs503(t *testing.T) {
	for _, engine := range storetest.Engines(t) {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := storetest.Open(t, engine)
			var hits atomic.Int64
			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
			t.Cleanup(rcv.Close)
			acct := storetest.Account(t, st, nil)
			h := domain.Webhook{AccountID: acct.ID, URL: rcv.URL, Type: domain.EventAccountSMS, Secret: NewSecret()}
			if err := st.CreateWebhook(ctx, &h); err != nil {
				t.Fatal(err)
			}
			d := New(Config{Store: st, AllowHosts: ParseAllowList("127.0.0.1")}).Dispatcher(DispatcherConfig{PerWebhook: 2, Timeout: 2 * time.Second}) // the delivery after the wait must not time out on a loaded machine
			d.mu.Lock()
			full := d.slots.take(h.ID) && d.slots.take(h.ID) && !d.slots.take(h.ID)
			d.mu.Unlock()
			if !full {
				t.Fatal("the subscription should have exactly 2 slots")
			}

			started := time.Now()
			_, err := d.SendTest(ctx, acct.ID, h.ID)
			if domain.ErrorCode(err) != domain.Unavailable {
				t.Fatalf("test send with every slot taken: %v, want unavailable", err)
			}
			if waited := time.Since(started); waited < d.testSlotWait() {
				t.Errorf("answered after %v, want a wait of %v first", waited, d.testSlotWait())
			}
			if list, err := st.WebhookDeliveries(ctx, acct.ID, h.ID, 0, 10); err != nil || len(list) != 0 || hits.Load() != 0 {
				t.Errorf("a refused test left %d deliveries (%v) and %d requests", len(list), err, hits.Load())
			}

			// A slot freed while a test waits goes to it. (The refused test
			// left its wait's signal behind: a slot freed and taken again
			// clears it, so that the next wait's can be seen.)
			d.mu.Lock()
			d.slots.release(h.ID)
			d.slots.take(h.ID)
			d.mu.Unlock()
			done := make(chan error, 1)
			go func() {
				dl, err := d.SendTest(ctx, acct.ID, h.ID)
				if err == nil && dl.State != domain.DeliverySucceeded {
					t.Errorf("test send after the wait: %+v", dl)
				}
				done <- err
			}()
			apitest.Eventually(t, "the test send to wait for a slot", func() bool {
				d.mu.Lock()
				defer d.mu.Unlock()
				_, waiting := d.slots.freed[h.ID]
				return waiting
			})
			d.freeTestSlot(h.ID)
			if err := <-done; err != nil {
				t.Fatalf("test send given a freed slot: %v", err)
			}
			d.mu.Lock()
			held := d.slots.held[h.ID]
			d.mu.Unlock()
			if held != 1 || hits.Load() != 1 {
				t.Errorf("afterwards %d slots held, %d requests; want 1 (ours) and 1", held, hits.Load())
			}
		})
	}
}
