// Command inboxquery measures the SQL ceiling of the inbox lists: the rate at
// which the store alone answers the benchmark's list pages and unread counts
// on the database bench/inboxgen generated, with no HTTP, authentication or
// JSON, on all the machine's cores. bench/inbox.sh's targets compare the
// server with the load generator's trivial handler; if even this rate is
// below the target share of that handler's, the SQL rules the target out on
// this machine, whatever the rest of the request costs.
//
//	go run ./bench/inboxquery -db /tmp/switchboard-inbox-bench.db [-d 8s] [-c 64]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/store"
)

func main() {
	db := flag.String("db", "/tmp/switchboard-inbox-bench.db", "the generated inbox database (its description is DB.json)")
	dur := flag.Duration("d", 8*time.Second, "how long to measure each query")
	conc := flag.Int("c", 64, "concurrent callers")
	flag.Parse()
	if err := run(*db, *dur, *conc); err != nil {
		fmt.Fprintln(os.Stderr, "inboxquery:", err)
		os.Exit(1)
	}
}

func run(db string, dur time.Duration, conc int) error {
	ctx := context.Background()
	var desc struct {
		AccountID int64   `json:"accountId"`
		UserIDs   []int64 `json:"userIds"`
	}
	b, err := os.ReadFile(db + ".json")
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &desc); err != nil {
		return err
	}
	st, err := store.Open(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()
	user := desc.UserIDs[0]
	queries := []struct {
		name string
		fn   func() error
	}{
		{"first page (limit 50)", func() error {
			_, err := st.ListConversations(ctx, store.ConversationFilter{AccountID: desc.AccountID, UserID: user, Limit: 50})
			return err
		}},
		{"unread+unassigned", func() error {
			_, err := st.ListConversations(ctx, store.ConversationFilter{AccountID: desc.AccountID, UserID: user, Unread: true, Unassigned: true, Limit: 50})
			return err
		}},
		{"unread counts", func() error {
			_, err := st.UnreadCounts(ctx, desc.AccountID, user, time.Time{})
			return err
		}},
		{"page at offset 40000", func() error {
			_, err := st.ListConversations(ctx, store.ConversationFilter{AccountID: desc.AccountID, UserID: user, Limit: 50, Offset: 40000})
			return err
		}},
	}
	for _, q := range queries {
		var n atomic.Int64
		var failed atomic.Value
		stop := time.Now().Add(dur)
		var wg sync.WaitGroup
		for range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) {
					if err := q.fn(); err != nil {
						failed.Store(err)
						return
					}
					n.Add(1)
				}
			}()
		}
		wg.Wait()
		if err, ok := failed.Load().(error); ok {
			return fmt.Errorf("%s: %w", q.name, err)
		}
		fmt.Printf("%-24s %8.0f queries/s\n", q.name, float64(n.Load())/dur.Seconds())
	}
	return nil
}
