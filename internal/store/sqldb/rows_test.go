package sqldb

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
)

var itemRows = GroupInsert{Into: `INSERT INTO items (name, created_at) VALUES `, Row: `(?, ?)`, Cols: 2}

// TestGroupInsert checks that rows handed to a group (GroupInsert) are all
// inserted, each write's in the order it gave them and next to each other
// (its rows are not interleaved with another write's), across the chunk
// sizes; and that when a write of the group fails, the group run again
// with savepoints keeps every other write's rows and none of the failed
// one's.
func TestGroupInsert(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		release := holdCommitters(t, db)
		const n = 87 // 174 rows: chunks of 64, 16, 4 and 1
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = db.Write(ctx, KeepCache, func(tx *Tx) error {
					for _, part := range []string{"a", "b"} {
						if err := itemRows.Exec(ctx, tx, fmt.Sprintf("w%d%s", i, part), i); err != nil {
							return err
						}
					}
					if i == 40 {
						return errors.New("refused")
					}
					return nil
				})
			}()
		}
		for db.Queued() < n {
			runtime.Gosched()
		}
		release()
		wg.Wait()
		got := names(t, db)
		if len(got) != 2*(n-1) {
			t.Fatalf("%d rows, want %d", len(got), 2*(n-1))
		}
		for i, err := range errs {
			if (err != nil) != (i == 40) {
				t.Errorf("write %d: %v", i, err)
			}
			a := slices.Index(got, fmt.Sprintf("w%da", i))
			b := slices.Index(got, fmt.Sprintf("w%db", i))
			if i == 40 {
				if a >= 0 || b >= 0 {
					t.Errorf("the failed write's rows were kept: %v", got)
				}
				continue
			}
			if a < 0 || b != a+1 {
				t.Errorf("write %d's rows at %d and %d, want one after the other", i, a, b)
			}
		}
	})
}
