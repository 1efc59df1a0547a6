package store_test

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestConcurrentWritesShareCommits checks, on each engine, that writes made
// while every committer is busy wait and then share a few commits instead of
// committing one by one, and that a write that fails in a group (with its
// own error, or with a statement the database refuses, run at once or
// queued with execLater) is rolled back alone: its caller gets the error and
// the others are committed.
func TestConcurrentWritesShareCommits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		insert := func(tx *store.Tx, name string) error {
			return tx.Exec(`INSERT INTO accounts (name, created_at) VALUES (?, 0)`, name)
		}
		// Hold every committer in a write of its own until the others are queued.
		held := s.Committers()
		running, release := make(chan struct{}, held), make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, held)
		for i := range held {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.Write(ctx, func(tx *store.Tx) error {
					running <- struct{}{}
					<-release
					return insert(tx, fmt.Sprint("held", i))
				})
			}()
		}
		for range held {
			<-running
		}
		before := s.CommitStats()

		const n = 100
		boom := errors.New("boom")
		accepted := errors.New("a duplicate id was accepted")
		want := func(i int) error { // what the caller of write i must get
			if i%10 == 3 {
				return boom
			}
			return nil
		}
		results := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = s.Write(ctx, func(tx *store.Tx) error {
					if err := insert(tx, fmt.Sprint("w", i)); err != nil {
						return err
					}
					switch i % 10 {
					case 5: // queued, refused when the function has returned
						return tx.ExecLater(`INSERT INTO accounts (id, name, created_at) SELECT id, 'dup', 0 FROM accounts LIMIT 1`)
					case 3:
						return boom
					case 7: // refused by the database: the id exists
						if err := tx.Exec(`INSERT INTO accounts (id, name, created_at) SELECT id, 'dup', 0 FROM accounts LIMIT 1`); err != nil {
							return err
						}
						return accepted
					}
					return nil
				})
			}()
		}
		for s.Queued() < n {
			runtime.Gosched()
		}
		close(release)
		wg.Wait()

		for i, err := range errs {
			if err != nil {
				t.Errorf("held write %d: %v", i, err)
			}
		}
		var wantNames []string
		for i, err := range results {
			switch {
			case i%10 == 7 || i%10 == 5:
				if err == nil || errors.Is(err, accepted) {
					t.Errorf("write %d: %v, want the database's refusal", i, err)
				}
			case !errors.Is(err, want(i)):
				t.Errorf("write %d: %v, want %v", i, err, want(i))
			}
			if i%10 != 3 && i%10 != 7 && i%10 != 5 {
				wantNames = append(wantNames, fmt.Sprint("w", i))
			}
		}
		for i := range held {
			wantNames = append(wantNames, fmt.Sprint("held", i))
		}
		all, err := s.Accounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, a := range all {
			names = append(names, a.Name)
		}
		slices.Sort(names)
		slices.Sort(wantNames)
		if !slices.Equal(names, wantNames) {
			t.Errorf("stored %v,\nwant %v", names, wantNames)
		}

		// The held writes commit in their own groups (at most one each); the
		// queued ones, taken by whichever committers free up first, in at
		// most one group per committer.
		after := s.CommitStats()
		if got := after.Batches - before.Batches; got > int64(2*held) {
			t.Errorf("%d commits for %d writes on %d committers, want at most %d", got, n+held, held, 2*held)
		}
		if got := after.Writes - before.Writes; got != int64(n+held-3*n/10) {
			t.Errorf("%d writes committed, want %d", got, n+held-3*n/10)
		}
	})
}
