package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestAttemptLog checks that every attempt of a delivery is shown, newest
// first: with its delivery in a list (the newest DeliveryLogAttempts) and
// page by page on its own, and only to the delivery's account and
// subscription. An endpoint's answer is kept as at most 1 KiB of valid
// UTF-8 without NUL: PostgreSQL refused a binary answer, and with it the
// whole batch of outcomes it was recorded with.
func TestAttemptLog(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
		st.SetClock(func() time.Time { return now })
		acct, other := storetest.Account(t, st, nil), storetest.Account(t, st, nil)
		hook := domain.Webhook{AccountID: acct.ID, URL: "https://h.example.com", Type: domain.EventAccountSMS, Enabled: true, Secret: "whsec_AAAA"}
		noErr(t, st.CreateWebhook(ctx, &hook))
		hook2 := domain.Webhook{AccountID: acct.ID, URL: "https://h2.example.com", Type: domain.EventAccountSMS, Enabled: true, Secret: "whsec_AAAA"}
		noErr(t, st.CreateWebhook(ctx, &hook2))
		noErr(t, st.AddEvents(ctx, acct.ID, []domain.Event{{Type: domain.EventAccountSMS, Payload: []byte(`{}`)}}))
		storetest.FanOut(t, st)

		binary := "bad\x00\xff\xfe" + strings.Repeat("é", 600) // 3 + 3 + 1200 bytes
		answers := []struct {
			status int
			body   string
			state  string
		}{{500, binary, domain.DeliveryPending}, {503, "down", domain.DeliveryPending}, {200, "ok", domain.DeliverySucceeded}}
		var deliveryID int64
		for i, a := range answers {
			now = now.Add(time.Second)
			ids, err := st.ClaimDeliveries(ctx, "o", 10, time.Minute, []int64{hook2.ID})
			noErr(t, err)
			if len(ids) != 1 {
				t.Fatalf("attempt %d: claimed %v, want one delivery", i+1, ids)
			}
			deliveryID = ids[0]
			o := store.DeliveryOutcome{DeliveryID: ids[0], WebhookID: hook.ID, State: a.state, NextAt: now,
				Attempt: &domain.WebhookAttempt{At: now, StatusCode: a.status, Latency: time.Duration(i+1) * time.Millisecond}, Response: a.body}
			if a.status != 200 {
				o.Attempt.Error = fmt.Sprintf("HTTP %d", a.status)
			}
			if n, err := st.FinishDeliveries(ctx, "o", []store.DeliveryOutcome{o}); err != nil || n != 1 {
				t.Fatalf("attempt %d: recorded %d (%v)", i+1, n, err)
			}
		}

		list, err := st.WebhookDeliveries(ctx, acct.ID, hook.ID, 0, 10)
		noErr(t, err)
		if len(list) != 1 || len(list[0].Log) != 3 {
			t.Fatalf("deliveries %+v, want one with 3 attempts in its log", list)
		}
		log := list[0].Log
		for i, want := range []int{200, 503, 500} {
			if log[i].StatusCode != want || log[i].ID == 0 || (i > 0 && log[i].ID >= log[i-1].ID) || (i > 0 && !log[i].At.Before(log[i-1].At)) {
				t.Errorf("log[%d] = %+v, want status %d, newest first", i, log[i], want)
			}
		}
		if log[0].Response != "ok" || log[1].Response != "down" || log[2].Latency != time.Millisecond || log[1].Error != "HTTP 503" {
			t.Errorf("log %+v", log)
		}
		r := log[2].Response
		if !utf8.ValidString(r) || strings.ContainsRune(r, 0) || len(r) > store.MaxAttemptResponse || len(r) < store.MaxAttemptResponse-2 || !strings.HasPrefix(r, "bad\uFFFD\uFFFD") || !strings.HasSuffix(r, "é") {
			t.Errorf("the binary answer was kept as %d bytes %q, want valid UTF-8 without NUL, at most %d bytes, cut between characters", len(r), r, store.MaxAttemptResponse)
		}
		if l := list[0].Last; l == nil || l.StatusCode != 200 {
			t.Errorf("last attempt %+v", l)
		}

		// Paged on its own, newest first.
		page, err := st.WebhookAttempts(ctx, acct.ID, hook.ID, deliveryID, 0, 2)
		noErr(t, err)
		if len(page) != 2 || page[0].ID != log[0].ID || page[1].ID != log[1].ID {
			t.Fatalf("first page %+v", page)
		}
		page, err = st.WebhookAttempts(ctx, acct.ID, hook.ID, deliveryID, page[1].ID, 2)
		noErr(t, err)
		if len(page) != 1 || page[0].ID != log[2].ID || page[0].Response != r {
			t.Fatalf("second page %+v", page)
		}
		// Another account's, or another subscription's, delivery is not found.
		for _, c := range []struct{ account, hook int64 }{{other.ID, hook.ID}, {acct.ID, hook2.ID}} {
			if _, err := st.WebhookAttempts(ctx, c.account, c.hook, deliveryID, 0, 10); !domain.IsNotFound(err) {
				t.Errorf("attempts as account %d, subscription %d: %v, want not found", c.account, c.hook, err)
			}
		}
	})
}

// TestAttemptLogIsBounded checks that a delivery in a list carries only its
// newest DeliveryLogAttempts attempts, and the page all of them.
func TestAttemptLogIsBounded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		acct := storetest.Account(t, st, nil)
		hook := domain.Webhook{AccountID: acct.ID, URL: "https://h.example.com", Type: domain.EventAccountSMS, Enabled: true, Secret: "whsec_AAAA"}
		noErr(t, st.CreateWebhook(ctx, &hook))
		noErr(t, st.AddEvents(ctx, acct.ID, []domain.Event{{Type: domain.EventAccountSMS, Payload: []byte(`{}`)}, {Type: domain.EventAccountSMS, Payload: []byte(`{}`)}}))
		storetest.FanOut(t, st)
		n := store.DeliveryLogAttempts + 3
		for i := range n {
			ids, err := st.Claim(ctx, store.ClaimWebhookDeliveries, "o", 10, time.Minute)
			noErr(t, err)
			var outs []store.DeliveryOutcome
			for _, id := range ids {
				outs = append(outs, store.DeliveryOutcome{DeliveryID: id, WebhookID: hook.ID, State: domain.DeliveryPending, NextAt: time.Now().Add(-time.Second),
					Attempt: &domain.WebhookAttempt{At: time.Now(), StatusCode: 500 + i}})
			}
			_, err = st.FinishDeliveries(ctx, "o", outs)
			noErr(t, err)
		}
		list, err := st.WebhookDeliveries(ctx, acct.ID, hook.ID, 0, 10)
		noErr(t, err)
		for _, d := range list {
			if d.Attempts != n || len(d.Log) != store.DeliveryLogAttempts || d.Log[0].StatusCode != 500+n-1 {
				t.Errorf("delivery %d: %d attempts, %d in its log (newest %d); want %d, %d, %d", d.ID, d.Attempts, len(d.Log), d.Log[0].StatusCode, n, store.DeliveryLogAttempts, 500+n-1)
			}
			all, err := st.WebhookAttempts(ctx, acct.ID, hook.ID, d.ID, 0, 100)
			noErr(t, err)
			if len(all) != n {
				t.Errorf("delivery %d: %d attempts paged, want %d", d.ID, len(all), n)
			}
		}
	})
}

// TestHoldInABatch checks that a subscription's hold (an endpoint down)
// recorded in a batch of outcomes moves the deliveries released before it
// in the batch, as it moves any already due, and not those released after
// it, which a hold finds still leased: on PostgreSQL the batch's releases
// are made first, in one pipeline, and the hold after them.
func TestHoldInABatch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
		st.SetClock(func() time.Time { return now })
		acct := storetest.Account(t, st, nil)
		hook := domain.Webhook{AccountID: acct.ID, URL: "https://h.example.com", Type: domain.EventAccountSMS, Enabled: true, Secret: "whsec_AAAA"}
		noErr(t, st.CreateWebhook(ctx, &hook))
		ev := domain.Event{Type: domain.EventAccountSMS, Payload: []byte(`{}`)}
		noErr(t, st.AddEvents(ctx, acct.ID, []domain.Event{ev, ev, ev}))
		storetest.FanOut(t, st)
		ids, err := st.ClaimDeliveries(ctx, "o", 10, time.Minute, nil)
		noErr(t, err)
		if len(ids) != 3 {
			t.Fatalf("claimed %v, want 3 deliveries", ids)
		}
		retry := func(id int64, next time.Duration) store.DeliveryOutcome {
			return store.DeliveryOutcome{DeliveryID: id, WebhookID: hook.ID, State: domain.DeliveryPending, NextAt: now.Add(next),
				Attempt: &domain.WebhookAttempt{At: now, StatusCode: 503, Error: "HTTP 503"}}
		}
		hold := retry(ids[1], time.Hour)
		hold.Backoff = true
		n, err := st.FinishDeliveries(ctx, "o", []store.DeliveryOutcome{retry(ids[0], time.Minute), hold, retry(ids[2], 2*time.Minute)})
		if err != nil || n != 3 {
			t.Fatalf("recorded %d (%v), want 3", n, err)
		}
		list, err := st.WebhookDeliveries(ctx, acct.ID, hook.ID, 0, 10)
		noErr(t, err)
		want := map[int64]time.Time{ids[0]: now.Add(time.Hour), ids[1]: now.Add(time.Hour), ids[2]: now.Add(2 * time.Minute)}
		for _, d := range list {
			if d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(want[d.ID]) || d.Attempts != 1 {
				t.Errorf("delivery %d: next %v after %d attempts, want %v after 1", d.ID, d.NextAttemptAt, d.Attempts, want[d.ID])
			}
		}
	})
}
