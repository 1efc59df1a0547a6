// Command backupapi measures the two ways SQLite copies a database that
// another connection keeps writing, for `switchboard backup`'s choice
// (docs/decisions.md "Backups: VACUUM INTO"): VACUUM INTO, through a
// query_only connection and through a mode=ro one, and the online backup
// API, stepped a few pages at a time and in one step.
//
//	go run ./bench/backupapi [-rows 200000] [-limit 20s]
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	sqlite "modernc.org/sqlite"
)

func main() {
	rows := flag.Int("rows", 200000, "rows of 200 bytes in the database (200000: about 50 MB)")
	limit := flag.Duration("limit", 20*time.Second, "give up on a backup after this long")
	flag.Parse()
	if err := run(*rows, *limit); err != nil {
		fmt.Fprintln(os.Stderr, "backupapi:", err)
		os.Exit(1)
	}
}

func run(rows int, limit time.Duration) error {
	dir, err := os.MkdirTemp("", "backupapi-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "src.db")
	w, err := sql.Open("sqlite", "file:"+src+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	defer w.Close()
	w.SetMaxOpenConns(1)
	if _, err := w.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)`); err != nil {
		return err
	}
	tx, err := w.Begin()
	if err != nil {
		return err
	}
	for i := range rows {
		if _, err := tx.Exec(`INSERT INTO t (body) VALUES (?)`, fmt.Sprintf("%0200d", i)); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}

	// A writer commits one row every 2 ms for the whole run, as a serving
	// Switchboard under steady sends does.
	var writes atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := w.Exec(`INSERT INTO t (body) VALUES ('x')`); err == nil {
				writes.Add(1)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	ctx := context.Background()

	for _, c := range []struct{ name, query string }{
		{"query_only(1)", "_pragma=query_only(1)"},
		{"mode=ro", "mode=ro"},
	} {
		db, err := sql.Open("sqlite", "file:"+src+"?"+c.query+"&_pragma=busy_timeout(10000)")
		if err != nil {
			return err
		}
		t0, w0 := time.Now(), writes.Load()
		_, err = db.ExecContext(ctx, `VACUUM INTO ?`, filepath.Join(dir, "vacuum-"+c.name+".db"))
		fmt.Printf("VACUUM INTO on a %s connection: %v in %v, %d commits meanwhile\n", c.name, errOrOK(err), time.Since(t0).Round(time.Millisecond), writes.Load()-w0)
		db.Close()
	}

	r, err := sql.Open("sqlite", "file:"+src+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	defer r.Close()
	for _, step := range []int32{100, -1} {
		conn, err := r.Conn(ctx)
		if err != nil {
			return err
		}
		restarts, steps := 0, 0
		t0, w0 := time.Now(), writes.Load()
		err = conn.Raw(func(dc any) error {
			b, err := dc.(interface {
				NewBackup(string) (*sqlite.Backup, error)
			}).NewBackup(filepath.Join(dir, fmt.Sprintf("backup%d.db", step)))
			if err != nil {
				return err
			}
			last := -1
			for time.Since(t0) < limit {
				more, err := b.Step(step)
				steps++
				if err != nil {
					b.Finish()
					return err
				}
				// Remaining grows back when a commit restarted the copy.
				if rem := b.Remaining(); last >= 0 && rem > last {
					restarts++
				}
				last = b.Remaining()
				if !more {
					return b.Finish()
				}
				time.Sleep(time.Millisecond) // what an incremental backup yields between steps
			}
			b.Finish()
			return fmt.Errorf("not done after %v, %d pages still to copy", limit, last)
		})
		conn.Close()
		fmt.Printf("backup API, step(%d): %v; %d steps, %d restarts, %v, %d commits meanwhile\n", step, errOrOK(err), steps, restarts, time.Since(t0).Round(time.Millisecond), writes.Load()-w0)
	}
	return nil
}

func errOrOK(err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return "ok"
}
