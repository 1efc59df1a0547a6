package store_test

import (
	"testing"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// A personal event (Audience set: one user's read state) is written with its
// audience and never fanned out to a webhook, while the account's events
// around it are; the fan-out still moves past it (migration 0029).
func TestPersonalEventsAreNotFannedOut(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		acct := storetest.Account(t, st, nil)
		user := storetest.User(t, st, acct.ID, nil)
		hook := domain.Webhook{AccountID: acct.ID, URL: "https://h.example.com", Type: domain.EventAccountSMS, Enabled: true, Secret: "whsec_AAAA"}
		noErr(t, st.CreateWebhook(ctx, &hook))
		shared := domain.Event{Type: domain.EventAccountSMS, Payload: []byte(`{"n":1}`)}
		personal := domain.Event{Type: domain.EventAccountSMS, Payload: []byte(`{"n":2}`), Audience: user.ID}
		noErr(t, st.AddEvents(ctx, acct.ID, []domain.Event{shared, personal, shared}))

		events, err := st.Events(ctx, acct.ID, 0, 10)
		noErr(t, err)
		if len(events) != 3 {
			t.Fatalf("%d events, want 3", len(events))
		}
		for i, want := range []int64{0, user.ID, 0} {
			if events[i].Audience != want {
				t.Errorf("event %d: audience %d, want %d", i, events[i].Audience, want)
			}
		}
		n, d := storetest.FanOut(t, st)
		if n != 3 || d != 2 {
			t.Errorf("fan-out took %d events into %d deliveries, want 3 into 2 (none for the personal one)", n, d)
		}
		list, err := st.WebhookDeliveries(ctx, acct.ID, hook.ID, 0, 10)
		noErr(t, err)
		for _, del := range list {
			if del.EventID == events[1].ID {
				t.Errorf("the personal event %d has delivery %d", del.EventID, del.ID)
			}
		}
		if left, err := st.HasUnfannedEvents(ctx); err != nil || left {
			t.Errorf("HasUnfannedEvents = %v, %v after the fan-out; want false", left, err)
		}
	})
}
