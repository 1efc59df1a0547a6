package e2e

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/apitest"
	"switchboard/internal/domain"
	"switchboard/internal/money"
	"switchboard/internal/store/storetest"
)

// backupCheckOut is `backup --check --json` (and the check in `backup --to`).
type backupCheckOut struct {
	Backup *struct {
		File  string `json:"file"`
		Bytes int64  `json:"bytes"`
	} `json:"backup"`
	File            string   `json:"file"`
	OK              bool     `json:"ok"`
	Failed          []string `json:"failed"`
	IntegrityCheck  []string `json:"integrityCheck"`
	ForeignKeyCheck []string `json:"foreignKeyCheck"`
	Schema          struct {
		Latest                    string
		Applied, Pending, Unknown int
		State                     string
	} `json:"schema"`
	Ledger *struct {
		Charges  int64 `json:"charges"`
		Accounts []struct {
			Account  int64        `json:"account"`
			Currency string       `json:"currency"`
			Charges  int64        `json:"charges"`
			Total    money.Micros `json:"total"`
		} `json:"accounts"`
		Checks []struct {
			Rule  string `json:"rule"`
			OK    bool   `json:"ok"`
			Count int    `json:"count"`
		} `json:"checks"`
	} `json:"ledger"`
}

// ack is one 201 of POST /sms/messages: the message, its price, its thread's
// number and when the client had the answer.
type ack struct {
	id    int64
	price money.Micros
	to    string
	text  string
	at    time.Time
}

// TestBackupUnderLoadRestores: a backup taken while clients keep sending
// holds every message acknowledged before the backup command started, its
// check passes, and a server started on it (the restore) serves those
// messages and charges, with the ledger agreeing with the messages.
func TestBackupUnderLoadRestores(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "live.db")
	account := createAccount(t, src, "Backup Co")
	line := createLine(t, src, account, "--number", "4155550100", "--name", "Main")
	cliJSON(t, src, &struct{}{}, "rate", "set", "--account", fmt.Sprint(account), "--prefix", "1", "--sms", "0.0079", "--mms", "0.02")
	key := createKey(t, src, account, "sender", "sms:send,messages:read")
	base := startServer(t, src)

	const senders = 6
	var (
		mu      sync.Mutex
		acks    []ack
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		refused int
		// paced slows each sender down around the backup (see below);
		// pacedSenders counts the senders that have slowed down.
		paced        atomic.Bool
		pacedSenders atomic.Int32
	)
	client := apitest.Client(t)
	client.Timeout = httpTimeout
	for g := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			to := fmt.Sprintf("1415555%04d", 2000+g)
			slowed := false
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				a, ok := backupSend(t, client, base, key.Key, line.Number, to, fmt.Sprintf("load %d/%d", g, i))
				mu.Lock()
				if ok {
					acks = append(acks, a)
				} else {
					refused++
				}
				mu.Unlock()
				if paced.Load() {
					if !slowed {
						slowed = true
						pacedSenders.Add(1)
					}
					// The load's pace (not a wait): about 7 sends a second
					// from each sender.
					time.Sleep(150 * time.Millisecond)
				}
			}
		}()
	}
	stopLoad := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopLoad) // however the test ends
	acksAfter := func(at time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, a := range acks {
			if !a.at.Before(at) {
				n++
			}
		}
		return n
	}
	apitest.Eventually(t, "150 sends acknowledged", func() bool { return acksAfter(time.Time{}) >= 150 })

	// Flat out, the server checkpoints its WAL every fifty sends or so, in
	// less time than the backup command takes to start: then a copy of the
	// database file alone (without its WAL) would also hold every send
	// acknowledged before the command started, and this test could not
	// tell it from a real backup. Paced, a few sends land in that time.
	paced.Store(true)
	apitest.Eventually(t, "every sender paced", func() bool { return pacedSenders.Load() == senders })

	copyPath := filepath.Join(dir, "backups", "copy.db")
	if err := os.Mkdir(filepath.Dir(copyPath), 0o700); err != nil {
		t.Fatal(err)
	}
	backupStarted := time.Now()
	stdout, stderr, exit := run(t, "backup", "--db", src, "--to", copyPath, "--json")
	backupEnded := time.Now()
	// The load goes on after the backup.
	apitest.Eventually(t, "sends acknowledged after the backup", func() bool { return acksAfter(backupEnded) >= senders })
	stopLoad()
	if exit != 0 {
		t.Fatalf("backup --to under load: exit %d\nstdout: %s\nstderr: %s", exit, stdout, stderr)
	}
	if stderr != "" {
		t.Errorf("backup --to --json: stderr %q, want nothing (no progress when not a terminal)", stderr)
	}
	var took backupCheckOut
	if err := decodeOne(stdout, &took); err != nil {
		t.Fatalf("backup --to --json: %v\n%s", err, stdout)
	}
	if took.Backup == nil || took.Backup.File != copyPath || !took.OK {
		t.Fatalf("backup --to --json: got %s; want the file %s and a passing check", stdout, copyPath)
	}
	if fi, err := os.Stat(copyPath); err != nil || fi.Size() != took.Backup.Bytes {
		t.Fatalf("backup file: %v, size %v; reported %d bytes", err, fi, took.Backup.Bytes)
	}
	backupLeftovers(t, filepath.Dir(copyPath), "copy.db")

	var before, during int
	for _, a := range acks {
		switch {
		case a.at.Before(backupStarted):
			before++
		case a.at.Before(backupEnded):
			during++
		}
	}
	t.Logf("%d sends acknowledged (%d refused): %d before the backup started, %d while it ran (%v), %d after",
		len(acks), refused, before, during, backupEnded.Sub(backupStarted).Round(time.Millisecond), len(acks)-before-during)

	// The check, on its own: passes, names the schema, sums the ledger, and
	// writes nothing beside the copy.
	var check backupCheckOut
	cliJSON(t, "unused.db", &check, "backup", "--check", copyPath)
	if !check.OK || len(check.Failed) != 0 || len(check.IntegrityCheck) != 0 || len(check.ForeignKeyCheck) != 0 {
		t.Fatalf("backup --check: %+v; want every check passing", check)
	}
	if check.Schema.State != "current" || check.Schema.Pending != 0 || check.Schema.Unknown != 0 || check.Schema.Latest == "" {
		t.Errorf("backup --check schema: %+v; want current, nothing pending", check.Schema)
	}
	if check.Ledger == nil || len(check.Ledger.Accounts) != 1 || len(check.Ledger.Checks) == 0 {
		t.Fatalf("backup --check ledger: %+v; want one account's charges and the agreement checks", check.Ledger)
	}
	for _, c := range check.Ledger.Checks {
		if !c.OK || c.Count != 0 {
			t.Errorf("backup --check: rule %q: %+v", c.Rule, c)
		}
	}
	copied := check.Ledger.Accounts[0]
	if copied.Account != account || copied.Currency != "USD" || copied.Charges < int64(before) {
		t.Errorf("backup --check: account ledger %+v; want account %d in USD with at least the %d charges acknowledged before the backup", copied, account, before)
	}
	backupLeftovers(t, filepath.Dir(copyPath), "copy.db")

	// The restore: the file put in place of a database, and a server on it.
	restored := filepath.Join(dir, "restored", "switchboard.db")
	if err := os.Mkdir(filepath.Dir(restored), 0o700); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(restored, body, 0o600); err != nil {
		t.Fatal(err)
	}
	rbase := startServer(t, restored)

	// Through the API: every thread's messages, page by page.
	inThreads := map[int64]string{} // id → text
	for g := range senders {
		to := fmt.Sprintf("1415555%04d", 2000+g)
		for offset := 0; ; offset += 200 {
			page := getData[struct {
				Messages []struct {
					ID        int64  `json:"id"`
					Direction string `json:"direction"`
					Text      string `json:"text"`
				} `json:"messages"`
			}](t, fmt.Sprintf("%s%s/sms/conversations/%s/%s?limit=200&offset=%d", rbase, apiPrefix, line.Number, to, offset), key.Key)
			for _, m := range page.Messages {
				if m.Direction != "out" {
					t.Errorf("restored message %d: direction %q, want out", m.ID, m.Direction)
				}
				inThreads[m.ID] = m.Text
			}
			if len(page.Messages) < 200 {
				break
			}
		}
	}
	// Through the CLI: the restored ledger.
	var ledger struct {
		Entries []struct {
			MessageID int64        `json:"messageId"`
			Amount    money.Micros `json:"amount"`
		} `json:"entries"`
		Total money.Micros `json:"total"`
		Count int64        `json:"count"`
	}
	cliJSON(t, restored, &ledger, "ledger", "list", "--account", fmt.Sprint(account), "--limit", "1000000")
	charged := map[int64]money.Micros{}
	var sum money.Micros
	for _, e := range ledger.Entries {
		charged[e.MessageID] = e.Amount
		sum += e.Amount
		if _, ok := inThreads[e.MessageID]; !ok {
			t.Errorf("restored ledger charges message %d, which no thread holds", e.MessageID)
		}
	}
	if int64(len(ledger.Entries)) != ledger.Count || ledger.Count != copied.Charges || sum != ledger.Total || ledger.Total != copied.Total {
		t.Errorf("restored ledger: %d entries summing to %s, count %d total %s; the check of the copy said %d charges, %s",
			len(ledger.Entries), sum, ledger.Count, ledger.Total, copied.Charges, copied.Total)
	}
	if len(inThreads) != len(ledger.Entries) {
		t.Errorf("restored: %d messages in the threads, %d charges; want one charge per sent message", len(inThreads), len(ledger.Entries))
	}
	missing := 0
	for _, a := range acks {
		if !a.at.Before(backupStarted) {
			continue
		}
		amount, charged := charged[a.id]
		text, inThread := inThreads[a.id]
		if !inThread || text != a.text || !charged || amount != a.price {
			missing++
			if missing <= 5 {
				t.Errorf("message %d, acknowledged %v before the backup started: in a thread %t (text %q, sent %q), charged %t (%s, want %s)",
					a.id, backupStarted.Sub(a.at).Round(time.Millisecond), inThread, text, a.text, charged, amount, a.price)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of the %d messages acknowledged before the backup started are missing from the restored copy", missing, before)
	}

	// The restored server serves on: a send is acknowledged and charged.
	if _, ok := backupSend(t, client, rbase, key.Key, line.Number, "14155552999", "after the restore"); !ok {
		t.Errorf("send on the restored server: refused")
	}
}

// backupSend POSTs one text and returns its acknowledgment; false when the
// server did not answer 201.
func backupSend(t *testing.T, client *http.Client, base, key, from, to, text string) (ack, bool) {
	body, _ := json.Marshal(map[string]any{"from": from, "to": []string{to}, "message": text})
	req, err := http.NewRequest(http.MethodPost, base+apiPrefix+"/sms/messages", bytes.NewReader(body))
	if err != nil {
		t.Error(err)
		return ack{}, false
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Errorf("POST /sms/messages: %v", err)
		return ack{}, false
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	at := time.Now()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("POST /sms/messages: %d %s", resp.StatusCode, raw)
		return ack{}, false
	}
	var env struct {
		Data struct {
			Messages []struct {
				ID     int64        `json:"id"`
				Status string       `json:"status"`
				Price  money.Micros `json:"price"`
			} `json:"messages"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || len(env.Data.Messages) != 1 || env.Data.Messages[0].Status != domain.StatusSent {
		t.Errorf("POST /sms/messages: 201 body is not one sent message: %v\n%s", err, raw)
		return ack{}, false
	}
	m := env.Data.Messages[0]
	return ack{id: m.ID, price: m.Price, to: to, text: text, at: at}, true
}

// backupLeftovers fails the test if dir holds anything but the files named:
// no temporary copy, no -wal, -shm or -journal file.
func backupLeftovers(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("%s holds %v, want exactly %v", dir, got, want)
	}
}

// TestBackupRefusals: a target that cannot be written is refused before any
// work, naming the path and the reason, with nothing left behind; an
// existing file only with --force; PostgreSQL with the pointer to pg_dump;
// a database a newer Switchboard migrated is copied as it is (the backup
// migrates nothing) and its check says it is newer; a damaged copy fails
// its check, naming the check.
func TestBackupRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "live.db")
	createAccount(t, src, "Refusals Inc")

	backup := func(args ...string) (stdout, stderr string, exit int) {
		t.Helper()
		return run(t, append([]string{"backup", "--db", src}, args...)...)
	}

	// A directory that does not exist.
	missing := filepath.Join(dir, "no-such-dir", "copy.db")
	if _, stderr, exit := backup("--to", missing); exit != 1 || !strings.Contains(stderr, missing) || !strings.Contains(stderr, "does not exist") {
		t.Errorf("backup --to %s: exit %d, stderr %q; want exit 1 naming the path and that its directory does not exist", missing, exit, stderr)
	}
	// A directory this user may not write (root may write anywhere but
	// sysfs, which refuses new files: then /sys stands in).
	locked := filepath.Join(dir, "locked")
	if err := os.Mkdir(locked, 0o500); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(locked, "copy.db")
	if f, err := os.Create(filepath.Join(locked, "probe")); err == nil {
		f.Close()
		os.Remove(filepath.Join(locked, "probe"))
		target = "/sys/switchboard-backup-test.db"
		if f, err := os.Create(target); err == nil {
			f.Close()
			os.Remove(target)
			target = ""
			t.Log("this user may write everywhere, /sys included: the permission refusal is not tried")
		}
	}
	if target != "" {
		if stdout, stderr, exit := backup("--to", target); exit != 1 || stdout != "" || !strings.Contains(stderr, target) || !strings.Contains(stderr, "permission denied") {
			t.Errorf("backup --to %s: exit %d, stdout %q, stderr %q; want exit 1 naming the path and \"permission denied\"", target, exit, stdout, stderr)
		}
		if _, err := os.Stat(target); err == nil {
			t.Errorf("%s exists after the refusal", target)
		}
		backupLeftovers(t, locked)
	}

	// An existing target: refused and untouched without --force, replaced with it.
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(out, "copy.db")
	if err := os.WriteFile(existing, []byte("an older backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, exit := backup("--to", existing); exit != 1 || !strings.Contains(stderr, "already exists") || !strings.Contains(stderr, "--force") {
		t.Errorf("backup --to an existing file: exit %d, stderr %q; want exit 1, already exists, --force", exit, stderr)
	}
	if b, _ := os.ReadFile(existing); string(b) != "an older backup" {
		t.Errorf("the refused backup changed the existing file")
	}
	if stdout, stderr, exit := backup("--to", existing, "--force"); exit != 0 || !strings.Contains(stdout, "check passed") {
		t.Errorf("backup --to an existing file --force: exit %d\n%s%s", exit, stdout, stderr)
	}
	backupLeftovers(t, out, "copy.db")
	// The database itself, even with --force.
	if _, stderr, exit := backup("--to", src, "--force"); exit != 1 || !strings.Contains(stderr, "the database itself") {
		t.Errorf("backup --to the database itself: exit %d, stderr %q", exit, stderr)
	}
	// No database at --db: refused, and none created.
	nothing := filepath.Join(dir, "nothing.db")
	if _, stderr, exit := run(t, "backup", "--db", nothing, "--to", filepath.Join(out, "x.db")); exit != 1 || !strings.Contains(stderr, "no database at "+nothing) {
		t.Errorf("backup of a missing database: exit %d, stderr %q", exit, stderr)
	}
	if _, err := os.Stat(nothing); err == nil {
		t.Errorf("backup of a missing database created %s", nothing)
	}
	backupLeftovers(t, out, "copy.db")
	// Usage.
	for _, args := range [][]string{{}, {"--to", "a.db", "--check", "b.db"}, {"--check", existing, "--force"}} {
		if _, stderr, exit := backup(args...); exit != 2 {
			t.Errorf("backup %v: exit %d, stderr %q; want 2 (usage)", args, exit, stderr)
		}
	}

	// PostgreSQL: the pointer, without connecting (the URL need not answer).
	for _, db := range []string{"postgres://nobody@127.0.0.1:1/none", storetest.PostgresURL(t)} {
		if db == "" {
			continue
		}
		_, stderr, exit := run(t, "backup", "--db", db, "--to", filepath.Join(out, "pg.db"))
		if exit != 1 || !strings.Contains(stderr, "pg_dump") || !strings.Contains(stderr, "docs/operations.md") {
			t.Errorf("backup of PostgreSQL: exit %d, stderr %q; want exit 1 pointing at pg_dump and docs/operations.md", exit, stderr)
		}
	}
	backupLeftovers(t, out, "copy.db")

	// A database a newer Switchboard migrated: the backup copies it as it is
	// (a migrating open would refuse it), and the check says it is newer.
	raw, err := sql.Open("sqlite", src)
	if err != nil {
		t.Fatal(err)
	}
	_, err = raw.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES ('9999_from_the_future.sql', 1)`)
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}
	newer := filepath.Join(out, "newer.db")
	var got backupCheckOut
	cliJSON(t, src, &got, "backup", "--to", newer)
	if !got.OK || got.Schema.State != "newer" || got.Schema.Unknown != 1 || got.Schema.Latest != "9999_from_the_future.sql" {
		t.Errorf("backup of a newer database: %+v; want a passing check that names the newer schema", got)
	}

	// A damaged copy: a charge without its message fails the ledger check
	// (foreign keys are off on this connection, as they are for a careless
	// edit), and the exit status and message name it.
	damaged := filepath.Join(out, "damaged.db")
	cliJSON(t, src, &got, "backup", "--to", damaged)
	raw, err = sql.Open("sqlite", damaged)
	if err != nil {
		t.Fatal(err)
	}
	_, err = raw.Exec(`INSERT INTO ledger (account_id, message_id, amount, currency, description, created_at) VALUES (1, 424242, 7900, 'USD', 'forged', 1)`)
	raw.Close()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, exit := run(t, "backup", "--check", damaged, "--json")
	var bad backupCheckOut
	if exit != 1 || decodeOne(stdout, &bad) != nil || bad.OK || !strings.Contains(stderr, "every charge's message exists") || !strings.Contains(stderr, "foreign_key_check") {
		t.Errorf("check of a damaged copy: exit %d\nstdout %s\nstderr %s\nwant exit 1, the report, and the failed checks named", exit, stdout, stderr)
	}
	if bad.Ledger == nil || bad.Ledger.Charges != 1 || bad.Ledger.Accounts[0].Total != 7900 {
		t.Errorf("check of a damaged copy: ledger %+v; want the forged charge counted", bad.Ledger)
	}
}

// TestBackupRefusesLiveFiles: backup --to is refused, with --force too,
// whenever the target is a file of the database it copies (the database,
// its -wal, -shm, -journal, or the lock a server holds), however the path
// spells it: directly, through "..", a symlink, a hard link, a symlinked
// directory, a dangling symlink to a file not there yet, or --db spelled
// another way. Renamed over the live -wal, a copy loses every write the
// server goes on acknowledging. Each refusal names the target and the live
// file, and leaves the live files as they were: the same files (inodes),
// the database, -wal and lock byte for byte (the -shm only by identity: the
// idle server's reads may move its read marks).
func TestBackupRefusesLiveFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "live.db")
	createAccount(t, src, "Live Files")
	base := startServer(t, src)
	if r := request(t, http.MethodGet, base+"/readyz", ""); r.status != http.StatusOK {
		t.Fatalf("GET /readyz: %d", r.status)
	}
	type snapshot struct {
		fi   os.FileInfo
		body []byte
	}
	live := []string{src, src + "-wal", src + "-shm", src + ".lock"}
	take := func() map[string]snapshot {
		m := map[string]snapshot{}
		for _, f := range live {
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatalf("%s while serving: %v", f, err)
			}
			// The serving node's own background work may write the
			// database, its log and index at any moment: those are held
			// to their identity (the attack renamed a copy over one), the
			// lock, which nothing writes while serving, to its bytes too.
			var body []byte
			if strings.HasSuffix(f, ".lock") {
				body, _ = os.ReadFile(f)
			}
			m[f] = snapshot{fi, body}
		}
		return m
	}
	before := take()
	if _, err := os.Stat(src + "-journal"); err == nil {
		t.Fatalf("%s-journal exists while serving in WAL mode", src)
	}

	other := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	link := func(kind, old, name string) string {
		t.Helper()
		p := filepath.Join(other, name)
		f := os.Symlink
		if kind == "hard" {
			f = os.Link
		}
		if err := f(old, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dirLink := link("sym", dir, "dir-link")
	for _, tc := range []struct {
		db, to string
		force  bool
		live   string // the live file the refusal names
		what   string
	}{
		{src, src + "-wal", true, src + "-wal", "write-ahead log"},
		{src, src + "-wal", false, src + "-wal", "write-ahead log"},
		{src, src, true, src, "the database itself"},
		{src, src + "-shm", true, src + "-shm", "shared-memory index"},
		{src, src + ".lock", true, src + ".lock", "lock a serving switchboard holds"},
		{src, src + "-journal", true, src + "-journal", "rollback journal"},
		{src, filepath.Join(dir, "sub", "..", "live.db-wal"), true, src + "-wal", "write-ahead log"},
		{src, link("sym", src+"-wal", "wal-symlink"), true, src + "-wal", "write-ahead log"},
		{src, link("hard", src+"-wal", "wal-hardlink"), true, src + "-wal", "write-ahead log"},
		{src, link("hard", src+".lock", "lock-hardlink"), true, src + ".lock", "lock"},
		{src, filepath.Join(dirLink, "live.db-wal"), true, src + "-wal", "write-ahead log"},
		{src, filepath.Join(dirLink, "live.db-journal"), true, src + "-journal", "rollback journal"},
		{src, link("sym", src+"-journal", "dangling-journal"), true, src + "-journal", "rollback journal"},
		{filepath.Join(dirLink, "live.db"), src + "-wal", true, "live.db-wal", "write-ahead log"},
		{"sqlite://" + filepath.Join(dirLink, "live.db"), src + "-shm", true, "live.db-shm", "shared-memory index"},
	} {
		stdout, stderr, exit := run(t, "backup", "--db", tc.db, "--to", tc.to, "--force="+strconv.FormatBool(tc.force))
		if exit != 1 || stdout != "" || !strings.Contains(stderr, "cannot write the backup "+tc.to+": it is ") ||
			!strings.Contains(stderr, tc.live+", ") || !strings.Contains(stderr, tc.what) {
			t.Errorf("backup --db %s --to %s (--force=%t): exit %d, stdout %q, stderr %q; want exit 1 naming the target, %s and %q",
				tc.db, tc.to, tc.force, exit, stdout, stderr, tc.live, tc.what)
		}
		after := take()
		for _, f := range live {
			if !os.SameFile(before[f].fi, after[f].fi) || !bytes.Equal(before[f].body, after[f].body) {
				t.Fatalf("backup --to %s changed %s", tc.to, f)
			}
		}
		if _, err := os.Stat(src + "-journal"); err == nil {
			t.Fatalf("backup --to %s created %s-journal", tc.to, src)
		}
		backupLeftovers(t, dir, "live.db", "live.db-shm", "live.db-wal", "live.db.lock")
	}

	// A target of its own is written and checked.
	var check backupCheckOut
	cliJSON(t, src, &check, "backup", "--to", filepath.Join(other, "good.db"))
	if !check.OK || check.Schema.State != "current" {
		t.Errorf("backup --to a file of its own after the refusals: %+v", check)
	}
}

// --sqlite-wal-autocheckpoint takes a page count, from its variable too; a
// value that does not parse is refused naming it, not replaced by the default.
func TestSQLiteWALAutocheckpointSetting(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "w.db")
	if _, stderr, exit := runEnv(t, childEnv("SWITCHBOARD_SQLITE_WAL_AUTOCHECKPOINT=never"), "account", "create", "--db", db, "--name", "X"); exit != 2 || !strings.Contains(stderr, "SWITCHBOARD_SQLITE_WAL_AUTOCHECKPOINT") {
		t.Errorf("SWITCHBOARD_SQLITE_WAL_AUTOCHECKPOINT=never: exit %d, stderr %q; want 2 naming the variable", exit, stderr)
	}
	var out struct {
		ID int64 `json:"id"`
	}
	stdout, stderr, exit := runEnv(t, childEnv("SWITCHBOARD_SQLITE_WAL_AUTOCHECKPOINT=0"), "account", "create", "--db", db, "--name", "X", "--json")
	if exit != 0 || decodeOne(stdout, &out) != nil || out.ID != 1 {
		t.Errorf("SWITCHBOARD_SQLITE_WAL_AUTOCHECKPOINT=0: exit %d, stdout %q, stderr %q; want the account created", exit, stdout, stderr)
	}
}

// --page-cache bounds the answers kept encoded (GET /sms/unread among them):
// by default a repeated read is kept, and switchboard_store_page_cache_bytes
// shows it; 0 keeps none; a value that does not parse is refused naming it.
func TestPageCacheSetting(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "p.db")
	if _, stderr, exit := runEnv(t, childEnv("SWITCHBOARD_PAGE_CACHE=lots"), "serve", "--db", db, "--listen", "127.0.0.1:0"); exit != 2 || !strings.Contains(stderr, "SWITCHBOARD_PAGE_CACHE") {
		t.Errorf("SWITCHBOARD_PAGE_CACHE=lots: exit %d, stderr %q; want 2 naming the variable", exit, stderr)
	}
	// One database each: a database has one server.
	kept := func(flags ...string) float64 {
		t.Helper()
		db := filepath.Join(t.TempDir(), "p.db")
		account := createAccount(t, db, "Pages")
		createLine(t, db, account, "--number", "4155550100")
		key := createKey(t, db, account, "reader", "messages:read")
		base, private := startServerAddrs(t, db, append([]string{"--metrics-addr", "127.0.0.1:0"}, flags...)...)
		for range 2 {
			if r := request(t, http.MethodGet, base+apiPrefix+"/sms/unread", "Bearer "+key.Key); r.status != http.StatusOK {
				t.Fatalf("GET /sms/unread %v: status %d, body %s", flags, r.status, r.body)
			}
		}
		r := request(t, http.MethodGet, private+"/metrics", "")
		for _, line := range strings.Split(string(r.body), "\n") {
			if v, ok := strings.CutPrefix(line, "switchboard_store_page_cache_bytes "); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatalf("switchboard_store_page_cache_bytes %q: %v", v, err)
				}
				return f
			}
		}
		t.Fatalf("GET /metrics %v: no switchboard_store_page_cache_bytes\n%s", flags, r.body)
		return 0
	}
	if got := kept(); got <= 0 {
		t.Errorf("default --page-cache: %v bytes kept after two reads; want the answer kept", got)
	}
	if got := kept("--page-cache", "0"); got != 0 {
		t.Errorf("--page-cache 0: %v bytes kept; want none", got)
	}
}
