package webhooks_test

import (
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/webhooks"
)

// TestPrunerDeletesInBatchesUntilDone checks the pruning service: one pass
// deletes, batch after batch, every delivery past the retention.
func TestPrunerDeletesInBatchesUntilDone(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		st.SetClock(func() time.Time { return now })
		e := &env{st: st, account: storetest.Account(t, st, nil).ID}
		h := e.hook(t, e.account, "https://h.example.com", domain.EventAccountSMS, true)
		for range 5 {
			e.event(t, e.account, domain.EventAccountSMS, map[string]any{})
		}
		storetest.FanOut(t, st)
		ids, err := st.Claim(ctx, store.ClaimWebhookDeliveries, "t", 10, time.Minute)
		must(t, err)
		var outs []store.DeliveryOutcome
		for _, id := range ids {
			outs = append(outs, store.DeliveryOutcome{DeliveryID: id, WebhookID: h.ID, State: domain.DeliveryFailed, Attempt: &domain.WebhookAttempt{At: now, StatusCode: 500}})
		}
		_, err = st.FinishDeliveries(ctx, "t", outs)
		must(t, err)

		now = now.Add(webhooks.DefaultRetention + time.Second)
		p := webhooks.New(webhooks.Config{Store: st}).Pruner(webhooks.PrunerConfig{Batch: 2, Interval: time.Hour})
		p.TestSignals.Init()
		must(t, p.Start(ctx))
		defer p.Stop()
		must(t, p.TestSignals.Pass.WaitOrTimeout(t))
		if l := e.deliveries(t, e.account, h.ID); len(l) != 0 {
			t.Errorf("%d deliveries left after a pass, want 0", len(l))
		}
		if evs, err := st.Events(ctx, e.account, 0, 10); err != nil || len(evs) != 0 {
			t.Errorf("%d events left after a pass (%v), want 0", len(evs), err)
		}
	})
}
