package store_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"switchboard/internal/apitest"
	"switchboard/internal/domain"
	"switchboard/internal/sms/smsevent"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// pageLoads counts the loads of one kept page, whose answer is a counter
// the loader moves: an answer kept is the count of the load that made it.
type pageLoads struct{ n int }

func (p *pageLoads) get(t *testing.T, s *store.Store) string {
	t.Helper()
	b, err := s.FirstPage(ctx, 1, "test:page", func() ([]byte, error) {
		p.n++
		return fmt.Appendf(nil, "load %d", p.n), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFirstPageStaleAfterAnyCommit checks that a kept page is answered
// again only while nothing was committed: not after a write of this store,
// nor after one of another store on the same database (the CLI, another
// node), whatever kind of write (KeepCache writes included: an account
// created goes through the same committer as a send).
func TestFirstPageStaleAfterAnyCommit(t *testing.T) {
	for _, e := range storetest.Engines(t) {
		t.Run(string(e), func(t *testing.T) {
			server, cli := serverAndCLI(t, storetest.DSN(t, e))
			var p pageLoads
			if a, b := p.get(t, server), p.get(t, server); a != "load 1" || b != "load 1" {
				t.Fatalf("unchanged database: %q then %q, want load 1 twice", a, b)
			}
			for i, w := range []*store.Store{server, cli} {
				before := p.n
				mustAccount(t, w, fmt.Sprintf("Writer %d", i))
				// At once, even on PostgreSQL for another node's write
				// (its notification is behind the page's fence).
				if got := p.get(t, server); got == fmt.Sprintf("load %d", before) {
					t.Fatalf("write %d: the kept page was answered after a commit", i)
				}
			}
			// Kept again.
			a := p.get(t, server)
			if b := p.get(t, server); a != b {
				t.Fatalf("unchanged database: %q then %q", a, b)
			}
		})
	}
}

// TestFirstPagesOffWhileNotListening checks the read cache's rule on
// PostgreSQL: while the notification connection is lost no page is answered
// from memory (every read loads), and once it listens again what was kept
// before is not answered either.
func TestFirstPagesOffWhileNotListening(t *testing.T) {
	if storetest.PostgresURL(t) == "" {
		t.Skip("PostgreSQL only")
	}
	server, cli := serverAndCLI(t, storetest.DSN(t, store.Postgres))
	var p pageLoads
	kept := p.get(t, server)
	if p.get(t, server) != kept {
		t.Fatal("not kept while listening")
	}
	if err := server.KillCacheListener(ctx); err != nil {
		t.Fatal(err)
	}
	apitest.Eventually(t, "the pages to turn off", func() bool { return !server.CacheServing() })
	mustAccount(t, cli, "Written while nobody listens")
	a, b := p.get(t, server), p.get(t, server)
	if a == kept || a == b {
		t.Fatalf("while not listening: %q then %q (kept before: %q): answered from memory", a, b, kept)
	}
	server.RedialCacheListener()
	apitest.Eventually(t, "the pages to serve again", server.CacheServing)
	c := p.get(t, server)
	if c == b || c == kept || p.get(t, server) != c {
		t.Fatalf("after listening again: %q (before: %q, %q), then not kept", c, kept, b)
	}
}

// TestFirstPagesBounded checks that the pages' memory stays within
// Options.PageBytes however many keys are read.
func TestFirstPagesBounded(t *testing.T) {
	const budget = 64 << 10
	s, err := store.OpenWith(ctx, storetest.DSN(t, store.SQLite), store.Options{PageBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	mustAccount(t, s, "Acme") // a commit, so that the WAL index exists
	body := []byte(strings.Repeat("x", 1000))
	for i := range 1000 {
		if _, err := s.FirstPage(ctx, 1, fmt.Sprint("k", i), func() ([]byte, error) { return body, nil }); err != nil {
			t.Fatal(err)
		}
		if n, bytes := s.PageStats(); bytes > budget || n == 0 {
			t.Fatalf("after %d pages: %d kept in %d bytes, budget %d", i+1, n, bytes, budget)
		}
	}
	if n, _ := s.PageStats(); n < 40 {
		t.Fatalf("only %d pages of 1 KB kept in %d bytes", n, budget)
	}
}

// TestFirstPagesPerAccount checks that a kept page is its account's: the
// writes of another account leave it kept (its load is not called again),
// and it is dropped, and answered fresh, after a write naming its account,
// a write naming none, and a commit of another process (SQLite: this one
// cannot tell which accounts it touched) or another node naming its
// account (PostgreSQL: the node's commit notification names them). The
// page is the account's conversation list, so that a page answered stale
// shows the wrong state.
func TestFirstPagesPerAccount(t *testing.T) {
	for _, e := range storetest.Engines(t) {
		t.Run(string(e), func(t *testing.T) {
			dsn := storetest.DSN(t, e)
			server, cli := serverAndCLI(t, dsn)
			keys := map[int64]domain.ConversationKey{}
			var ids []int64
			for _, name := range []string{"A", "B"} {
				acct := mustAccount(t, server, name)
				line := storetest.Line(t, server, acct.ID, nil)
				m := storetest.Message(t, server, line, nil)
				keys[acct.ID] = domain.ConversationKey{Line: line, Participants: []string{m.From}}
				ids = append(ids, acct.ID)
			}
			a, b := ids[0], ids[1]
			loads := map[int64]int{}
			// page is account's list as kept, and as the database has it.
			page := func(account int64) (kept, now string) {
				t.Helper()
				load := func() ([]byte, error) {
					list, err := server.ListConversations(ctx, store.ConversationFilter{AccountID: account, Limit: 10})
					if err != nil {
						return nil, err
					}
					var out []byte
					for _, c := range list {
						out = fmt.Appendf(out, "%d resolved=%t;", c.ID, c.ResolvedAt != nil)
					}
					return out, nil
				}
				body, err := server.FirstPage(ctx, account, fmt.Sprint("test:list:", account), func() ([]byte, error) {
					loads[account]++
					return load()
				})
				if err != nil {
					t.Fatal(err)
				}
				fresh, err := load()
				if err != nil {
					t.Fatal(err)
				}
				return string(body), string(fresh)
			}
			resolve := func(s *store.Store, account int64, resolved bool) {
				t.Helper()
				ch := store.StateChange{Key: keys[account]}
				var err error
				if resolved {
					_, err = s.Resolve(ctx, ch, 0, "", 0)
				} else {
					_, err = s.Reopen(ctx, ch)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			// want checks B's page after a write: kept (not loaded again) or
			// loaded anew, and the database's either way.
			want := func(what string, reload bool) {
				t.Helper()
				before := loads[b]
				kept, now := page(b)
				if kept != now {
					t.Fatalf("%s: B's page answered %q, the database has %q", what, kept, now)
				}
				if got := loads[b] - before; got != map[bool]int{false: 0, true: 1}[reload] {
					t.Fatalf("%s: B's page loaded %d times, want reloaded %t", what, got, reload)
				}
			}
			page(a)
			want("first read", true)
			want("nothing written", false)

			// A's send, its acceptance and receipt, and a text to A.
			ka := keys[a]
			peer := ka.Participants[0]
			o := &store.Outbound{AccountID: a, LineID: ka.Line.ID, From: ka.Line.Number, To: []string{peer}, Participants: peer,
				Body: "x", Type: domain.BillingSMS, Units: 1, UnitPrice: 7900, Price: 7900}
			sentID, err := server.CreateOutbound(ctx, o)
			if err == nil {
				err = markOutboundSent(server, o, sentID)
			}
			if err != nil {
				t.Fatal(err)
			}
			delivery, err := smsevent.Delivery(sentID, o.From, o.To, "delivered", "", time.Now())
			noErr(t, err)
			noErr(t, server.ApplyReceipt(ctx, store.Receipt{ID: sentID, Status: "delivered", At: time.Now(), Delivery: delivery}))
			in := store.Inbound{Line: ka.Line, From: peer, Participants: []string{peer}, Body: "hi"}
			noErr(t, smsevent.SetReceived(&in))
			_, err = server.StoreInbound(ctx, in)
			noErr(t, err)
			want("A's send, receipt and inbound text", false)
			resolve(server, a, true)
			want("A resolved", false)
			if _, _, err := server.BeginIdempotent(ctx, a, "k1", []byte("h")); err != nil {
				t.Fatal(err)
			}
			want("A's Idempotency-Key", false)
			n := loads[a]
			if page(a); loads[a] != n+1 {
				t.Fatalf("A's page kept after A's writes")
			}

			resolve(server, b, true)
			want("B resolved", true)
			mustAccount(t, server, "C")
			want("a write naming no account", true)
			want("nothing written since", false)

			// Another process (SQLite) or node (PostgreSQL).
			resolve(cli, a, false)
			want("A reopened elsewhere", e == store.SQLite)
			resolve(cli, b, false)
			want("B reopened elsewhere", true)
			want("nothing written since", false)
			if e == store.Postgres {
				// A node from before accounts were named, in a rolling
				// upgrade: its commits name no account, and count for all.
				db, err := sql.Open("pgx", dsn)
				noErr(t, err)
				defer db.Close()
				_, err = db.Exec(`SELECT pg_notify('switchboard_commit', coalesce(current_schema(), ''))`)
				noErr(t, err)
				want("an older node's commit", true)
				want("nothing written since", false)
			}
		})
	}
}
