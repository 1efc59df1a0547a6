package sqldb

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitServing waits for the PostgreSQL listener (pages are off until it
// listens); SQLite serves at once.
func waitServing(t *testing.T, db *DB) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !db.CacheServing(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the read cache's listener never listened")
		}
	}
}

// pageOf reads account's page, whose answer is the account's items (those
// named "<account>:…") as the database has them, and counts its loads.
type pageOf struct {
	db    *DB
	loads map[int64]int
}

func (p *pageOf) read(t *testing.T, account int64) string {
	t.Helper()
	body, err := p.db.Page(context.Background(), account, fmt.Sprint("page:", account), func() ([]byte, error) {
		p.loads[account]++
		return []byte(itemsOf(t, p.db, account)), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// itemsOf lists account's items as the database has them.
func itemsOf(t *testing.T, db *DB, account int64) string {
	t.Helper()
	var out []string
	for _, n := range names(t, db) {
		if strings.HasPrefix(n, fmt.Sprint(account, ":")) {
			out = append(out, n)
		}
	}
	return strings.Join(out, ",")
}

// write inserts items in a write that names accounts: none, it names
// nothing; a negative one stands for TouchesNone.
func write(t *testing.T, db *DB, items []string, accounts ...int64) {
	t.Helper()
	err := db.Write(context.Background(), KeepCache, func(tx *Tx) error {
		for _, a := range accounts {
			if a < 0 {
				tx.TouchesNone()
			} else {
				tx.Touches(a)
			}
		}
		for _, n := range items {
			if _, err := tx.Exec(context.Background(), `INSERT INTO items (name) VALUES (?)`, n); err != nil {
				return err
			}
		}
		if len(items) == 0 {
			// Something committed all the same.
			_, err := tx.Exec(context.Background(), `UPDATE gen_counter SET gen = gen WHERE id = 1`)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPagesPerAccount checks that a commit makes stale the pages of the
// accounts its writes named, and only theirs; every account's when one of
// its writes named none; none when they all said TouchesNone; and (SQLite)
// every account's after a commit of another connection, whose names it
// cannot know. A page answered is always the database's.
func TestPagesPerAccount(t *testing.T) {
	eachEngine(t, func(t *testing.T, db *DB) {
		waitServing(t, db)
		// The first commit of a committer counts for every account (on
		// SQLite: nothing to compare other connections' commits with yet).
		write(t, db, nil, -1)
		p := &pageOf{db: db, loads: map[int64]int{}}
		const a, b = 1, 2
		step := 0
		// want runs fn, then reads both pages: the database's, and loaded
		// again only for the accounts in stale.
		want := func(what string, fn func(n int), stale ...int64) {
			t.Helper()
			step++
			fn(step)
			for _, acct := range []int64{a, b} {
				before := p.loads[acct]
				if got, now := p.read(t, acct), itemsOf(t, db, acct); got != now {
					t.Fatalf("%s: account %d's page is %q, the database has %q", what, acct, got, now)
				}
				wantLoads := 0
				for _, s := range stale {
					if s == acct {
						wantLoads = 1
					}
				}
				if got := p.loads[acct] - before; got != wantLoads {
					t.Fatalf("%s: account %d's page loaded %d times, want %d", what, acct, got, wantLoads)
				}
			}
		}
		item := func(acct int64, n int) string { return fmt.Sprintf("%d:%d", acct, n) }
		p.read(t, a)
		p.read(t, b)
		want("nothing written", func(int) {})
		want("a write naming A", func(n int) { write(t, db, []string{item(a, n)}, a) }, a)
		want("a write naming B", func(n int) { write(t, db, []string{item(b, n)}, b) }, b)
		want("a write naming both", func(n int) { write(t, db, []string{item(a, n), item(b, n)}, a, b) }, a, b)
		want("a write naming no account", func(n int) { write(t, db, []string{item(b, n)}) }, a, b)
		want("a write touching no page", func(int) { write(t, db, nil, -1) })
		if db.Engine() == SQLite {
			want("another connection's commit", func(n int) {
				if _, err := db.Writer().ExecContext(context.Background(), `INSERT INTO items (name) VALUES (?)`, item(b, n)); err != nil {
					t.Fatal(err)
				}
			}, a, b)
			// The next commit counts the other connection's for every
			// account, and stamps stop carrying the header.
			want("then a write naming A", func(n int) { write(t, db, []string{item(a, n)}, a) }, a, b)
			want("and another", func(n int) { write(t, db, []string{item(a, n)}, a) }, a)
			// The header is this process's again at once, with no read
			// between: the count alone makes B's page stale.
			want("another connection's commit, then a write naming A", func(n int) {
				if _, err := db.Writer().ExecContext(context.Background(), `INSERT INTO items (name) VALUES (?)`, item(b, n)); err != nil {
					t.Fatal(err)
				}
				write(t, db, []string{item(a, n)}, a)
			}, a, b)
		}
		// The writes of one group (they arrive together): the accounts
		// any of them named.
		want("writes naming A, and touching no page", func(n int) {
			var wg sync.WaitGroup
			for i := range 6 {
				wg.Go(func() {
					if i%2 == 0 {
						write(t, db, []string{item(a, 10*n+i)}, a)
					} else {
						write(t, db, nil, -1)
					}
				})
			}
			wg.Wait()
		}, a)
	})
}

// TestPagesSeeOtherConnectionsBesideOwnCommits (SQLite) checks the race
// committedSQLite reasons about: another connection commits while this
// process's committer commits writes naming account A, and every time the
// other connection's commit has returned, account B's page shows it.
func TestPagesSeeOtherConnectionsBesideOwnCommits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db := openSQLiteAt(t, path)
	defer db.Close()
	createTestSchema(t, db)
	other := openSQLiteAt(t, path) // another store on the file: the CLI
	defer other.Close()
	p := &pageOf{db: db, loads: map[int64]int{}}
	for i := range 300 {
		// This process's writes, committing while the other commits.
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() { write(t, db, nil, 1) })
		}
		name := fmt.Sprint("2:other", i)
		// Through the other store's committer, or through a connection of
		// this process that is not its committer's.
		var err error
		if i%2 == 0 {
			err = other.Write(context.Background(), KeepCache, func(tx *Tx) error {
				tx.Touches(1) // a lie, and another process's names are not heard anyway
				_, err := tx.Exec(context.Background(), `INSERT INTO items (name) VALUES (?)`, name)
				return err
			})
		} else {
			_, err = db.Writer().ExecContext(context.Background(), `INSERT INTO items (name) VALUES (?)`, name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if i%3 != 0 {
			// A commit of this process's in between, as if a reader came
			// only after it (two iterations in a row: the page kept in the
			// first has the stamp the second would find without the count
			// of the other's commit).
			write(t, db, nil, 1)
		}
		if got := p.read(t, 2); !strings.HasSuffix(got, name) {
			t.Fatalf("after %s committed, B's page is %q", name, got)
		}
		wg.Wait()
	}
}

// TestTouchedPayload checks the text of a commit notification's accounts.
func TestTouchedPayload(t *testing.T) {
	many := make([]int64, 2000)
	for i := range many {
		many[i] = int64(1_000_000 + i)
	}
	for _, c := range []struct {
		all  bool
		ids  []int64
		text string
	}{
		{all: true, text: "*"},
		{text: "-"},
		{ids: []int64{7}, text: "7"},
		{ids: []int64{12, 3, 12, 40}, text: "3,12,40"},
		{ids: many, text: "*"}, // past PostgreSQL's payload limit
	} {
		got := encodeTouched(c.all, c.ids)
		if got != c.text {
			t.Errorf("encodeTouched(%t, %d ids) = %.40q, want %q", c.all, len(c.ids), got, c.text)
		}
		if len(touchMark+got)+63 >= 8000 {
			t.Errorf("payload of %d bytes: PostgreSQL refuses it", len(touchMark+got)+63)
		}
		all, ids := decodeTouched(got)
		if all != (c.text == "*") || (!all && fmt.Sprint(ids) != fmt.Sprint(slices.Compact(slices.Sorted(slices.Values(c.ids))))) {
			t.Errorf("decodeTouched(%q) = %t, %v", got, all, ids)
		}
	}
	for _, s := range []string{"", "*", "1,x", "1,,2"} {
		if all, _ := decodeTouched(s); !all {
			t.Errorf("decodeTouched(%q): not every account", s)
		}
	}
}

// TestReadersShareALoad checks that readers who miss a page while it is
// being loaded under their stamp wait for that load instead of running
// their own, that a reader whose stamp moved meanwhile loads afresh (a load
// started before a commit never answers a read that follows it), and that
// the readers of a load that failed load for themselves.
func TestReadersShareALoad(t *testing.T) {
	db := openSQLite(t)
	write(t, db, nil, -1)
	const acct = 1
	var mu sync.Mutex
	loads := 0
	release := make(chan struct{})
	started := make(chan struct{}, 16)
	read := func(fail bool) (string, error) {
		body, err := db.Page(context.Background(), acct, "page", func() ([]byte, error) {
			mu.Lock()
			loads++
			mu.Unlock()
			started <- struct{}{}
			<-release
			if fail {
				return nil, fmt.Errorf("load failed")
			}
			return []byte(itemsOf(t, db, acct)), nil
		})
		return string(body), err
	}
	type answer struct {
		body string
		err  error
	}
	readers := func(n int, fail bool) chan answer {
		out := make(chan answer, n)
		for i := 0; i < n; i++ {
			go func(lead bool) {
				body, err := read(fail && lead)
				out <- answer{body, err}
			}(i == 0)
			if i == 0 {
				<-started // the first one leads the load
			}
		}
		return out
	}
	// waitJoined waits until n readers wait on the load in flight.
	waitJoined := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			if waiting(db) >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d readers never joined the load", n)
			}
		}
	}

	write(t, db, []string{"1:a"}, acct)
	out := readers(8, false)
	waitJoined(7)
	close(release)
	for range 8 {
		if a := <-out; a.err != nil || a.body != "1:a" {
			t.Fatalf("a reader got %q, %v; want 1:a", a.body, a.err)
		}
	}
	if loads != 1 {
		t.Fatalf("8 readers ran %d loads, want 1", loads)
	}

	// A load in flight across a commit: the reader after the commit loads
	// afresh and sees it.
	release = make(chan struct{})
	write(t, db, []string{"1:b"}, acct)
	first := readers(1, false)
	write(t, db, []string{"1:c"}, acct)
	second := make(chan answer, 1)
	go func() { body, err := read(false); second <- answer{body, err} }()
	select {
	case <-started: // its own load
	case <-time.After(10 * time.Second):
		t.Fatal("the reader after the commit waited for the load started before it")
	}
	close(release)
	if a := <-second; a.err != nil || a.body != "1:a,1:b,1:c" {
		t.Fatalf("the reader after the commit got %q, %v; want 1:a,1:b,1:c", a.body, a.err)
	}
	<-first

	// A failed load: its leader gets the error, its waiters load again.
	release = make(chan struct{})
	loads = 0
	write(t, db, []string{"1:d"}, acct)
	out = readers(4, true)
	waitJoined(3)
	close(release)
	failed := 0
	for range 4 {
		a := <-out
		switch {
		case a.err != nil:
			failed++
		case a.body != "1:a,1:b,1:c,1:d":
			t.Fatalf("a waiter of the failed load got %q", a.body)
		}
	}
	if failed != 1 || loads != 4 {
		t.Fatalf("after a failed load: %d readers failed and %d loads ran; want 1 and 4", failed, loads)
	}
}

// waiting counts the readers waiting on db's page loads in flight.
func waiting(db *DB) int {
	p := db.pages
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, l := range p.loading {
		n += l.waiters
	}
	return n
}
