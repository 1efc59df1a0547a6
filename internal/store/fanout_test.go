package store_test

import (
	"database/sql"
	"sync"
	"testing"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// fanOutNodes opens n stores on one fresh PostgreSQL database (n nodes), an
// account with one AccountSMS subscription, and a plain connection pool for
// statements outside the store.
func fanOutNodes(t *testing.T, n int) (nodes []*store.Store, account int64, db *sql.DB) {
	t.Helper()
	if storetest.PostgresURL(t) == "" {
		t.Skip("PostgreSQL only")
	}
	dsn := storetest.DSN(t, store.Postgres)
	for range n {
		s, err := store.Open(ctx, dsn)
		noErr(t, err)
		t.Cleanup(func() { s.Close() })
		nodes = append(nodes, s)
	}
	noErr(t, nodes[0].Migrate(ctx))
	account = storetest.Account(t, nodes[0], nil).ID
	hook := domain.Webhook{AccountID: account, URL: "https://h.example.com", Type: domain.EventAccountSMS, Enabled: true, Secret: "whsec_AAAA"}
	noErr(t, nodes[0].CreateWebhook(ctx, &hook))
	db, err := sql.Open("pgx", dsn)
	noErr(t, err)
	t.Cleanup(func() { db.Close() })
	return nodes, account, db
}

// deliveriesPerEvent checks that every event of the account has exactly one
// delivery (the one subscription's) and returns how many events there are.
func deliveriesPerEvent(t *testing.T, db *sql.DB, account int64) int {
	t.Helper()
	var events, missed, doubled int
	noErr(t, db.QueryRow(`SELECT COUNT(*),
		COUNT(*) FILTER (WHERE n = 0), COUNT(*) FILTER (WHERE n > 1)
		FROM (SELECT e.id, (SELECT COUNT(*) FROM webhook_deliveries d WHERE d.event_id = e.id) AS n
			FROM events e WHERE e.account_id = $1) x`, account).Scan(&events, &missed, &doubled))
	if missed != 0 || doubled != 0 {
		t.Errorf("%d events: %d never fanned out, %d fanned out more than once", events, missed, doubled)
	}
	return events
}

// An event whose transaction took its id before a later one committed must
// not be skipped when the fan-out moves past the later one: ids and xids are
// handed out in one order and committed in another (migration 0022).
func TestFanOutWaitsForOlderTransactions(t *testing.T) {
	nodes, account, db := fanOutNodes(t, 1)
	st := nodes[0]
	older, err := db.Begin()
	noErr(t, err)
	defer older.Rollback()
	_, err = older.Exec(`INSERT INTO events (account_id, type, payload, created_at) VALUES ($1, 'AccountSMS', '{}', 0)`, account)
	noErr(t, err)
	// Committed after the older transaction wrote its event, before it ends.
	noErr(t, st.AddEvents(ctx, account, []domain.Event{{Type: domain.EventAccountSMS, Payload: []byte(`{}`)}}))

	if events, _, err := st.FanOutEvents(ctx, 100); err != nil || events != 0 {
		t.Fatalf("fan-out with an older transaction open took %d events (%v), want 0: the cursor would pass the older one's", events, err)
	}
	if left, err := st.HasUnfannedEvents(ctx); err != nil || !left {
		t.Fatalf("HasUnfannedEvents = %v, %v while an event waits; want true", left, err)
	}
	noErr(t, older.Commit())
	storetest.FanOut(t, st)
	if n := deliveriesPerEvent(t, db, account); n != 2 {
		t.Errorf("%d events, want 2", n)
	}
	if events, _, err := st.FanOutEvents(ctx, 100); err != nil || events != 0 {
		t.Errorf("fan-out again took %d events (%v), want 0", events, err)
	}
}

// Three nodes fan out while events are written through all of them: every
// event is fanned out exactly once.
func TestFanOutSeveralNodes(t *testing.T) {
	nodes, account, db := fanOutNodes(t, 3)
	const writers, perWriter = 6, 40
	var wg sync.WaitGroup
	done := make(chan struct{})
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perWriter {
				if err := nodes[i%len(nodes)].AddEvents(ctx, account, []domain.Event{{Type: domain.EventAccountSMS, Payload: []byte(`{}`)}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var fanners sync.WaitGroup
	for _, s := range nodes {
		fanners.Add(1)
		go func() {
			defer fanners.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if _, _, err := s.FanOutEvents(ctx, 7); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	fanners.Wait()
	storetest.FanOut(t, nodes[1])
	if n := deliveriesPerEvent(t, db, account); n != writers*perWriter {
		t.Errorf("%d events, want %d", n, writers*perWriter)
	}
}
