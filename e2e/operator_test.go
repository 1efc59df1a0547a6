package e2e

import (
	"bytes"
	"database/sql"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// ---- the operator's first hour: refusals that say what is wrong ----

// TestCLIRefusalsNameTheProblem checks that a mistake an operator makes in the
// first hour gets a message that says what is wrong and how to fix it, not
// just a failure.
func TestCLIRefusalsNameTheProblem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := dir + "/ops.db"
	acme := createAccount(t, db, "Acme Corp")
	readOnly := filepath.Join(dir, "readonly")
	if err := os.Mkdir(readOnly, 0o500); err != nil {
		t.Fatal(err)
	}
	// Root writes through directory permissions; sysfs refuses new files
	// even to root.
	unwritable := readOnly + "/x.db"
	if os.Geteuid() == 0 {
		unwritable = "/sys/switchboard-e2e.db"
	}

	cases := []struct {
		name string
		args []string // --json is added; --db too unless given
		exit int
		want []string // every one must appear in the message
	}{
		{"line number too short", []string{"line", "create", "--account", ids(acme), "--number", "123"}, 2,
			[]string{`--number "123"`, "not a dialable number", "E.164"}},
		{"line number too long", []string{"line", "create", "--account", ids(acme), "--number", "+1 415 555 01000000"}, 2,
			[]string{`--number "+1 415 555 01000000"`, "not a dialable number", "at most 15 digits"}},
		{"line number with letters", []string{"line", "create", "--account", ids(acme), "--number", "415-CALL-NOW"}, 2,
			[]string{"not a phone number"}},
		{"user number not dialable", []string{"user", "create", "--account", ids(acme), "--first", "A", "--last", "B", "--numbers", "14155550100,999"}, 2,
			[]string{`--numbers "999"`, "not a dialable number"}},
		{"negative pool", []string{"serve", "--listen", "127.0.0.1:0", "--db-pool", "-1"}, 2,
			[]string{"--db-pool -1", "4 per core"}},
		{"negative statement timeout", []string{"serve", "--listen", "127.0.0.1:0", "--db-statement-timeout", "-1s"}, 2,
			[]string{"--db-statement-timeout", "0 for none"}},
		{"mysql URL", []string{"account", "list", "--db", "mysql://root@127.0.0.1/sb"}, 1,
			[]string{`"mysql"`, "sqlite://", "postgres://"}},
		{"missing directory", []string{"account", "list", "--db", dir + "/no/such/dir/x.db"}, 1,
			[]string{dir + "/no/such/dir/x.db", "directory " + dir + "/no/such/dir does not exist"}},
		{"unwritable directory", []string{"account", "list", "--db", unwritable}, 1,
			[]string{unwritable, "permission denied"}},
		{"database is a directory", []string{"account", "list", "--db", "sqlite://" + readOnly}, 1,
			[]string{readOnly, "is a directory"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			args := c.args
			if !hasFlag(args, "--db") {
				args = cliArgs(db, args)
			} else {
				args = append(args, "--json")
			}
			stdout, stderr, exit := run(t, args...)
			if exit != c.exit || stdout != "" {
				t.Errorf("switchboard %s: got exit %d stdout %q, want exit %d and nothing on stdout", strings.Join(c.args, " "), exit, stdout, c.exit)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("switchboard %s: stderr %q does not say %q", strings.Join(c.args, " "), stderr, w)
				}
			}
			if strings.Contains(stderr, "(14)") || strings.Contains(stderr, "unable to open database file") {
				t.Errorf("switchboard %s: stderr %q is SQLite's opaque error", strings.Join(c.args, " "), stderr)
			}
		})
	}
	t.Cleanup(func() {
		if stdout, _ := cli(t, db, "line", "list", "--account", ids(acme)); strings.Contains(stdout, `"number"`) {
			t.Errorf("a refused line was created: %s", stdout)
		}
	})
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag {
			return true
		}
	}
	return false
}

// TestSecondServerOnOneSQLiteFileIsRefused: one process owns SQLite's single
// writer, so a second serve on the same file stops at start with a message
// saying so, while CLI commands still work beside the server; once the first
// server stops, another may start.
func TestSecondServerOnOneSQLiteFileIsRefused(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + t.TempDir() + "/one.db"
	createAccount(t, db, "Acme Corp")
	first := start(t, childEnv(), "serve", "--listen", "127.0.0.1:0", "--log-format", "json", "--db", db)
	first.waitLine(first.stderr, `the "serving" log line`, logMsg("serving"))

	_, stderr, exit := run(t, "serve", "--listen", "127.0.0.1:0", "--db", db)
	if exit != 1 || !strings.Contains(stderr, "already served by another switchboard") || !strings.Contains(stderr, "one.db.lock") ||
		!strings.Contains(stderr, "process ") {
		t.Errorf("second serve: exit %d, stderr %q; want exit 1 saying the database is already served, by which process, and the lock file", exit, stderr)
	}
	// The refusal names the first server's process.
	if pid := first.cmd.Process.Pid; !strings.Contains(stderr, "process "+ids(int64(pid))) {
		t.Errorf("second serve: stderr %q does not name the first server's process %d", stderr, pid)
	}
	// The CLI is not a server: it still works beside one.
	if _, exit := cli(t, db, "account", "list"); exit != 0 {
		t.Errorf("account list beside a server: exit %d", exit)
	}

	// Once the first has stopped, the lock is free again.
	first.stop()
	second := start(t, childEnv(), "serve", "--listen", "127.0.0.1:0", "--log-format", "json", "--db", db)
	second.waitLine(second.stderr, `the "serving" log line`, logMsg("serving"))
}

// TestDemoRemovesItsDirectory: the demo's database and media live in a
// temporary directory that is gone once the demo has stopped.
func TestDemoRemovesItsDirectory(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	p := start(t, childEnv("TMPDIR="+tmp), "demo", "--listen", "127.0.0.1:0", "--json")
	p.startWithin = demoStartTimeout
	line := p.waitLine(p.stdout, "a JSON object on stdout", func(string) bool { return true })
	var out struct {
		Database string `json:"database"`
	}
	if err := decodeOne(line, &out); err != nil || !strings.HasPrefix(out.Database, "sqlite://"+tmp) {
		t.Fatalf("demo --json: got %q (%v), want the database under %s", line, err, tmp)
	}
	dir := filepath.Dir(strings.TrimPrefix(out.Database, "sqlite://"))
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the demo's directory %s while it runs: %v", dir, err)
	}
	p.stop()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(dir)
		t.Errorf("after the demo stopped, its directory %s is still there (%v, %d entries), want it removed", dir, err, len(entries))
	}
}

// TestAccountMediaQuota: the operator sets an account's hosted-media quota
// with account set --media-quota in the units people type, sees usage and
// quota in account list (text and JSON), and a value that is not a size is
// refused naming the flag, changing nothing.
func TestAccountMediaQuota(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, db string) {
		acme := createAccount(t, db, "Acme Corp")
		type accountRow struct {
			ID         int64  `json:"id"`
			MediaUsed  *int64 `json:"mediaUsed"`
			MediaQuota *int64 `json:"mediaQuota"`
		}
		quota := func() accountRow {
			t.Helper()
			var list struct {
				Accounts []accountRow `json:"accounts"`
			}
			cliJSON(t, db, &list, "account", "list")
			for _, a := range list.Accounts {
				if a.ID == acme {
					if a.MediaUsed == nil || a.MediaQuota == nil {
						t.Fatalf("account list --json: %+v lacks mediaUsed or mediaQuota", a)
					}
					return a
				}
			}
			t.Fatalf("account list --json does not list account %d", acme)
			return accountRow{}
		}
		if a := quota(); *a.MediaQuota != 1<<30 || *a.MediaUsed != 0 {
			t.Errorf("a new account: mediaQuota %d, mediaUsed %d; want 1 GiB and 0", *a.MediaQuota, *a.MediaUsed)
		}

		for _, c := range []struct {
			size string
			want int64
		}{{"500MiB", 500 << 20}, {"750MB", 750_000_000}, {"2GiB", 2 << 30}, {"1048576", 1 << 20}} {
			var out struct {
				MediaQuota int64 `json:"mediaQuota"`
			}
			cliJSON(t, db, &out, "account", "set", "--account", ids(acme), "--media-quota", c.size)
			if out.MediaQuota != c.want {
				t.Errorf("account set --media-quota %s: printed mediaQuota %d, want %d", c.size, out.MediaQuota, c.want)
			}
			if a := quota(); *a.MediaQuota != c.want {
				t.Errorf("after --media-quota %s: account list shows %d, want %d", c.size, *a.MediaQuota, c.want)
			}
		}
		stdout, stderr, exit := run(t, "account", "list", "--db", db)
		if exit != 0 || !strings.Contains(stdout, "MEDIA USED") || !strings.Contains(stdout, "MEDIA QUOTA") || !strings.Contains(stdout, "1 MiB") {
			t.Errorf("account list (text): exit %d\n%s%s\nwant MEDIA USED and MEDIA QUOTA columns showing 1 MiB", exit, stdout, stderr)
		}

		for _, bad := range []string{"5 apples", "1.5GiB", "-1", "", "99999999999TiB"} {
			stdout, stderr, exit := run(t, cliArgs(db, []string{"account", "set", "--account", ids(acme), "--media-quota", bad})...)
			if exit != 2 || stdout != "" || !strings.Contains(stderr, "media-quota") {
				t.Errorf("account set --media-quota %q: exit %d, stdout %q, stderr %q; want exit 2 naming --media-quota", bad, exit, stdout, stderr)
			}
		}
		if _, stderr, exit := run(t, cliArgs(db, []string{"account", "set", "--account", "999999", "--media-quota", "1GiB"})...); exit != 1 || !strings.Contains(stderr, "not found") {
			t.Errorf("account set on an unknown account: exit %d, stderr %q; want exit 1, not found", exit, stderr)
		}
		if a := quota(); *a.MediaQuota != 1<<20 {
			t.Errorf("refused values changed the quota to %d", *a.MediaQuota)
		}
	})
}

// migrateStatusOut is `migrate --status --json`.
type migrateStatusOut struct {
	Applied, Pending, Unknown int
	Migrations                []struct {
		Version, State string
		AppliedAt      *time.Time
	}
}

// TestMigrateStatusAndNewerDatabase: `migrate --status` lists pending then
// applied migrations and changes nothing; after a newer binary's migration
// the server refuses to start, saying why, and the status shows it.
func TestMigrateStatusAndNewerDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := dir + "/up.db"
	db := "sqlite://" + path
	type status = migrateStatusOut

	// No database: said, and none created.
	if stdout, stderr, exit := run(t, "migrate", "--status", "--db", db); exit != 1 || stdout != "" || !strings.Contains(stderr, "no database at "+path) {
		t.Errorf("migrate --status without a database: exit %d, stdout %q, stderr %q; want exit 1, \"no database at %s\"", exit, stdout, stderr, path)
	}
	backupLeftovers(t, dir)

	// An empty file is an empty SQLite database: every migration pending.
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var before status
	cliJSON(t, db, &before, "migrate", "--status")
	backupLeftovers(t, dir, "up.db")
	if before.Applied != 0 || before.Pending == 0 || before.Pending != len(before.Migrations) || before.Migrations[0].State != "pending" {
		t.Fatalf("status of a new database: %+v; want every migration pending", before)
	}
	var again status
	cliJSON(t, db, &again, "migrate", "--status")
	if again.Applied != 0 {
		t.Fatalf("migrate --status applied migrations: %+v", again)
	}
	createAccount(t, db, "Acme Corp") // migrates
	var after status
	cliJSON(t, db, &after, "migrate", "--status")
	if after.Applied != before.Pending || after.Pending != 0 || after.Unknown != 0 || after.Migrations[0].AppliedAt == nil {
		t.Fatalf("status after migrating: %+v; want %d applied", after, before.Pending)
	}

	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = raw.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES ('9999_from_the_future.sql', 1)`)
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, exit := run(t, "serve", "--listen", "127.0.0.1:0", "--db", db)
	if exit == 0 || !strings.Contains(stderr, "migrated by a newer Switchboard") || !strings.Contains(stderr, "9999_from_the_future.sql") {
		t.Fatalf("serve on a newer database: exit %d, stderr %q; want a refusal naming the unknown migration", exit, stderr)
	}
	var newer status
	cliJSON(t, db, &newer, "migrate", "--status")
	if newer.Unknown != 1 || newer.Migrations[len(newer.Migrations)-1].State != "unknown" {
		t.Fatalf("status of a newer database: %+v; want the unknown migration listed", newer)
	}
}

// TestMigrateStatusReadsOnly: `migrate --status` on a backup copy (a file in
// rollback-journal mode, as VACUUM INTO writes it) leaves it byte for byte
// as it was, journal mode included, and creates nothing beside it; on a
// database a server holds, it reads what the server committed.
func TestMigrateStatusReadsOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "live.db")
	createAccount(t, src, "Status Co")
	base := startServer(t, src)

	copies := filepath.Join(dir, "copies")
	if err := os.Mkdir(copies, 0o700); err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(copies, "copy.db")
	cliJSON(t, src, &backupCheckOut{}, "backup", "--to", copyPath)
	before, err := os.ReadFile(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	// The header's read and write versions: 1 is rollback journal, 2 WAL.
	if before[18] != 1 || before[19] != 1 {
		t.Fatalf("the copy's header says versions %d/%d; want 1/1 (rollback journal)", before[18], before[19])
	}
	var st migrateStatusOut
	cliJSON(t, copyPath, &st, "migrate", "--status")
	if st.Applied == 0 || st.Pending != 0 || st.Unknown != 0 {
		t.Errorf("migrate --status of the copy: %+v; want every migration applied", st)
	}
	after, err := os.ReadFile(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("migrate --status changed the copy (header versions now %d/%d)", after[18], after[19])
	}
	backupLeftovers(t, copies, "copy.db")

	// On the served database: the status of what the server committed.
	var live migrateStatusOut
	cliJSON(t, src, &live, "migrate", "--status")
	if live.Applied != st.Applied || live.Pending != 0 {
		t.Errorf("migrate --status of the served database: %+v; want %d applied", live, st.Applied)
	}
	if r := request(t, http.MethodGet, base+"/readyz", ""); r.status != http.StatusOK {
		t.Errorf("GET /readyz after migrate --status: %d", r.status)
	}
}

// TestMigrateStatusPostgres: on PostgreSQL `migrate --status` (its reads in
// a read-only transaction) lists every migration pending on an empty
// schema, creating nothing there, and applied after `migrate`.
func TestMigrateStatusPostgres(t *testing.T) {
	t.Parallel()
	if storetest.PostgresURL(t) == "" {
		t.Skip("PostgreSQL only")
	}
	db := storetest.DSN(t, store.Postgres)
	var before migrateStatusOut
	cliJSON(t, db, &before, "migrate", "--status")
	if before.Applied != 0 || before.Pending == 0 || before.Pending != len(before.Migrations) {
		t.Fatalf("migrate --status of an empty schema: %+v; want every migration pending", before)
	}
	raw, err := sql.Open("pgx", db)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var tables int
	if err := raw.QueryRow(`SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema()`).Scan(&tables); err != nil || tables != 0 {
		t.Errorf("after migrate --status the schema holds %d tables (%v); want none", tables, err)
	}
	cliJSON(t, db, &struct{}{}, "migrate")
	var after migrateStatusOut
	cliJSON(t, db, &after, "migrate", "--status")
	if after.Applied != before.Pending || after.Pending != 0 || after.Unknown != 0 {
		t.Errorf("migrate --status after migrate: %+v; want %d applied", after, before.Pending)
	}
}
