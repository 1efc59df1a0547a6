package store_test

import (
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestPruneWebhookHistory checks what pruning keeps, on the store's clock:
// a delivery finished more than the retention ago goes with its attempts
// and, once no delivery of it is left, its event; a pending delivery and its
// event stay however old, as do younger deliveries and events not fanned
// out yet. Batches delete at most their size.
func TestPruneWebhookHistory(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
		now := t0
		st.SetClock(func() time.Time { return now })
		acct := storetest.Account(t, st, nil)
		hook := domain.Webhook{AccountID: acct.ID, URL: "https://h.example.com", Type: domain.EventAccountSMS, Enabled: true, Secret: "whsec_AAAA"}
		noErr(t, st.CreateWebhook(ctx, &hook))
		sms := domain.Event{Type: domain.EventAccountSMS, Payload: []byte(`{}`)}
		call := domain.Event{Type: domain.EventEndedCalls, Payload: []byte(`{}`)} // no subscription: no delivery

		// settle fans out what is waiting and finishes every due delivery,
		// except that keepPending are released pending, due beyond the test.
		settle := func(keepPending int) {
			t.Helper()
			storetest.FanOut(t, st)
			ids, err := st.Claim(ctx, store.ClaimWebhookDeliveries, "test", 100, time.Minute)
			noErr(t, err)
			var outs []store.DeliveryOutcome
			for i, id := range ids {
				o := store.DeliveryOutcome{DeliveryID: id, WebhookID: hook.ID, State: domain.DeliverySucceeded,
					Attempt: &domain.WebhookAttempt{At: now, StatusCode: 200}}
				if i < keepPending {
					o.State, o.NextAt = domain.DeliveryPending, now.Add(90*24*time.Hour)
				}
				outs = append(outs, o)
			}
			if _, err := st.FinishDeliveries(ctx, "test", outs); err != nil {
				t.Fatal(err)
			}
		}
		// Day 0: 5 events delivered, 1 left pending, 1 without subscribers.
		noErr(t, st.AddEvents(ctx, acct.ID, []domain.Event{sms, sms, sms, sms, sms, sms, call}))
		settle(1)
		// Day 29: one more, delivered.
		now = t0.Add(29 * 24 * time.Hour)
		noErr(t, st.AddEvents(ctx, acct.ID, []domain.Event{sms}))
		settle(0)
		if n := st.CountRows(ctx, "webhook_attempts"); n != 7 {
			t.Fatalf("attempts before pruning: %d, want 7", n)
		}

		// Day 31 with a 30-day retention: day 0's finished history is past it.
		now = t0.Add(31 * 24 * time.Hour)
		noErr(t, st.AddEvents(ctx, acct.ID, []domain.Event{sms})) // not fanned out yet
		d, e, err := st.PruneWebhookHistory(ctx, 30*24*time.Hour, 3)
		if err != nil || d != 3 || e != 3 {
			t.Fatalf("first batch of 3: %d deliveries, %d events, %v; want 3 and 3 (the call event and two whose deliveries went)", d, e, err)
		}
		for {
			d, e, err := st.PruneWebhookHistory(ctx, 30*24*time.Hour, 3)
			noErr(t, err)
			if d < 3 && e < 3 {
				break
			}
		}
		list, err := st.WebhookDeliveries(ctx, acct.ID, hook.ID, 0, 100)
		noErr(t, err)
		if len(list) != 2 || list[0].State != domain.DeliverySucceeded || list[1].State != domain.DeliveryPending {
			t.Fatalf("deliveries left: %+v, want day 29's and the pending one", list)
		}
		evs, err := st.Events(ctx, acct.ID, 0, 100)
		noErr(t, err)
		if len(evs) != 3 || evs[0].ID != list[1].EventID || evs[1].ID != list[0].EventID {
			t.Errorf("events left: %+v, want the pending delivery's, day 29's and the one not fanned out", evs)
		}
		if n := st.CountRows(ctx, "webhook_attempts"); n != 2 {
			t.Errorf("attempts left: %d, want 2 (the pending delivery's and day 29's)", n)
		}
		// Nothing more is due until day 29's history is 30 days old.
		if d, e, err := st.PruneWebhookHistory(ctx, 30*24*time.Hour, 3); d+e != 0 || err != nil {
			t.Errorf("again: %d, %d, %v; want nothing", d, e, err)
		}
	})
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestClaimDeliveriesSkips checks that a claim leaves out the deliveries of
// the subscriptions it is told to skip, and takes them once it is not.
func TestClaimDeliveriesSkips(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		acct := storetest.Account(t, st, nil)
		var hooks [2]domain.Webhook
		for i := range hooks {
			hooks[i] = domain.Webhook{AccountID: acct.ID, URL: "https://h.example.com", Type: domain.EventAccountSMS, Enabled: true, Secret: "whsec_AAAA"}
			noErr(t, st.CreateWebhook(ctx, &hooks[i]))
		}
		noErr(t, st.AddEvents(ctx, acct.ID, []domain.Event{{Type: domain.EventAccountSMS, Payload: []byte(`{}`)}, {Type: domain.EventAccountSMS, Payload: []byte(`{}`)}}))
		if _, n := storetest.FanOut(t, st); n != 4 {
			t.Fatalf("fan out: %d deliveries, want 4", n)
		}
		ids, err := st.ClaimDeliveries(ctx, "o", 10, time.Minute, []int64{hooks[0].ID})
		noErr(t, err)
		jobs, err := st.DeliveryJobs(ctx, ids)
		noErr(t, err)
		if len(jobs) != 2 || jobs[0].WebhookID != hooks[1].ID || jobs[1].WebhookID != hooks[1].ID {
			t.Fatalf("claim skipping the first subscription took %+v", jobs)
		}
		if ids, err := st.ClaimDeliveries(ctx, "o", 10, time.Minute, nil); err != nil || len(ids) != 2 {
			t.Fatalf("claim without skipping: %v, %v; want the first subscription's 2", ids, err)
		}
	})
}
