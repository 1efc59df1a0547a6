package sqldb

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestGroupTakesWritesArrivingWhileItRuns checks that a write queued while a
// group is running joins that group's commit, and that when the joined write
// fails, the retry in savepoints keeps the others and fails only that one.
func TestGroupTakesWritesArrivingWhileItRuns(t *testing.T) {
	ctx := context.Background()
	s := openSQLite(t)
	defer s.Close()
	insert := func(name string) func(*Tx) error {
		return func(tx *Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO items (name, created_at) VALUES (?, ?)`, name, tx.Now())
			return err
		}
	}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name       string
		second     func(*Tx) error
		wantSecond error
		wantNames  []string
	}{
		{"joins", insert("second"), nil, []string{"first", "second"}},
		{"joined write fails alone", func(tx *Tx) error {
			if err := insert("never")(tx); err != nil {
				return err
			}
			return boom
		}, boom, []string{"first"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.w.ExecContext(ctx, `DELETE FROM items`); err != nil {
				t.Fatal(err)
			}
			before := s.CommitStats()
			second := make(chan error, 1)
			err := s.Write(ctx, KeepCache, func(tx *Tx) error {
				go func() { second <- s.Write(ctx, KeepCache, tc.second) }()
				// Hold the group open until the second write is queued.
				for len(s.batch) == 0 {
					runtime.Gosched()
				}
				return insert("first")(tx)
			})
			if err != nil {
				t.Fatalf("first write: %v", err)
			}
			if err := <-second; !errors.Is(err, tc.wantSecond) {
				t.Fatalf("second write: %v, want %v", err, tc.wantSecond)
			}
			after := s.CommitStats()
			if n := after.Batches - before.Batches; n != 1 {
				t.Errorf("%d commits, want the second write in the first one's", n)
			}
			names := names(t, s)
			if !slices.Equal(names, tc.wantNames) {
				t.Errorf("stored %v, want %v", names, tc.wantNames)
			}
		})
	}
}

// TestJoinedWriteReadsTheClockWhenItRuns checks that a write joining a
// running group is stamped when it runs, not when the group began: with a
// clock moved on in between (a test clock advanced, a day's cutoff), its
// Now is the later time.
func TestJoinedWriteReadsTheClockWhenItRuns(t *testing.T) {
	ctx := context.Background()
	s := openSQLite(t)
	defer s.Close()
	var offset atomic.Int64
	s.SetClock(func() time.Time { return time.Now().Add(time.Duration(offset.Load())) })
	var first, second int64
	done := make(chan error, 1)
	err := s.Write(ctx, KeepCache, func(tx *Tx) error {
		first = tx.Now()
		offset.Store(int64(24 * time.Hour))
		go func() { done <- s.Write(ctx, KeepCache, func(tx *Tx) error { second = tx.Now(); return nil }) }()
		for len(s.batch) == 0 {
			runtime.Gosched()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := time.Duration(second-first) * time.Microsecond; got < 24*time.Hour {
		t.Errorf("the joined write's Now is %v after the first's, want the clock's day later", got)
	}
}

// TestWriteAfterCloseFails checks that a write made after Close, or left in
// the queue when the committer stops, fails with ErrClosed instead of
// waiting forever.
func TestWriteAfterCloseFails(t *testing.T) {
	ctx := context.Background()
	s := openSQLite(t)
	// Queued behind a write that holds the committer until Close has begun.
	running, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.Write(ctx, KeepCache, func(*Tx) error {
			close(running)
			<-release
			return nil
		})
	}()
	<-running
	queued := make(chan error, 1)
	go func() { queued <- s.Write(ctx, KeepCache, func(*Tx) error { return nil }) }()
	for len(s.batch) == 0 {
		runtime.Gosched()
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	for {
		s.closeMu.RLock()
		done := s.closed
		s.closeMu.RUnlock()
		if done {
			break
		}
		runtime.Gosched()
	}
	close(release)
	if err := <-first; err != nil {
		t.Errorf("the running write: %v", err)
	}
	if err := <-queued; err != nil && !errors.Is(err, ErrClosed) {
		t.Errorf("the queued write: %v, want success or ErrClosed", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("close: %v", err)
	}
	if err := s.Write(ctx, KeepCache, func(*Tx) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("write after close: %v, want ErrClosed", err)
	}
}
