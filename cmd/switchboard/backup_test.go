package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runCLI runs the CLI in this process as main does and returns what it
// printed and its exit status. A command still running after limit fails
// the test (its goroutine is left behind: the check it runs never ends).
func runCLI(t *testing.T, limit time.Duration, args ...string) (stdout, stderr string, exit int) {
	t.Helper()
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(context.Background(), args, &out, &errOut) }()
	select {
	case exit = <-done:
	case <-time.After(limit):
		t.Fatalf("switchboard %s: still running after %v", strings.Join(args, " "), limit)
	}
	return out.String(), errOut.String(), exit
}

// hostileCopy is a Switchboard database (migrated, one account) changed by
// the statements, run with foreign keys off as a careless or hostile edit
// would: the kind of file backup --check is given.
func hostileCopy(t *testing.T, statements ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "copy.db")
	if _, stderr, exit := runCLI(t, time.Minute, "account", "create", "--db", path, "--name", "Hostile"); exit != 0 {
		t.Fatalf("account create: exit %d, %s", exit, stderr)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range statements {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return path
}

// recursive is a view body that never ends: every row counts one more.
const recursive = `WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n AS id, 1 AS account_id, n AS message_id, 1 AS amount, 'USD' AS currency, n AS version, n AS applied_at FROM r`

// TestBackupCheckReadsOnlyTables: a view or trigger where the check
// expects a table is reported as a failed check, never queried: a recursive
// view named ledger or schema_migrations would otherwise keep the check
// (and a core) busy for ever.
func TestBackupCheckReadsOnlyTables(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		statements []string
		want       string // in notTables and on stderr
	}{
		{"recursive ledger view", []string{`DROP TABLE ledger`, `CREATE VIEW ledger AS ` + recursive}, "ledger is a view, not a table"},
		{"recursive schema_migrations view", []string{`DROP TABLE schema_migrations`, `CREATE VIEW schema_migrations AS ` + recursive}, "schema_migrations is a view, not a table"},
		{"upper-case view", []string{`DROP TABLE ledger`, `CREATE VIEW "LEDGER" AS ` + recursive}, "ledger is a view, not a table"},
		{"trigger named like a table", []string{`DROP TABLE schema_migrations`,
			`CREATE TRIGGER schema_migrations AFTER INSERT ON accounts BEGIN SELECT 1; END`}, "schema_migrations is a trigger, not a table"},
		{"missing table", []string{`DROP TABLE ledger`}, "ledger is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := hostileCopy(t, tc.statements...)
			start := time.Now()
			stdout, stderr, exit := runCLI(t, 20*time.Second, "backup", "--check", path, "--json")
			var r checkReport
			if err := json.Unmarshal([]byte(stdout), &r); err != nil {
				t.Fatalf("backup --check: stdout is not the report: %v\n%s\nstderr: %s", err, stdout, stderr)
			}
			if exit != 1 || r.OK || !strings.Contains(stderr, tc.want) || strings.Join(r.NotTables, "|") != tc.want {
				t.Errorf("backup --check: exit %d, notTables %q, stderr %q; want exit 1 and %q", exit, r.NotTables, stderr, tc.want)
			}
			if r.Ledger != nil {
				t.Errorf("backup --check read the ledger of a copy whose tables are not all tables: %+v", r.Ledger)
			}
			t.Logf("checked in %v", time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestBackupCheckBounded: a check that runs too long, here on real tables
// (a generated column that takes milliseconds a row), is stopped at its
// bound, SQLite interrupted, and reported as that. Not parallel: it
// shortens checkTime.
func TestBackupCheckBounded(t *testing.T) {
	path := hostileCopy(t,
		`DROP TABLE ledger`,
		`CREATE TABLE ledger (id INTEGER PRIMARY KEY, account_id INTEGER, message_id INTEGER, currency TEXT,
			amount INTEGER AS (length(hex(zeroblob(4000000)))))`,
		`WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 20000)
			INSERT INTO ledger (id, account_id, message_id, currency) SELECT n, 1, n, 'USD' FROM r`)
	saved := checkTime
	t.Cleanup(func() { checkTime = saved })
	checkTime.base, checkTime.perSecond = 300*time.Millisecond, 1<<40

	start := time.Now()
	stdout, stderr, exit := runCLI(t, 20*time.Second, "backup", "--check", path)
	took := time.Since(start)
	if exit != 1 || stdout != "" || !strings.Contains(stderr, "check of "+path+" did not finish within 300ms") {
		t.Errorf("backup --check past its bound: exit %d, stdout %q, stderr %q; want exit 1 and \"did not finish within 300ms\"", exit, stdout, stderr)
	}
	// The bound plus the work between two checks of the interrupt flag.
	if took > 5*time.Second {
		t.Errorf("backup --check past a 300ms bound returned after %v", took)
	}
	t.Logf("returned after %v", took.Round(time.Millisecond))
}
