package e2e

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"switchboard/internal/store/storetest"
)

// pgbouncerRequireEnv turns a missing pgbouncer from a skipped test into a
// failed one; CI installs Debian's pgbouncer and sets it to 1.
const pgbouncerRequireEnv = "SWITCHBOARD_TEST_PGBOUNCER"

// pgbouncerPoolSize is the test PgBouncer's server connections: fewer than
// the node's pool and the walk's concurrent sends, so that transactions of
// different client connections really share server connections.
const pgbouncerPoolSize = 4

// The core walk through PgBouncer in transaction pooling mode (Debian's 1.18,
// which keeps no prepared statements across transactions): the CLI and three
// nodes with --db-pgbouncer (48 client connections on 4 server connections),
// the nodes' read caches listening on PostgreSQL directly.
func TestBehindPgBouncer(t *testing.T) {
	if storetest.PostgresURL(t) == "" {
		t.Skip("needs PostgreSQL")
	}
	bin := pgbouncerBinary(t)
	t.Parallel()
	direct := dedicatedDatabase(t)
	bouncer := startPgBouncer(t, bin, direct)

	fake := newCrashKannel(t)
	c := crashProvision(t, direct, fake)
	// The CLI through PgBouncer.
	var k keyOut
	stdout, stderr, exit := run(t, "key", "create", "--db", bouncer, "--db-pgbouncer", "--json",
		"--account", fmt.Sprint(c.account), "--name", "through pgbouncer", "--scopes", "users:read")
	if exit != 0 || decodeOne(stdout, &k) != nil || k.Key == "" {
		t.Fatalf("key create through PgBouncer: exit %d, stdout %s, stderr %s", exit, stdout, stderr)
	}

	// Without --db-pgbouncer a node cannot start there (PgBouncer refuses
	// the statement_timeout startup parameter), and it says what to add.
	// Through a PgBouncer of its own: PgBouncer 1.18 can crash ("bad client
	// state") when the refused node's exit cancels a query while the refusal
	// is still being torn down, which once took the cluster's bouncer down
	// in CI.
	if _, stderr, exit := run(t, "serve", "--db", startPgBouncer(t, bin, direct), "--listen", "127.0.0.1:0"); exit == 0 || !strings.Contains(stderr, "add --db-pgbouncer") {
		t.Errorf("serve through PgBouncer without --db-pgbouncer: exit %d, stderr %q; want a failure that names --db-pgbouncer", exit, stderr)
	}

	// Three nodes through it, as deployed (docs/operations.md).
	c.db = bouncer
	c.extra = []string{"--db-pgbouncer", "--database-listen-url", direct, "--db-pool", "16"}
	cl := startCluster(t, c, 3, func(int) bool { return true })
	for i, p := range cl.procs {
		if _, _, found, _ := p.stderr.find(0, logMsg("read cache off")); found {
			t.Errorf(`node %d logged "read cache off": its listener should reach PostgreSQL directly`, i)
		}
	}
	c.db = direct // the walk reads the outcome from PostgreSQL itself
	w := newCoreWalk(t, direct, c, cl.bases()...)
	if r := request(t, "GET", cl.via.baseURL()+apiPrefix+"/users", "Bearer "+k.Key); r.status != 200 {
		t.Errorf("GET /users with the key made through PgBouncer: %d %s", r.status, r.body)
	}
	w.run(t)
}

// pgbouncerBinary finds Debian's pgbouncer, or skips the test (fails it when
// SWITCHBOARD_TEST_PGBOUNCER=1).
func pgbouncerBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("pgbouncer"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/pgbouncer"); err == nil {
		return "/usr/sbin/pgbouncer"
	}
	if os.Getenv(pgbouncerRequireEnv) == "1" {
		t.Fatalf("pgbouncer is not installed; %s=1 requires it (apt-get install pgbouncer)", pgbouncerRequireEnv)
	}
	t.Skipf("pgbouncer is not installed; skipping (set %s=1 to make this a failure)", pgbouncerRequireEnv)
	return ""
}

// dedicatedDatabase creates an empty database on the test server and
// returns its URL; it is dropped when the test ends. PgBouncer refuses the
// search_path startup parameter the other tests' per-test schemas use (and
// would only drop it with ignore_startup_parameters), so a test behind it
// gets a database of its own, whose default schema is its own.
func dedicatedDatabase(t *testing.T) string {
	t.Helper()
	base := storetest.PostgresURL(t)
	var b [6]byte
	rand.Read(b[:])
	name := "sb_pgb_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", base)
	must(t, err)
	defer admin.Close()
	if _, err := admin.Exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer db.Close()
		// DROP DATABASE keeps its transaction open through a checkpoint it
		// forces, and on PostgreSQL every event stream and webhook fan-out of
		// the whole server waits for it (docs/operations.md): seen at 7 s
		// beside two CPU burners, long enough to fail another package's event
		// test. A CHECKPOINT first, which holds no transaction, writes the
		// dirty pages, so that the drop's own checkpoint has little left.
		if _, err := db.Exec(`CHECKPOINT`); err != nil {
			t.Logf("checkpoint before dropping %s: %v", name, err)
		}
		if _, err := db.Exec(`DROP DATABASE ` + name + ` WITH (FORCE)`); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	must(t, err)
	u.Path = "/" + name
	return u.String()
}

// startPgBouncer starts pgbouncer in transaction pooling mode on a free port
// in front of the database at direct, and returns the URL that reaches the
// database through it. It is stopped when the test ends.
func startPgBouncer(t *testing.T, bin, direct string) string {
	t.Helper()
	u, err := url.Parse(direct)
	must(t, err)
	entry := fmt.Sprintf("host=%s port=%s dbname=%s user=%s", u.Hostname(), u.Port(), strings.TrimPrefix(u.Path, "/"), u.User.Username())
	if pw, ok := u.User.Password(); ok {
		entry += " password=" + pw
	}
	port := crashFreePort(t)
	ini := fmt.Sprintf(`[databases]
sb = %s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = %d
max_client_conn = 200
logfile =
pidfile =
`, entry, port, pgbouncerPoolSize)
	dir := t.TempDir()
	path := filepath.Join(dir, "pgbouncer.ini")
	must(t, os.WriteFile(path, []byte(ini), 0o644))
	args := []string{path}
	if os.Geteuid() == 0 {
		// PgBouncer refuses to run as root.
		must(t, os.Chmod(dir, 0o755))
		args = []string{"-u", "nobody", path}
	}
	cmd := exec.Command(bin, args...)
	out := newLineWriter()
	cmd.Stdout, cmd.Stderr = out, out
	must(t, cmd.Start())
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(stopTimeout):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("pgbouncer:\n%s", crashTail(out.String(), 40))
		}
	})
	p := &process{t: t, name: "pgbouncer", cmd: cmd, stdout: out, stderr: out, done: done}
	p.waitLine(out, `pgbouncer's "process up"`, func(line string) bool { return strings.Contains(line, "process up") })
	q := url.Values{"sslmode": {"disable"}}
	return (&url.URL{Scheme: "postgres", User: u.User, Host: fmt.Sprintf("127.0.0.1:%d", port), Path: "/sb", RawQuery: q.Encode()}).String()
}
