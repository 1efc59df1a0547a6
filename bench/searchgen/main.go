// Command searchgen fills a database for the search benchmark (bench/search.sh)
// the fast way: the account, users and lines through the store, then
// conversations and messages as multi-row INSERTs straight into their
// tables (no per-message transaction, no unread state: search reads neither).
// Message texts are drawn from a vocabulary with a Zipf distribution, as
// real texts are, with the benchmark's words planted at known rates:
// "invoice" in 8% of texts, "reschedule" and "rescheduled" in 1% each,
// "café" in 0.1%.
//
// The rows are written without the search index; the index is then built
// as an upgrade builds it, by migration 0034 (its rows and its record are
// dropped first), and that migration is timed: its progress goes to stderr.
// It prints one JSON object: account, API key, username (password
// "bench-password"), counts and the migration's seconds.
//
//	go run ./bench/searchgen -db /tmp/search.db
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/contacts"
	"switchboard/internal/domain"
	"switchboard/internal/store"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"
)

type options struct {
	db                      string
	messages, conversations int
	lines                   int
	contacts                int
	days                    int
}

type result struct {
	AccountID        int64   `json:"accountId"`
	Key              string  `json:"key"`
	Username         string  `json:"username"`
	Engine           string  `json:"engine"`
	Messages         int     `json:"messages"`
	Conversations    int     `json:"conversations"`
	Contacts         int     `json:"contacts"`
	LoadSeconds      float64 `json:"loadSeconds"`
	MigrationSeconds float64 `json:"migrationSeconds"`
}

func main() {
	var o options
	flag.StringVar(&o.db, "db", "", "database: a SQLite path or postgres:// URL (required; should be empty)")
	flag.IntVar(&o.messages, "messages", 1_000_000, "messages")
	flag.IntVar(&o.conversations, "conversations", 50_000, "conversations")
	flag.IntVar(&o.lines, "lines", 10, "SMS lines")
	flag.IntVar(&o.contacts, "contacts", 20_000, "contacts, holding the first conversations' numbers (at most -conversations)")
	flag.IntVar(&o.days, "days", 90, "days the messages span, ending now")
	flag.Parse()
	if o.db == "" {
		fmt.Fprintln(os.Stderr, "usage: searchgen -db DSN [-messages N -conversations N]")
		os.Exit(2)
	}
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "searchgen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	st, err := store.Open(ctx, o.db)
	if err != nil {
		return err
	}
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	acct := domain.Account{Name: "Search Bench Co"}
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
	u := domain.User{AccountID: acct.ID, RoleID: role.ID, Username: "agent1", PasswordHash: hash, FirstName: "Agent", LastName: "1"}
	if err := st.CreateUser(ctx, &u); err != nil {
		return err
	}
	var lines []domain.Line
	for i := range o.lines {
		l := domain.Line{AccountID: acct.ID, Number: fmt.Sprintf("1415550%04d", i), Name: fmt.Sprint("Line ", i), SMSEnabled: true}
		if err := st.CreateLine(ctx, &l); err != nil {
			return err
		}
		lines = append(lines, l)
	}
	res := result{AccountID: acct.ID, Username: "agent1", Engine: string(st.Engine()), Messages: o.messages, Conversations: o.conversations}
	if res.Key, _, err = auth.NewAPIKey(ctx, st, acct.ID, "bench", auth.AllScopes); err != nil {
		return err
	}
	if err := st.AllowHost(ctx, "app.example.test"); err != nil {
		return err
	}
	if res.Contacts, err = addContacts(ctx, st, acct.ID, min(o.contacts, o.conversations)); err != nil {
		return err
	}
	st.Close()

	driver, name := "sqlite", strings.TrimPrefix(o.db, "sqlite://")
	pg := strings.HasPrefix(o.db, "postgres://") || strings.HasPrefix(o.db, "postgresql://")
	if pg {
		driver, name = "pgx", o.db
	}
	db, err := sql.Open(driver, name)
	if err != nil {
		return err
	}
	defer db.Close()
	started := time.Now()
	if err := load(ctx, db, pg, o, acct.ID, lines); err != nil {
		return err
	}
	res.LoadSeconds = time.Since(started).Seconds()

	// Undo migration 0034, so that opening the store runs it as an upgrade.
	for _, q := range []string{`DROP TABLE message_words`, `DROP TABLE conversation_numbers`, `DELETE FROM schema_migrations WHERE version = '0034_search.sql'`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	if pg {
		db.ExecContext(ctx, `VACUUM ANALYZE messages`)
		db.ExecContext(ctx, `VACUUM ANALYZE conversations`)
	}
	started = time.Now()
	st, err = store.OpenWith(ctx, o.db, store.Options{Log: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return err
	}
	res.MigrationSeconds = time.Since(started).Seconds()
	if pg {
		db.ExecContext(ctx, `VACUUM ANALYZE message_words`)
		db.ExecContext(ctx, `VACUUM ANALYZE conversation_numbers`)
	} else {
		db.ExecContext(ctx, `ANALYZE`)
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// vocabulary is n made-up words (syllables), ranked for a Zipf draw.
func vocabulary(r *rand.Rand, n int) []string {
	syl := []string{"ka", "lo", "mi", "ne", "ru", "ta", "vo", "si", "de", "pa", "gu", "te", "ri", "mo", "la", "be", "zo", "fi", "na", "co"}
	seen := map[string]bool{}
	out := make([]string, 0, n)
	for len(out) < n {
		var b strings.Builder
		for range 1 + r.IntN(4) {
			b.WriteString(syl[r.IntN(len(syl))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// body is one text: 4 to 20 words of the vocabulary, and the planted words.
func body(r *rand.Rand, z *rand.Zipf, vocab []string) string {
	var ws []string
	for range 4 + r.IntN(17) {
		ws = append(ws, vocab[z.Uint64()])
	}
	plant := func(share float64, w string) {
		if r.Float64() < share {
			ws[r.IntN(len(ws))] = w
		}
	}
	plant(0.08, "invoice")
	plant(0.01, "reschedule")
	plant(0.01, "rescheduled")
	plant(0.001, "café")
	ws[0] = strings.ToUpper(ws[0][:1]) + ws[0][1:]
	return strings.Join(ws, " ") + "."
}

// customer is conversation i's number: valid as dialled (an exchange from
// 200 up), so that a contact can hold it.
func customer(i int) string { return fmt.Sprintf("1212%03d%04d", 200+i/10000, i%10000) }

// Contact names: every pair of a first and a last name, in turn, so that a
// last name such as "Okafor" is one contact in len(lastNames).
var (
	firstNames = strings.Fields(`Aaliyah Ben Carmen Dmitri Elena Farid Grace Hiro Ines Jamal Kofi Lena Mateo Nadia
		Oscar Priya Quentin Rosa Sven Tanvi Umar Vera Wen Ximena Yusuf Zoe Margaret Pedro Anika Tomasz`)
	lastNames = strings.Fields(`Okafor Lindqvist Moreau Tanaka Haddad Kowalski Mensah Oliveira Petrov Nguyen
		Schmidt Rossi Dubois Fernandes Ivanova Kaur Larsen Murphy Novak Park Quinn Reyes Sato Torres Ueda Vasquez
		Weber Xu Yilmaz Zhang Abbott Brennan Castillo Delgado Eriksen Fischer Gallo Horvat Ibarra Jensen Keller
		Lopez Marino Nakamura Ortega Pereira Romano Silva Tran Urban`)
)

// addContacts imports n contacts through the address book's import, each
// holding customer(i)'s number, so that the search's contacts group and the
// names on its hits come from a populated book.
func addContacts(ctx context.Context, st *store.Store, account int64, n int) (int, error) {
	p := auth.Principal{AccountID: account, Scopes: auth.AllScopes}
	svc := contacts.New(st)
	for start := 0; start < n; start += contacts.MaxImportRows {
		var b strings.Builder
		b.WriteString("Name,Phone,Company\n")
		for i := start; i < min(n, start+contacts.MaxImportRows); i++ {
			fmt.Fprintf(&b, "%s %s,+%s,%s Ltd\n", firstNames[i%len(firstNames)], lastNames[(i/len(firstNames))%len(lastNames)], customer(i), lastNames[i%len(lastNames)])
		}
		rep, err := svc.Import(ctx, p, contacts.CSV, []byte(b.String()), nil)
		if err != nil {
			return 0, err
		}
		if len(rep.Skipped) > 0 {
			return 0, fmt.Errorf("contacts: %d skipped, the first: %+v", len(rep.Skipped), rep.Skipped[0])
		}
	}
	return n, nil
}

// load writes the conversations, then the messages (ids 1..n in time
// order, each conversation's newest known in advance), in transactions of
// 20,000 rows.
func load(ctx context.Context, db *sql.DB, pg bool, o options, account int64, lines []domain.Line) error {
	r := rand.New(rand.NewPCG(33, 1))
	vocab := vocabulary(r, 20000)
	z := rand.NewZipf(r, 1.1, 1, uint64(len(vocab)-1))
	begin := time.Now().Add(-time.Duration(o.days) * 24 * time.Hour).UnixMicro()
	step := int64(o.days) * 24 * int64(time.Hour/time.Microsecond) / int64(o.messages)
	convOf := make([]int, o.messages)
	last := make([]int, o.conversations)
	for i := range convOf {
		c := r.IntN(o.conversations)
		if i < o.conversations {
			c = i // every conversation has a message
		}
		convOf[i] = c
		last[c] = i
	}
	bind := func(q string) string {
		if !pg {
			return q
		}
		var b strings.Builder
		n := 0
		for _, c := range q {
			if c == '?' {
				n++
				fmt.Fprintf(&b, "$%d", n)
				continue
			}
			b.WriteRune(c)
		}
		return b.String()
	}
	// Conversation ids are 1..c (an empty database).
	insert := func(head string, cols, rows int, arg func(i int) []any) error {
		const perStmt, perTx = 500, 20000
		for start := 0; start < rows; start += perTx {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			for s := start; s < min(start+perTx, rows); s += perStmt {
				e := min(s+perStmt, rows, start+perTx)
				row := "(" + strings.TrimSuffix(strings.Repeat("?, ", cols), ", ") + ")"
				q := head + " VALUES " + row + strings.Repeat(", "+row, e-s-1)
				var args []any
				for i := s; i < e; i++ {
					args = append(args, arg(i)...)
				}
				if _, err := tx.ExecContext(ctx, bind(q), args...); err != nil {
					tx.Rollback()
					return err
				}
			}
			if err := tx.Commit(); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "searchgen: %s %d of %d\n", strings.Fields(head)[2], min(start+perTx, rows), rows)
		}
		return nil
	}
	err := insert(`INSERT INTO conversations (id, account_id, line_id, participants, last_message_id, last_message_at, created_at, resolved_at, resolved_by)`, 9, o.conversations,
		func(i int) []any {
			var resolved any
			if i%2 == 0 {
				resolved = begin + int64(last[i])*step + 1
			}
			return []any{i + 1, account, lines[i%len(lines)].ID, customer(i), last[i] + 1, begin + int64(last[i])*step, begin, resolved, nil}
		})
	if err != nil {
		return err
	}
	return insert(`INSERT INTO messages (id, account_id, conversation_id, line_id, direction, from_number, to_numbers, body, type, status, delivery_status, created_at)`, 12, o.messages,
		func(i int) []any {
			c := convOf[i]
			line := lines[c%len(lines)].Number
			dir, from, to, status, delivery := "in", customer(c), `["`+line+`"]`, "received", any(nil)
			if r.IntN(10) >= 6 {
				// Delivered long ago, as in a real account: a sent text
				// without its report would have the simulator replay one
				// at start, a million writes beside the benchmark.
				dir, from, to, status, delivery = "out", line, `["`+customer(c)+`"]`, "sent", "delivered"
			}
			return []any{i + 1, account, c + 1, lines[c%len(lines)].ID, dir, from, to, body(r, z, vocab), "sms", status, delivery, begin + int64(i)*step}
		})
}
