package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/sms/smsevent"
	"switchboard/internal/store"
)

// fillMain writes -n message.sent events to an account's outbox in a SQLite
// database whose server is stopped, and prints the first one's id (evt_N):
// the fixture of the replay scenario, 100,000 events in seconds instead of
// the ten minutes sends at the measured rate would take. The events go
// through the store's own AddEvents (the same columns, created_at and
// payload shape as a send's), 1,000 to a transaction. They are then marked
// fanned out, so that the restarted server's webhook dispatcher does not
// work through them during the replay: these sends never happened, and no
// webhook should hear of them.
//
// The server must be stopped while this runs and restarted after: its
// stream hub learns of new events from its own commits, not from another
// process's.
func fillMain(args []string) error {
	fs := flag.NewFlagSet("fill", flag.ExitOnError)
	db := fs.String("db", "", "the SQLite database file")
	account := fs.Int64("account", 0, "account id")
	line := fs.String("line", "", "the line the events name")
	n := fs.Int("n", 100001, "events to write")
	fs.Parse(args)
	if *db == "" || *account == 0 || *line == "" {
		return fmt.Errorf("fill: -db, -account and -line are required")
	}
	ctx := context.Background()
	first, err := fill(ctx, *db, *account, *line, *n)
	if err != nil {
		return err
	}
	fmt.Printf("evt_%d\n", first)
	return nil
}

func fill(ctx context.Context, path string, account int64, line string, n int) (first int64, err error) {
	raw, err := sql.Open("sqlite", path) // the driver the store registers
	if err != nil {
		return 0, err
	}
	defer raw.Close()
	var head int64
	if err := raw.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM events`).Scan(&head); err != nil {
		return 0, fmt.Errorf("fill: %w", err)
	}

	st, err := store.Open(ctx, path)
	if err != nil {
		return 0, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return 0, err
	}
	began := time.Now()
	batch := make([]domain.Event, 0, 1000)
	for i := range n {
		seq := int64(i)
		ev, err := smsevent.Sent(1_000_000_000+seq, line, []string{recipient(seq)[1:]})
		if err != nil {
			st.Close()
			return 0, err
		}
		batch = append(batch, ev)
		if len(batch) == cap(batch) || i == n-1 {
			if err := st.AddEvents(ctx, account, batch); err != nil {
				st.Close()
				return 0, fmt.Errorf("fill: %w", err)
			}
			batch = batch[:0]
		}
	}
	if err := st.Close(); err != nil { // the raw connection writes next
		return 0, err
	}
	if err := raw.QueryRowContext(ctx, `SELECT MIN(id) FROM events WHERE id > ? AND account_id = ?`, head, account).Scan(&first); err != nil {
		return 0, fmt.Errorf("fill: the first event: %w", err)
	}
	if _, err := raw.ExecContext(ctx, `UPDATE events SET fanned_out = TRUE WHERE id >= ? AND account_id = ?`, first, account); err != nil {
		return 0, fmt.Errorf("fill: marking the events fanned out: %w", err)
	}
	fmt.Fprintf(os.Stderr, "fill: %d events written in %.1fs\n", n, time.Since(began).Seconds())
	return first, nil
}
