package store_test

import (
	"testing"
	"time"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestPruneIdempotency checks that pruning deletes the records older than
// the TTL, finished or not, and keeps the younger ones.
func TestPruneIdempotency(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		a := storetest.Account(t, s, nil)
		now := time.Now()
		at := now
		s.SetClock(func() time.Time { return at })
		for _, k := range []struct {
			key    string
			age    time.Duration
			finish bool
		}{
			{"old-done", store.IdempotencyTTL + time.Minute, true},
			{"old-running", store.IdempotencyTTL + time.Minute, false},
			{"young", store.IdempotencyTTL - time.Minute, true},
		} {
			at = now.Add(-k.age)
			_, claim, err := s.BeginIdempotent(ctx, a.ID, k.key, []byte(k.key))
			if err != nil || claim == nil {
				t.Fatalf("begin %s: %v", k.key, err)
			}
			if k.finish {
				if err := s.FinishIdempotent(ctx, claim, []byte(`{}`)); err != nil {
					t.Fatalf("finish %s: %v", k.key, err)
				}
			}
		}
		at = now
		if err := s.PruneIdempotency(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := s.IdempotencyKeys(ctx); err != nil || n != 1 {
			t.Fatalf("records after pruning = %d (%v), want 1 (the young one)", n, err)
		}
	})
}
