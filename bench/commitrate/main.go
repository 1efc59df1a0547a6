// Command commitrate measures the raw single-row commit rate of the disk under
// SQLite with the same settings Switchboard uses (WAL, synchronous=FULL): one
// connection inserting one row per transaction, as fast as it can. It is the
// baseline that grouped commits are compared with in docs/benchmarks.md.
//
//	go run ./bench/commitrate [-d 5s] [-dir DIR]
package main

import (
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite"
)

func main() {
	dur := flag.Duration("d", 5*time.Second, "how long to measure")
	dir := flag.String("dir", "", "directory for the database (default: a temporary one on the same disk as $TMPDIR)")
	flag.Parse()
	if err := run(*dur, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "commitrate:", err)
		os.Exit(1)
	}
}

func run(dur time.Duration, dir string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "commitrate-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	dsn := "file:" + filepath.Join(dir, "commit.db") +
		"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL, at BIGINT NOT NULL)`); err != nil {
		return err
	}
	stmt, err := db.Prepare(`INSERT INTO t (v, at) VALUES (?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	start := time.Now()
	n := 0
	for time.Since(start) < dur {
		// Autocommit: each insert is its own transaction and its own fsync.
		if _, err := stmt.Exec("one row", time.Now().UnixMicro()); err != nil {
			return err
		}
		n++
	}
	el := time.Since(start)
	fmt.Printf("single-row commits: %d in %.2fs = %.0f commits/s (SQLite WAL, synchronous=FULL)\n", n, el.Seconds(), float64(n)/el.Seconds())
	return nil
}
