package store_test

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestConcurrentWritesShareCommits checks, on each engine, that writes made
// while every committer is busy wait and then share a few commits instead of
// committing one by one, and that a write that fails in a group (with its
// own error, or with a statement the database refuses, run at once or
// queued with ExecLater) is rolled back alone: its caller gets the error and
// the others are committed.
func TestConcurrentWritesShareCommits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		insert := func(tx *store.Tx, name string) error {
			_, err := tx.Exec(ctx, `INSERT INTO accounts (name, created_at) VALUES (?, 0)`, name)
			return err
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
						return tx.ExecLater(ctx, `INSERT INTO accounts (id, name, created_at) SELECT id, 'dup', 0 FROM accounts LIMIT 1`)
					case 3:
						return boom
					case 7: // refused by the database: the id exists
						if _, err := tx.Exec(ctx, `INSERT INTO accounts (id, name, created_at) SELECT id, 'dup', 0 FROM accounts LIMIT 1`); err != nil {
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

// TestDeadlockedWriteRunsAgain checks, on PostgreSQL, that a write that
// PostgreSQL picks as a deadlock's victim (two groups locking two rows in
// opposite orders) is run again once the other group has committed, and that
// both callers get success.
func TestDeadlockedWriteRunsAgain(t *testing.T) {
	if storetest.PostgresURL(t) == "" {
		t.Skip("PostgreSQL only: SQLite has a single writer")
	}
	s := storetest.Open(t, store.Postgres)
	a, b := mustAccount(t, s, "a"), mustAccount(t, s, "b")
	// Each write locks its first row, waits until the other has locked its
	// own, then locks the other's. The signals are closed once, so a write
	// run again goes straight through.
	lockedA, lockedB := make(chan struct{}), make(chan struct{})
	var onceA, onceB sync.Once
	write := func(first, second int64, mine *sync.Once, signal, other chan struct{}) error {
		return s.Write(ctx, func(tx *store.Tx) error {
			if _, err := tx.Exec(ctx, `UPDATE accounts SET name = name || '+' WHERE id = ?`, first); err != nil {
				return err
			}
			mine.Do(func() { close(signal) })
			<-other
			_, err := tx.Exec(ctx, `UPDATE accounts SET name = name || '+' WHERE id = ?`, second)
			return err
		})
	}
	errs := make(chan error, 2)
	go func() { errs <- write(a.ID, b.ID, &onceA, lockedA, lockedB) }()
	go func() { errs <- write(b.ID, a.ID, &onceB, lockedB, lockedA) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("write: %v, want both to succeed", err)
		}
	}
	// Each write committed once: both rows carry both writes' marks.
	for _, id := range []int64{a.ID, b.ID} {
		acc, err := s.Account(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(acc.Name, "++") || strings.HasSuffix(acc.Name, "+++") {
			t.Errorf("account %d is %q, want its name and one mark per write", id, acc.Name)
		}
	}
}
