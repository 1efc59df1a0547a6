package store_test

import (
	"context"
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestEventIDsNeverReused checks that an event id (a delivery's webhook-id,
// on which receivers drop duplicates) is never handed out twice: not after
// pruning has emptied the outbox, and not after a restart on the same
// database. SQLite used to reuse them (events.id had no AUTOINCREMENT, so a
// new row took the largest id left plus one), and evt_1 went out again for a
// different event.
func TestEventIDsNeverReused(t *testing.T) {
	for _, engine := range storetest.Engines(t) {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			dsn := storetest.DSN(t, engine)
			now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
			open := func() *store.Store {
				st, err := store.Open(ctx, dsn)
				noErr(t, err)
				noErr(t, st.Migrate(ctx))
				st.SetClock(func() time.Time { return now })
				return st
			}
			st := open()
			acct := storetest.Account(t, st, nil)
			hook := domain.Webhook{AccountID: acct.ID, URL: "https://h.example.com", Type: domain.EventAccountSMS, Enabled: true, Secret: "whsec_AAAA"}
			noErr(t, st.CreateWebhook(ctx, &hook))
			sms := domain.Event{Type: domain.EventAccountSMS, Payload: []byte(`{}`)}
			noErr(t, st.AddEvents(ctx, acct.ID, []domain.Event{sms, sms, sms}))
			// A test delivery writes an event of its own, outside the fan-out.
			_, err := st.AddTestDelivery(ctx, acct.ID, hook.ID, []byte(`{}`), "test", time.Minute)
			noErr(t, err)
			storetest.FanOut(t, st)
			evs, err := st.Events(ctx, acct.ID, 0, 100)
			noErr(t, err)
			if len(evs) != 4 {
				t.Fatalf("%d events, want 4", len(evs))
			}
			maxID := evs[len(evs)-1].ID
			finishAll(t, st, acct.ID, hook.ID, "test", now)

			// Everything is past the retention: pruning empties the outbox.
			now = now.Add(31 * 24 * time.Hour)
			for {
				d, e, err := st.PruneWebhookHistory(ctx, 30*24*time.Hour, 1000)
				noErr(t, err)
				if d == 0 && e == 0 {
					break
				}
			}
			if n := st.CountRows(ctx, "events"); n != 0 {
				t.Fatalf("%d events left after pruning, want 0", n)
			}
			if n := st.CountRows(ctx, "webhook_deliveries"); n != 0 {
				t.Fatalf("%d deliveries left after pruning, want 0", n)
			}
			// An event now, before the restart, and one after it.
			noErr(t, st.AddEvents(ctx, acct.ID, []domain.Event{sms}))
			noErr(t, st.Close())
			st = open()
			defer st.Close()
			noErr(t, st.AddEvents(ctx, acct.ID, []domain.Event{sms}))
			evs, err = st.Events(ctx, acct.ID, 0, 100)
			noErr(t, err)
			if len(evs) != 2 || evs[0].ID <= maxID || evs[1].ID <= evs[0].ID {
				t.Fatalf("events after pruning and restart: %+v; want two with ids above %d, increasing", evs, maxID)
			}
		})
	}
}

// finishAll claims every due delivery of hook as owner and records each
// succeeded, with the deliveries already leased to owner (a test delivery's).
func finishAll(t *testing.T, st *store.Store, acct, hook int64, owner string, at time.Time) {
	t.Helper()
	_, err := st.Claim(context.Background(), store.ClaimWebhookDeliveries, owner, 1000, time.Minute)
	noErr(t, err)
	list, err := st.WebhookDeliveries(ctx, acct, hook, 0, 1000)
	noErr(t, err)
	var outs []store.DeliveryOutcome
	for _, d := range list {
		outs = append(outs, store.DeliveryOutcome{DeliveryID: d.ID, WebhookID: hook, State: domain.DeliverySucceeded,
			Attempt: &domain.WebhookAttempt{At: at, StatusCode: 200}})
	}
	n, err := st.FinishDeliveries(ctx, owner, outs)
	noErr(t, err)
	if n != len(list) {
		t.Fatalf("finished %d of %d deliveries", n, len(list))
	}
}

// TestEventIDMigrationKeepsHistory writes webhook history in the schema
// before migration 0025 (which rebuilds the three tables on SQLite, inside
// the migration's transaction with foreign keys on), migrates, and checks
// that every row, id and reference survived, that the foreign keys still
// cascade, and that new ids continue above the old ones even once the
// outbox is emptied.
func TestEventIDMigrationKeepsHistory(t *testing.T) {
	for _, engine := range storetest.Engines(t) {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			st, err := store.Open(ctx, storetest.DSN(t, engine))
			noErr(t, err)
			defer st.Close()
			noErr(t, st.MigrateBefore(ctx, "0025"))
			for _, q := range []string{
				`INSERT INTO accounts (name, created_at) VALUES ('A', 0)`,
				`INSERT INTO webhooks (account_id, url, type, enabled, secret, created_at, updated_at) VALUES (1, 'https://h.example.com', 'AccountSMS', TRUE, 'whsec_AAAA', 0, 0)`,
				`INSERT INTO events (account_id, type, payload, created_at) VALUES (1, 'AccountSMS', '{"n":1}', 1)`,
				`INSERT INTO events (account_id, type, payload, created_at) VALUES (1, 'AccountSMS', '{"n":2}', 2)`,
				`INSERT INTO events (account_id, type, payload, created_at) VALUES (1, 'AccountSMS', '{"n":3}', 3)`,
				`INSERT INTO webhook_deliveries (account_id, webhook_id, event_id, state, attempts, created_at, updated_at) VALUES (1, 1, 2, 'succeeded', 2, 10, 20)`,
				`INSERT INTO webhook_deliveries (account_id, webhook_id, event_id, state, created_at, updated_at, due_at) VALUES (1, 1, 3, 'pending', 10, 10, 99)`,
				`INSERT INTO webhook_attempts (delivery_id, webhook_id, attempted_at, status_code, latency_us, error, response) VALUES (1, 1, 11, 500, 7, 'HTTP 500', 'oops')`,
				`INSERT INTO webhook_attempts (delivery_id, webhook_id, attempted_at, status_code, latency_us, response) VALUES (1, 1, 12, 200, 8, 'ok')`,
			} {
				if err := st.ExecRaw(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			noErr(t, st.Migrate(ctx))

			for table, want := range map[string]int{"events": 3, "webhook_deliveries": 2, "webhook_attempts": 2} {
				if n := st.CountRows(ctx, table); n != want {
					t.Errorf("%s: %d rows after the migration, want %d", table, n, want)
				}
			}
			list, err := st.WebhookDeliveries(ctx, 1, 1, 0, 10)
			noErr(t, err)
			if len(list) != 2 || list[1].ID != 1 || list[1].EventID != 2 || list[1].Attempts != 2 || list[1].Last == nil || list[1].Last.StatusCode != 200 ||
				list[0].ID != 2 || list[0].EventID != 3 || list[0].NextAttemptAt == nil {
				t.Fatalf("deliveries after the migration: %+v", list)
			}
			// The outbox's new ids continue above the old, emptied or not.
			noErr(t, st.AddEvents(ctx, 1, []domain.Event{{Type: domain.EventAccountSMS, Payload: []byte(`{}`)}}))
			if n, err := st.QueryInt(ctx, `SELECT MAX(id) FROM events`); err != nil || n != 4 {
				t.Errorf("new event id %d (%v), want 4", n, err)
			}
			noErr(t, st.ExecRaw(ctx, `DELETE FROM events`))
			// The deliveries referencing events, and their attempts, cascaded.
			if d, a := st.CountRows(ctx, "webhook_deliveries"), st.CountRows(ctx, "webhook_attempts"); d != 0 || a != 0 {
				t.Errorf("after deleting the events: %d deliveries, %d attempts left, want none", d, a)
			}
			noErr(t, st.AddEvents(ctx, 1, []domain.Event{{Type: domain.EventAccountSMS, Payload: []byte(`{}`)}}))
			if n, err := st.QueryInt(ctx, `SELECT MAX(id) FROM events`); err != nil || n != 5 {
				t.Errorf("event id after emptying the outbox %d (%v), want 5", n, err)
			}
			if engine == store.SQLite {
				n, err := st.QueryInt(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name IN ('events_account', 'events_unfanned', 'events_created',
					'webhook_deliveries_due', 'webhook_deliveries_webhook', 'webhook_deliveries_pending', 'webhook_deliveries_done', 'webhook_deliveries_event', 'webhook_attempts_delivery')`)
				if err != nil || n != 9 {
					t.Errorf("%d of the 9 indexes after the migration (%v)", n, err)
				}
				if n, err := st.QueryInt(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name LIKE '%_old'`); err != nil || n != 0 {
					t.Errorf("%d tables or indexes named *_old left (%v)", n, err)
				}
			}
		})
	}
}
