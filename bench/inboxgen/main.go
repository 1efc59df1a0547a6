// Command inboxgen fills a database with a large shared inbox for the inbox
// benchmark (bench/inbox.sh): one account, -users users whose role sees
// every line, -lines lines, -conversations threads holding -messages
// messages in all, most threads read by everyone, some resolved and some
// assigned. Two threads are set apart for the mark-read comparison: "big"
// with -big messages and "small" with 10.
//
// What is written is decided first, from -seed (plan.go), and then written
// one of two ways. By default on SQLite, through the store's own methods,
// the ones real traffic uses (inbound texts, sends, thread reads, resolve,
// assign), from -workers goroutines so that SQLite groups the writes into
// shared commits; with -workers 1, in the plan's order, which makes the
// database the same on every run. By default on PostgreSQL (-copy), where
// the store's methods write about 143 messages a second: the account, its
// users, lines and key through the store, then the threads with COPY and
// what the store derives from them with set-based SQL (copy.go), giving the
// database -workers 1 gives (equal_test.go).
//
// Several accounts may share a database: a second run with another
// -account, -usernames and -numbers adds one (bench/inbox.sh's TENANT2).
//
// It prints one JSON object: the account, an all-scopes API key, the first
// user's username (password "bench-password"), the addresses of the two
// threads, and what a sender needs to reach the threads (every line's
// number, the customers' number format).
//
//	go run ./bench/inboxgen -db /tmp/inbox.db
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store"
)

type options struct {
	db                            string
	users, lines, conversations   int
	messages, big, workers        int
	readShare, resolved, assigned float64
	days                          int
	end                           time.Time
	seed                          uint64
	copy                          bool
	account, usernames, numbers   string
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "inboxgen:", err)
		os.Exit(2)
	}
	res, err := run(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "inboxgen:", err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(res)
}

func parseFlags(args []string) (options, error) {
	var o options
	var end string
	fs := flag.NewFlagSet("inboxgen", flag.ContinueOnError)
	fs.StringVar(&o.db, "db", "", "database: a SQLite path or postgres:// URL (required; should hold no other -usernames or -numbers)")
	fs.IntVar(&o.users, "users", 20, "users, all seeing every line")
	fs.IntVar(&o.lines, "lines", 10, "SMS lines")
	fs.IntVar(&o.conversations, "conversations", 50_000, "conversations")
	fs.IntVar(&o.messages, "messages", 1_000_000, "messages in all")
	fs.IntVar(&o.big, "big", 10_000, "messages in the big thread")
	fs.IntVar(&o.workers, "workers", 64, "concurrent writers of the store path (1: in the plan's order, the same database every run)")
	fs.Float64Var(&o.readShare, "read", 0.9, "share of threads every user has read")
	fs.Float64Var(&o.resolved, "resolved", 0.5, "share of threads resolved")
	fs.Float64Var(&o.assigned, "assigned", 0.3, "share of threads assigned to a user")
	fs.IntVar(&o.days, "days", 90, "days the messages span, ending at -end (0: real time)")
	fs.StringVar(&end, "end", "", "when the messages end, RFC 3339 (default now)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of everything the inbox holds")
	fs.BoolVar(&o.copy, "copy", false, "PostgreSQL only: write the threads with COPY (default when -db is a postgres:// URL)")
	fs.StringVar(&o.account, "account", "Inbox Bench Co", "the account's name")
	fs.StringVar(&o.usernames, "usernames", "agent", "the users' usernames: this and 1 to -users")
	fs.StringVar(&o.numbers, "numbers", "1415550", "the lines' numbers: this and 0000 to -lines - 1")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["copy"] {
		o.copy = isPostgres(o.db)
	}
	o.end = time.Now().UTC()
	if end != "" {
		t, err := time.Parse(time.RFC3339Nano, end)
		if err != nil {
			return o, fmt.Errorf("-end: %w", err)
		}
		o.end = t.UTC()
	}
	return o, o.check()
}

func (o options) check() error {
	switch {
	case o.db == "" || o.conversations < 3 || o.users < 1 || o.lines < 1 || o.big < 1 || o.messages < o.big+10+(o.conversations-2):
		return errors.New("usage: inboxgen -db DSN [-conversations N -messages N -users N -lines N -big N] (messages >= big + 10 + conversations - 2)")
	case o.copy && !isPostgres(o.db):
		return errors.New("-copy needs a postgres:// database")
	case o.workers < 1:
		return errors.New("-workers must be at least 1")
	}
	return nil
}

func isPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// result is what the benchmark script needs.
type result struct {
	AccountID  int64   `json:"accountId"`
	Key        string  `json:"key"`
	Username   string  `json:"username"`
	Line       string  `json:"line"`
	Big        string  `json:"big"`
	Small      string  `json:"small"`
	BigCount   int     `json:"bigMessages"`
	Messages   int64   `json:"messages"`
	Threads    int     `json:"conversations"`
	Seconds    float64 `json:"seconds"`
	Engine     string  `json:"engine"`
	Mode       string  `json:"mode"`
	UserIDs    []int64 `json:"userIds"`
	LineCount  int     `json:"lines"`
	UnreadPart float64 `json:"unreadShare"`
	// Numbers are every line's number: thread i is on line i % len(Numbers)
	// (threads 0 and 1 on the first), with customer Customers % i.
	Numbers   []string `json:"lineNumbers"`
	Customers string   `json:"customers"`
}

// setup is what the store created for the threads to be written in.
type setup struct {
	account int64
	lines   []domain.Line
	users   []int64 // user ids; a plan's user index is an index here
}

func run(ctx context.Context, o options) (result, error) {
	started := time.Now()
	st, err := store.Open(ctx, o.db)
	if err != nil {
		return result{}, err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return result{}, err
	}
	p := newPlan(o)
	w := &storeWriter{st: st, p: p}
	if o.days > 0 {
		// Every write is stamped with the plan's time of its step (the
		// setup: the span's beginning).
		st.SetClock(func() time.Time { return p.clock(int(w.written.Load())) })
	}
	res, s, err := provision(ctx, st, o)
	if err != nil {
		return res, err
	}
	w.s = s
	switch {
	case o.copy:
		res.Mode = "copy"
		err = copyInbox(ctx, o.db, p, s)
	case o.workers == 1:
		res.Mode = "store, in order"
		err = w.inOrder(ctx)
	default:
		res.Mode = "store, concurrent"
		err = w.concurrently(ctx, o.workers)
	}
	if err != nil {
		return res, err
	}
	if err := finish(ctx, o.db, s.account); err != nil {
		return res, err
	}
	res.Messages = int64(o.messages)
	res.Seconds = time.Since(started).Seconds()
	return res, nil
}

// provision creates, through the store, the account, its role (every
// line, every user), users, lines and all-scopes key.
func provision(ctx context.Context, st *store.Store, o options) (result, setup, error) {
	var s setup
	acct := domain.Account{Name: o.account}
	if err := st.CreateAccount(ctx, &acct); err != nil {
		return result{}, s, err
	}
	s.account = acct.ID
	perms, _ := domain.ParsePermissions("users:all,numbers:all")
	role := domain.Role{AccountID: acct.ID, Name: "agent", Permissions: perms}
	if err := st.CreateRole(ctx, &role); err != nil {
		return result{}, s, err
	}
	hash, err := auth.HashPassword("bench-password")
	if err != nil {
		return result{}, s, err
	}
	for i := 1; i <= o.users; i++ {
		u := domain.User{AccountID: acct.ID, RoleID: role.ID, Username: fmt.Sprint(o.usernames, i), PasswordHash: hash,
			FirstName: "Agent", LastName: fmt.Sprint(i)}
		if err := st.CreateUser(ctx, &u); err != nil {
			return result{}, s, err
		}
		s.users = append(s.users, u.ID)
	}
	res := result{AccountID: acct.ID, Username: o.usernames + "1", Threads: o.conversations, Engine: string(st.Engine()),
		LineCount: o.lines, UnreadPart: 1 - o.readShare, UserIDs: s.users, Customers: customerFormat,
		Big: customer(0), Small: customer(1), BigCount: o.big}
	for i := range o.lines {
		l := domain.Line{AccountID: acct.ID, Number: fmt.Sprintf("%s%04d", o.numbers, i), Name: fmt.Sprint("Line ", i), SMSEnabled: true}
		if err := st.CreateLine(ctx, &l); err != nil {
			return result{}, s, err
		}
		s.lines = append(s.lines, l)
		res.Numbers = append(res.Numbers, l.Number)
	}
	res.Line = res.Numbers[0]
	if res.Key, _, err = auth.NewAPIKey(ctx, st, acct.ID, "bench", auth.AllScopes); err != nil {
		return result{}, s, err
	}
	return res, s, st.AllowHost(ctx, "app.example.test")
}

// finish gives the account's generated sends their delivery receipts and,
// on PostgreSQL, counts every generated event as fanned out, each in one
// statement. An inbox of a quarter's texts has its receipts, and a send left
// awaiting its receipt makes the sim carrier rebuild and deliver every one
// of them when a server starts on the database, a storm of receipts and
// events (379,260 on the default database) under whatever is measured; the
// events, a million with no subscription to deliver them to, would be
// fanned out by the first server in 5,000 transactions of 200.
func finish(ctx context.Context, dsn string, account int64) error {
	driver, name := "sqlite", strings.TrimPrefix(dsn, "sqlite://")
	if isPostgres(dsn) {
		driver, name = "pgx", dsn
	}
	db, err := sql.Open(driver, name)
	if err != nil {
		return err
	}
	defer db.Close()
	q := `UPDATE messages SET delivery_status = 'delivered', delivery_error = '', delivery_at = created_at
		WHERE account_id = $1 AND direction = 'out' AND status = 'sent' AND delivery_status IS NULL`
	if driver == "sqlite" {
		q = strings.Replace(q, "$1", "?", 1)
	}
	if _, err := db.ExecContext(ctx, q, account); err != nil {
		return fmt.Errorf("deliver the generated sends: %w", err)
	}
	if driver != "pgx" {
		return nil
	}
	_, err = db.ExecContext(ctx, `UPDATE event_fanout f SET xid = e.xid, event_id = e.id
		FROM (SELECT xid, id FROM events WHERE xid IS NOT NULL ORDER BY xid DESC, id DESC LIMIT 1) e
		WHERE f.id = 1 AND (e.xid, e.id) > (f.xid, f.event_id)`)
	if err != nil {
		return fmt.Errorf("fan out the generated events: %w", err)
	}
	return nil
}
