package store_test

import (
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// streamEvents is StreamEvents waiting while events are held back: on
// PostgreSQL the horizon is the whole server's, and other tests' open
// transactions (in other schemas) hold it back for a moment.
func streamEvents(t *testing.T, st *store.Store, after store.EventPos, limit int) []store.StreamEvent {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		evs, held, err := st.StreamEvents(ctx, after, limit)
		noErr(t, err)
		if !held || len(evs) == limit {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("events still held back after 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func streamIDs(evs []store.StreamEvent) []int64 {
	var out []int64
	for _, e := range evs {
		out = append(out, e.Pos.ID)
	}
	return out
}

// The stream's reads: every account's events in order past a position, one
// account's between two positions, an event's position (another account's
// is not_found), the head, and a personal event's audience.
func TestStreamReads(t *testing.T) {
	for _, e := range storetest.Engines(t) {
		t.Run(string(e), func(t *testing.T) {
			st := storetest.Open(t, e)
			a := storetest.Account(t, st, nil).ID
			b := storetest.Account(t, st, nil).ID
			head, err := st.StreamHead(ctx)
			noErr(t, err)
			ev := func(account, audience int64) {
				noErr(t, st.AddEvents(ctx, account, []domain.Event{{Type: domain.EventAccountSMS, Payload: []byte(`{"event":"x"}`), Audience: audience}}))
			}
			ev(a, 0)
			ev(b, 0)
			ev(a, 42)
			ev(a, 0)
			all := streamEvents(t, st, head, 100)
			if len(all) != 4 {
				t.Fatalf("StreamEvents = %v, want 4 events", streamIDs(all))
			}
			for i := 1; i < len(all); i++ {
				if !all[i].Pos.After(all[i-1].Pos) {
					t.Errorf("events out of stream order: %+v then %+v", all[i-1].Pos, all[i].Pos)
				}
			}
			if all[2].AudienceUserID != 42 || all[0].AudienceUserID != 0 || string(all[2].Payload) != `{"event":"x"}` || all[1].AccountID != b {
				t.Errorf("rows = %+v", all)
			}
			newHead, err := st.StreamHead(ctx)
			noErr(t, err)
			if newHead.After(all[3].Pos) || (e == store.SQLite && newHead != all[3].Pos) {
				t.Errorf("head = %+v, want the last event's %+v", newHead, all[3].Pos)
			}
			page := streamEvents(t, st, all[0].Pos, 2)
			if got := streamIDs(page); len(got) != 2 || got[0] != all[1].Pos.ID || got[1] != all[2].Pos.ID {
				t.Errorf("page after the first = %v", got)
			}
			// One account's events in (first, third]: only a's.
			sms := []store.StreamClause{{Types: []string{domain.EventAccountSMS}}}
			mine, err := st.AccountStreamEvents(ctx, a, all[0].Pos, all[2].Pos, store.StreamSelect{Any: sms}, 100)
			noErr(t, err)
			if got := streamIDs(mine); len(got) != 1 || got[0] != all[2].Pos.ID {
				t.Errorf("a's events in (first, third] = %v, want [%d]", got, all[2].Pos.ID)
			}
			// The third is user 42's: another user's stream does not read it.
			theirs, err := st.AccountStreamEvents(ctx, a, all[0].Pos, all[2].Pos, store.StreamSelect{User: 7, Any: sms}, 100)
			noErr(t, err)
			if len(theirs) != 0 {
				t.Errorf("user 7's read of a's events in (first, third] = %v, want none (user 42's event)", streamIDs(theirs))
			}
			pos, _, err := st.EventPosition(ctx, a, all[2].Pos.ID)
			noErr(t, err)
			if pos != all[2].Pos {
				t.Errorf("EventPosition = %+v, want %+v", pos, all[2].Pos)
			}
			if _, _, err := st.EventPosition(ctx, a, all[1].Pos.ID); !domain.IsNotFound(err) {
				t.Errorf("another account's event: err %v, want not_found", err)
			}
		})
	}
}

// On PostgreSQL an event committed after a later-numbered one is not
// passed over: the read holds back everything past the oldest running
// transaction, reports that it did, and takes both in (xid, id) order once
// it ends.
func TestStreamEventsWaitForOlderTransactions(t *testing.T) {
	nodes, account, db := fanOutNodes(t, 1)
	st := nodes[0]
	head, err := st.StreamHead(ctx)
	noErr(t, err)
	older, err := db.Begin()
	noErr(t, err)
	defer older.Rollback()
	_, err = older.Exec(`INSERT INTO events (account_id, type, payload, created_at) VALUES ($1, 'AccountSMS', '{}', 0)`, account)
	noErr(t, err)
	noErr(t, st.AddEvents(ctx, account, []domain.Event{{Type: domain.EventAccountSMS, Payload: []byte(`{}`)}}))

	evs, held, err := st.StreamEvents(ctx, head, 100)
	noErr(t, err)
	if len(evs) != 0 || !held {
		t.Fatalf("with an older transaction open: %v held %v; want nothing, held", streamIDs(evs), held)
	}
	if h, err := st.StreamHead(ctx); err != nil || h != head {
		t.Errorf("head moved to %+v (%v) past a running transaction", h, err)
	}
	noErr(t, older.Commit())
	evs = streamEvents(t, st, head, 100)
	if len(evs) != 2 {
		t.Fatalf("after it committed: %v; want 2 events", streamIDs(evs))
	}
	if evs[0].Pos.ID > evs[1].Pos.ID {
		// The older transaction's event has the lower id and xid.
		t.Errorf("order %v, want the older transaction's event first", streamIDs(evs))
	}
}
