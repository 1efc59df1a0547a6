// Command inboxgen fills a database with a large shared inbox for the inbox
// benchmark (bench/inbox.sh): one account, -users users whose role sees
// every line, -lines lines, -conversations threads holding -messages
// messages in all, most threads read by everyone, some resolved and some
// assigned. Two threads are set apart for the mark-read comparison: "big"
// with -big messages and "small" with 10.
//
// Everything is written through the store's own methods, the ones real
// traffic uses (inbound texts, sends, thread reads, resolve, assign), from
// -workers goroutines so that SQLite groups the writes into shared commits.
// It prints one JSON object: the account, an all-scopes API key, the first
// user's username (password "bench-password"), and the addresses of the two
// threads.
//
//	go run ./bench/inboxgen -db /tmp/inbox.db
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/sms/smsevent"
	"switchboard/internal/store"
)

type options struct {
	db                            string
	users, lines, conversations   int
	messages, big, workers        int
	readShare, resolved, assigned float64
	days                          int
}

func main() {
	var o options
	flag.StringVar(&o.db, "db", "", "database: a SQLite path or postgres:// URL (required; should be empty)")
	flag.IntVar(&o.users, "users", 20, "users, all seeing every line")
	flag.IntVar(&o.lines, "lines", 10, "SMS lines")
	flag.IntVar(&o.conversations, "conversations", 50_000, "conversations")
	flag.IntVar(&o.messages, "messages", 1_000_000, "messages in all")
	flag.IntVar(&o.big, "big", 10_000, "messages in the big thread")
	flag.IntVar(&o.workers, "workers", 64, "concurrent writers")
	flag.Float64Var(&o.readShare, "read", 0.9, "share of threads every user has read")
	flag.Float64Var(&o.resolved, "resolved", 0.5, "share of threads resolved")
	flag.Float64Var(&o.assigned, "assigned", 0.3, "share of threads assigned to a user")
	flag.IntVar(&o.days, "days", 90, "days the messages span, ending now (0: real time)")
	flag.Parse()
	if o.db == "" || o.conversations < 3 || o.messages < o.big+10+(o.conversations-2) {
		fmt.Fprintln(os.Stderr, "usage: inboxgen -db DSN [-conversations N -messages N -users N -lines N -big N]")
		os.Exit(2)
	}
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "inboxgen:", err)
		os.Exit(1)
	}
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
	UserIDs    []int64 `json:"userIds"`
	LineCount  int     `json:"lines"`
	UnreadPart float64 `json:"unreadShare"`
}

func run(ctx context.Context, o options) error {
	started := time.Now()
	st, err := store.Open(ctx, o.db)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	acct := domain.Account{Name: "Inbox Bench Co"}
	if err := st.CreateAccount(ctx, &acct); err != nil {
		return err
	}
	perms, _ := domain.ParsePermissions("users:all,numbers:all")
	role := domain.Role{AccountID: acct.ID, Name: "agent", Permissions: perms}
	if err := st.CreateRole(ctx, &role); err != nil {
		return err
	}
	hash, err := auth.HashPassword("bench-password")
	if err != nil {
		return err
	}
	res := result{Username: "agent1", Threads: o.conversations, Engine: string(st.Engine()), LineCount: o.lines, UnreadPart: 1 - o.readShare}
	for i := 1; i <= o.users; i++ {
		u := domain.User{AccountID: acct.ID, RoleID: role.ID, Username: fmt.Sprintf("agent%d", i), PasswordHash: hash,
			FirstName: "Agent", LastName: fmt.Sprint(i)}
		if err := st.CreateUser(ctx, &u); err != nil {
			return err
		}
		res.UserIDs = append(res.UserIDs, u.ID)
	}
	var lines []domain.Line
	for i := range o.lines {
		l := domain.Line{AccountID: acct.ID, Number: fmt.Sprintf("1415550%04d", i), Name: fmt.Sprint("Line ", i), SMSEnabled: true}
		if err := st.CreateLine(ctx, &l); err != nil {
			return err
		}
		lines = append(lines, l)
	}
	if res.Key, _, err = auth.NewAPIKey(ctx, st, acct.ID, "bench", auth.AllScopes); err != nil {
		return err
	}
	if err := st.AllowHost(ctx, "app.example.test"); err != nil {
		return err
	}
	res.AccountID, res.Line = acct.ID, lines[0].Number
	readers := res.UserIDs // every user sees every line

	// Thread 0 is the big one, thread 1 the small one; the rest share what
	// is left, a few more or less each.
	sizes := make([]int, o.conversations)
	sizes[0], sizes[1] = o.big, 10
	rest := o.messages - o.big - 10
	for i := 2; i < o.conversations; i++ {
		sizes[i] = rest / (o.conversations - 2)
	}
	for i := 0; i < rest%(o.conversations-2); i++ {
		sizes[2+i]++
	}
	res.Big, res.Small, res.BigCount = customer(0), customer(1), o.big

	var next, written atomic.Int64
	if o.days > 0 {
		// Time runs from o.days ago to now as the messages are written, so
		// that conversations spread over days as a real inbox's do.
		span, begin := time.Duration(o.days)*24*time.Hour, time.Now().UTC().Add(-time.Duration(o.days)*24*time.Hour)
		st.SetClock(func() time.Time {
			return begin.Add(time.Duration(float64(span) * float64(written.Load()) / float64(o.messages)))
		})
	}
	var wg sync.WaitGroup
	errs := make(chan error, o.workers)
	progress := time.NewTicker(10 * time.Second)
	defer progress.Stop()
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-progress.C:
				fmt.Fprintf(os.Stderr, "inboxgen: %d messages, %d threads started, %s\n", written.Load(), next.Load(), time.Since(started).Round(time.Second))
			case <-done:
				return
			}
		}
	}()
	for w := range o.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 99))
			for {
				i := int(next.Add(1) - 1)
				if i >= o.conversations {
					return
				}
				line := lines[i%len(lines)]
				if i < 2 {
					line = lines[0]
				}
				if err := thread(ctx, st, o, r, acct.ID, line, customer(i), sizes[i], readers, i < 2, &written); err != nil {
					errs <- fmt.Errorf("thread %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	select {
	case err := <-errs:
		return err
	default:
	}
	res.Messages = written.Load()
	if err := deliverAll(ctx, o.db); err != nil {
		return err
	}
	res.Seconds = time.Since(started).Seconds()
	return json.NewEncoder(os.Stdout).Encode(res)
}

func customer(i int) string { return fmt.Sprintf("1212%07d", i) }

var texts = []string{
	"Hi, can I move my appointment to Thursday?",
	"Thanks! See you then.",
	"Is the 3pm slot still free?",
	"Running late, 10 minutes",
	"Can you resend the invoice please?",
}

// thread writes one conversation's messages, alternating roughly 60/40
// between texts received and sent, then its state: read by every user (most
// threads; never the two compared threads, which every user has unread),
// resolved, assigned.
func thread(ctx context.Context, st *store.Store, o options, r *rand.Rand, account int64, line domain.Line, number string, n int,
	readers []int64, compared bool, written *atomic.Int64) error {
	for m := range n {
		body := texts[r.IntN(len(texts))]
		if m == 0 || r.IntN(10) < 6 {
			in := store.Inbound{Line: line, From: number, Participants: []string{number}, Body: body, Readers: readers}
			if err := smsevent.SetReceived(&in); err != nil {
				return err
			}
			if _, err := st.StoreInbound(ctx, in); err != nil {
				return err
			}
		} else {
			o := &store.Outbound{AccountID: account, LineID: line.ID, From: line.Number, To: []string{number}, Participants: number,
				Body: body, Type: domain.BillingSMS, Units: 1, UnitPrice: 7900, Price: 7900, SentBy: readers[r.IntN(len(readers))]}
			id, err := st.CreateOutbound(ctx, o)
			if err != nil {
				return err
			}
			sent, err := smsevent.Sent(id, o.From, o.To)
			if err != nil {
				return err
			}
			if err := st.MarkOutboundSent(ctx, o, "bench", sent); err != nil {
				return err
			}
		}
		written.Add(1)
	}
	key := domain.ConversationKey{Line: line, Participants: []string{number}}
	c, _, err := st.Conversation(ctx, key)
	if err != nil {
		return err
	}
	if !compared && r.Float64() < o.readShare {
		for _, u := range readers {
			if err := st.MarkThreadRead(ctx, c.ID, u, store.Change{}); err != nil {
				return err
			}
		}
	}
	ch := store.StateChange{Key: key, Actor: readers[r.IntN(len(readers))]}
	if r.Float64() < o.assigned {
		if _, err := st.Assign(ctx, ch, readers[r.IntN(len(readers))]); err != nil {
			return err
		}
	}
	if r.Float64() < o.resolved {
		if _, err := st.Resolve(ctx, ch, ch.Actor, "", ch.Actor); err != nil {
			return err
		}
	}
	return nil
}

// deliverAll gives every generated send its delivery receipt, in one
// statement: an inbox of a quarter's texts has them, and a send left
// awaiting its receipt makes the sim carrier rebuild and deliver every one
// of them when a server starts on the database, a storm of receipts and
// events (379,260 on the default database) under whatever is measured.
func deliverAll(ctx context.Context, dsn string) error {
	driver, name := "sqlite", strings.TrimPrefix(dsn, "sqlite://")
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		driver, name = "pgx", dsn
	}
	db, err := sql.Open(driver, name)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, `UPDATE messages SET delivery_status = 'delivered', delivery_error = '', delivery_at = created_at
		WHERE direction = 'out' AND status = 'sent' AND delivery_status IS NULL`)
	if err != nil {
		return fmt.Errorf("deliver the generated sends: %w", err)
	}
	return nil
}
