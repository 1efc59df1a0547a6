package sqldb

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// holdCommitters occupies every committer of db with a write of its own
// until release is called, so that the writes queued meanwhile form groups.
func holdCommitters(t *testing.T, db *DB) (release func()) {
	t.Helper()
	ctx := context.Background()
	running, done := make(chan struct{}, db.Committers()), make(chan struct{})
	var wg sync.WaitGroup
	for range db.Committers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := db.Write(ctx, KeepCache, func(*Tx) error {
				running <- struct{}{}
				<-done
				return nil
			})
			if err != nil {
				t.Errorf("held write: %v", err)
			}
		}()
	}
	for range db.Committers() {
		<-running
	}
	return func() { close(done); wg.Wait() }
}

// mergeLog records what a GroupMerge saw, by group (the Tx).
type mergeLog struct {
	mu       sync.Mutex
	deferred map[*Tx]map[int64][]int64 // group → key → values deferred
	flushed  map[*Tx][][2]int64        // group → (key, value) flushed, in order
}

// TestGroupMerge checks that the Contended writes of a group (on either
// engine) defer their work to the group's end, where it is done once per
// key, with the merged value, in key order; that other writes are told to
// do the work themselves; and that the work is done either way.
func TestGroupMerge(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		log := &mergeLog{deferred: map[*Tx]map[int64][]int64{}, flushed: map[*Tx][][2]int64{}}
		raise := `UPDATE items SET created_at = ? WHERE id = ? AND created_at < ?`
		m := &GroupMerge[int64, int64]{
			Merge: func(old, v int64) int64 { return max(old, v) },
			Flush: func(tx *Tx, key, v int64) error {
				log.mu.Lock()
				log.flushed[tx] = append(log.flushed[tx], [2]int64{key, v})
				log.mu.Unlock()
				return tx.ExecLater(ctx, raise, v, key, v)
			},
		}
		for _, name := range []string{"a", "b", "c"} {
			if _, err := db.Writer().ExecContext(ctx, db.Rebind(`INSERT INTO items (name) VALUES (?)`), name); err != nil {
				t.Fatal(err)
			}
		}
		release := holdCommitters(t, db)
		const n = 40
		var wg sync.WaitGroup
		deferredBy := make([]bool, n)
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key, v := int64(1+i%3), int64(100+i)
				opt := KeepCache | Contended
				if key == 3 {
					opt = KeepCache // not contended: never deferred
				}
				errs[i] = db.Write(ctx, opt, func(tx *Tx) error {
					deferredBy[i] = m.Defer(tx, key, v)
					if deferredBy[i] {
						log.mu.Lock()
						if log.deferred[tx] == nil {
							log.deferred[tx] = map[int64][]int64{}
						}
						log.deferred[tx][key] = append(log.deferred[tx][key], v)
						log.mu.Unlock()
						return nil
					}
					return tx.ExecLater(ctx, raise, v, key, v)
				})
			}()
		}
		for db.Queued() < n {
			runtime.Gosched()
		}
		release()
		wg.Wait()

		for i, err := range errs {
			if err != nil {
				t.Errorf("write %d: %v", i, err)
			}
			want := i%3 != 2
			if deferredBy[i] != want {
				t.Errorf("write %d (key %d) on %s: deferred %t, want %t", i, 1+i%3, db.Engine(), deferredBy[i], want)
			}
		}
		if len(log.flushed) == 0 {
			t.Fatal("nothing was flushed at a group's end")
		}
		for tx, flushed := range log.flushed {
			var want [][2]int64
			for _, key := range slices.Sorted(maps.Keys(log.deferred[tx])) {
				want = append(want, [2]int64{key, slices.Max(log.deferred[tx][key])})
			}
			if !slices.Equal(flushed, want) {
				t.Errorf("a group flushed %v, want %v (one per key, merged, in key order)", flushed, want)
			}
		}
		var got []int64
		err := db.Write(ctx, KeepCache, func(tx *Tx) error {
			return tx.Query(ctx, `SELECT created_at FROM items ORDER BY id`, nil, func(r Row) error {
				var v int64
				err := r.Scan(&v)
				got = append(got, v)
				return err
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		// The newest of each key (1+i%3, value 100+i, i < 40): i = 39, 37, 38.
		if want := []int64{139, 137, 138}; !slices.Equal(got, want) {
			t.Errorf("rows hold %v, want %v", got, want)
		}
	})
}

// TestRefusedMergeFailsItsWriteAlone checks that when the server refuses
// work flushed at a group's end, the group runs again with each write in
// its savepoint and nothing deferred: the writes whose own work is refused
// fail, and the others commit.
func TestRefusedMergeFailsItsWriteAlone(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		// Key 2's work sets a NOT NULL column to NULL: always refused.
		work := func(tx *Tx, key, v int64) error {
			if key == 2 {
				return tx.ExecLater(ctx, `UPDATE items SET name = NULL WHERE id = ?`, key)
			}
			return tx.ExecLater(ctx, `UPDATE items SET created_at = ? WHERE id = ? AND created_at < ?`, v, key, v)
		}
		m := &GroupMerge[int64, int64]{Merge: func(old, v int64) int64 { return max(old, v) }, Flush: work}
		for _, name := range []string{"a", "b"} {
			if _, err := db.Writer().ExecContext(ctx, db.Rebind(`INSERT INTO items (name) VALUES (?)`), name); err != nil {
				t.Fatal(err)
			}
		}
		release := holdCommitters(t, db)
		const n = 20
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key, v := int64(1+i%2), int64(100+i)
				errs[i] = db.Write(ctx, KeepCache|Contended, func(tx *Tx) error {
					if _, err := tx.Exec(ctx, `INSERT INTO items (name) VALUES (?)`, fmt.Sprint("w", i)); err != nil {
						return err
					}
					if m.Defer(tx, key, v) {
						return nil
					}
					return work(tx, key, v)
				})
			}()
		}
		for db.Queued() < n {
			runtime.Gosched()
		}
		release()
		wg.Wait()
		want := []string{"a", "b"}
		for i, err := range errs {
			if i%2 == 1 {
				if err == nil {
					t.Errorf("write %d (refused work): succeeded", i)
				}
				continue
			}
			if err != nil {
				t.Errorf("write %d: %v", i, err)
			}
			want = append(want, fmt.Sprint("w", i))
		}
		got := names(t, db)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("stored %v, want %v", got, want)
		}
		var v int64
		if err := db.Readers().QueryRowContext(ctx, `SELECT created_at FROM items WHERE id = 1`).Scan(&v); err != nil || v != 118 {
			t.Errorf("key 1's row: %d, %v; want 118", v, err)
		}
	})
}

// TestQueuedStatementFailsItsWriteAlone checks that a statement queued with
// ExecLater, which on PostgreSQL is sent with the group's next statement
// (of another write, often), fails only the write that queued it, with its
// own error; and that the write whose statement carried it is not misled:
// it handles a unique violation of its own insert, and must never see the
// queued statement's as one.
func TestQueuedStatementFailsItsWriteAlone(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		if _, err := db.Writer().ExecContext(ctx, db.Rebind(`INSERT INTO items (id, name) VALUES (?, ?)`), 1, "a"); err != nil {
			t.Fatal(err)
		}
		release := holdCommitters(t, db)
		const n = 20
		var wg sync.WaitGroup
		errs, handled := make([]error, n), make([]bool, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				later := int64(2000 + i)
				if i%2 == 1 {
					later = 1 // taken: refused
				}
				errs[i] = db.Write(ctx, KeepCache, func(tx *Tx) error {
					_, err := tx.Exec(ctx, `INSERT INTO items (id, name) VALUES (?, ?)`, 1000+i, fmt.Sprint("w", i))
					if IsUniqueViolation(err) {
						handled[i] = true
						return nil
					}
					if err != nil {
						return err
					}
					return tx.ExecLater(ctx, `INSERT INTO items (id, name) VALUES (?, ?)`, later, fmt.Sprint("later", i))
				})
			}()
		}
		for db.Queued() < n {
			runtime.Gosched()
		}
		release()
		wg.Wait()
		want := []string{"a"}
		for i, err := range errs {
			if handled[i] {
				t.Errorf("write %d took another write's refused statement for its own", i)
			}
			if i%2 == 1 {
				if !IsUniqueViolation(err) {
					t.Errorf("write %d (refused queued insert): %v, want its unique violation", i, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("write %d: %v", i, err)
			}
			want = append(want, fmt.Sprint("w", i), fmt.Sprint("later", i))
		}
		got := names(t, db)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("stored %v, want %v", got, want)
		}
	})
}
