package store_test

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestClaimOrderLeaseAndRelease walks one table through the claim contract:
// only due, unleased rows are claimed, oldest due first and up to the limit;
// a valid lease keeps a row from every other claim; an ended lease makes it
// claimable again; Release acts only for the owner and sets the next due time.
func TestClaimOrderLeaseAndRelease(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		if err := s.CreateClaimTestJobs(ctx); err != nil {
			t.Fatal(err)
		}
		base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		var offset atomic.Int64 // advanced by the test; read by the store's writer
		s.SetClock(func() time.Time { return base.Add(time.Duration(offset.Load())) })
		at := func(d time.Duration) *time.Time { t := base.Add(d); return &t }
		for _, j := range []struct {
			id  int64
			due *time.Time
		}{
			{1, at(-time.Second)},
			{2, at(-3 * time.Second)},
			{3, at(time.Hour)}, // not yet due
			{4, nil},           // nothing to do
			{5, at(-3 * time.Second)},
			{6, at(0)}, // due exactly now
		} {
			if err := s.AddClaimTestJob(ctx, j.id, j.due); err != nil {
				t.Fatal(err)
			}
		}
		claim := func(owner string, limit int, want ...int64) {
			t.Helper()
			got, err := s.Claim(ctx, store.ClaimTestJobs, owner, limit, time.Minute)
			if err != nil {
				t.Fatalf("claim by %s: %v", owner, err)
			}
			if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Fatalf("claim by %s (limit %d) = %v, want %v", owner, limit, got, want)
			}
		}
		claim("a", 2, 2, 5)
		claim("b", 10, 1, 6)
		claim("c", 10) // everything due is leased
		owner, until, _, err := s.ClaimTestJobLease(ctx, 2)
		if err != nil || owner.String != "a" || until.Int64 != base.Add(time.Minute).UnixMicro() {
			t.Fatalf("job 2 lease = %v until %v (%v), want a until %v", owner, until, err, base.Add(time.Minute))
		}

		// Another owner cannot release a row; the owner can, for later or for good.
		if err := s.Release(ctx, store.ClaimTestJobs, "b", 2, nil); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("release of a's row by b: err = %v, want ErrLeaseLost", err)
		}
		if err := s.Release(ctx, store.ClaimTestJobs, "a", 2, at(30*time.Second)); err != nil {
			t.Fatalf("release 2 for later: %v", err)
		}
		if err := s.Release(ctx, store.ClaimTestJobs, "a", 5, nil); err != nil {
			t.Fatalf("release 5 for good: %v", err)
		}
		if owner, until, due, _ := s.ClaimTestJobLease(ctx, 5); owner.Valid || until.Valid || due.Valid {
			t.Fatalf("released job 5 = owner %v until %v due %v, want all NULL", owner, until, due)
		}
		if err := s.Release(ctx, store.ClaimTestJobs, "a", 5, nil); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("second release: err = %v, want ErrLeaseLost", err)
		}
		claim("c", 10) // 2 is due in 30 s, 1 and 6 still leased to b

		offset.Store(int64(30 * time.Second))
		claim("c", 10, 2)
		// b's lease ends at +1m: its rows come back, with c's still held.
		offset.Store(int64(time.Minute))
		claim("d", 10, 1, 6)
		if err := s.Release(ctx, store.ClaimTestJobs, "b", 1, nil); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("release after the lease was taken over: err = %v, want ErrLeaseLost", err)
		}
		offset.Store(int64(time.Hour))
		claim("e", 10, 1, 6, 2, 3)

		if _, err := s.Claim(ctx, store.ClaimTable("users"), "x", 1, time.Minute); err == nil {
			t.Fatal("claim on an unregistered table succeeded")
		}
		if err := s.Release(ctx, store.ClaimTable("users"), "x", 1, nil); err == nil || errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("release on an unregistered table: err = %v, want a registration error", err)
		}
		for _, bad := range []struct {
			owner string
			limit int
			lease time.Duration
		}{{"", 1, time.Minute}, {"x", 0, time.Minute}, {"x", 1, 0}} {
			if _, err := s.Claim(ctx, store.ClaimTestJobs, bad.owner, bad.limit, bad.lease); err == nil {
				t.Fatalf("claim(%q, %d, %v) succeeded", bad.owner, bad.limit, bad.lease)
			}
		}
	})
}

// TestClaimConcurrentNodes runs claimers concurrently on two stores opened on
// the same database (two nodes: on SQLite two writers sharing one file), each
// with several goroutines, and checks that every due row is claimed exactly
// once while the leases hold.
func TestClaimConcurrentNodes(t *testing.T) {
	for _, e := range storetest.Engines(t) {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			dsn := storetest.DSN(t, e)
			var nodes []*store.Store
			for range 2 {
				s, err := store.Open(ctx, dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				nodes = append(nodes, s)
			}
			if err := nodes[0].Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if err := nodes[0].CreateClaimTestJobs(ctx); err != nil {
				t.Fatal(err)
			}
			const jobs = 300
			due := time.Now().Add(-time.Minute)
			for id := range int64(jobs) {
				if err := nodes[0].AddClaimTestJob(ctx, id+1, &due); err != nil {
					t.Fatal(err)
				}
			}
			var (
				mu    sync.Mutex
				owner = map[int64]string{}
				dups  []int64
				wg    sync.WaitGroup
				errs  = make(chan error, 8)
			)
			for _, s := range nodes {
				for range 4 {
					me := store.NewLeaseOwner("test")
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							ids, err := s.Claim(ctx, store.ClaimTestJobs, me, 7, time.Hour)
							if err != nil {
								errs <- err
								return
							}
							if len(ids) == 0 {
								return
							}
							mu.Lock()
							for _, id := range ids {
								if _, taken := owner[id]; taken {
									dups = append(dups, id)
								}
								owner[id] = me
							}
							mu.Unlock()
						}
					}()
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("claim: %v", err)
			}
			if len(dups) > 0 {
				t.Fatalf("rows claimed twice while leased: %v", dups)
			}
			if len(owner) != jobs {
				t.Fatalf("claimed %d distinct rows, want %d", len(owner), jobs)
			}
			claimers := map[string]bool{}
			for _, o := range owner {
				claimers[o] = true
			}
			t.Logf("%d rows claimed by %d claimers", jobs, len(claimers))
			// Each row is recorded as leased to the claimer that got it.
			for _, id := range []int64{1, jobs / 2, jobs} {
				got, _, _, err := nodes[1].ClaimTestJobLease(ctx, id)
				if err != nil || got.String != owner[id] {
					t.Fatalf("job %d lease owner = %q (%v), want %q", id, got.String, err, owner[id])
				}
			}
		})
	}
}
