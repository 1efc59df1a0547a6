package sqldb

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// Pages keeps encoded answers of hot reads that change with every write of
// their kind (an inbox's first pages: a send or an inbound text moves them),
// which the read cache, dropped only by DropCache writes, cannot hold. Each
// entry belongs to an account and is tagged with the account's commit stamp
// read before it was loaded, and served only while that stamp has not
// moved: exact, whatever the write was and wherever it came from.
//
// The stamp moves with every commit that may change the account's pages: a
// commit whose writes named the account (Tx.Touches), or any of whose
// writes named nothing (every account, the default: a write path that
// forgets to name its accounts is slower, never wrong), or one this process
// cannot attribute (another process's). So one account's sends leave every
// other account's pages kept. The stamp holds two counters (pageClock): the
// global one, which every commit naming all accounts moves, and the
// account's, which every commit naming the account moves. Each is moved
// after the commit landed and before any of its writers is answered, so a
// reader that saw a write answered finds the stamp moved.
//
//   - SQLite: this process's committer moves the counters (committed). A
//     commit of another process (the CLI) or of another connection is seen
//     by the WAL-index header (walindex_unix.go), which every commit
//     rewrites before it returns: the stamp carries the header whenever it
//     is not the one this process's last commit left, so that any foreign
//     commit moves every stamp at once (see committedSQLite for why that is
//     exact).
//   - PostgreSQL: this node's committers move the counters after every
//     COMMIT; every COMMIT also sends a notification naming the accounts
//     (commitPayload), on which the read cache's listener moves the other
//     nodes' counters (cachepg.go), and a fence (pagefence.go) makes a
//     node hear every commit answered before a kept page is. The pages
//     follow the read cache's rule: off while the listener is not
//     listening (reads go to SQL), every entry stale once it listens
//     again.
//
// The memory is bounded by bytes (Options.PageBytes): least recently used
// entries go first.
type Pages struct {
	mu     sync.Mutex
	budget int64
	used   int64
	lru    *list.List // of *pageEntry, most recently used first
	byKey  map[string]*list.Element
	// loading holds the load in flight for a key: readers that miss with
	// the stamp it was started under wait for it instead of loading too.
	// A commit makes every reader of a hot page miss at once; without it
	// each of them ran the same query (measured on SQLite, 64 readers of
	// another account's first page while one account sends: 11% of the
	// reads missed, and their loads were most of the CPU).
	loading map[string]*pageLoad
}

// pageLoad is a load in flight (Pages.loading); body and err are set
// before done is closed.
type pageLoad struct {
	account int64
	stamp   Stamp
	done    chan struct{}
	body    []byte
	err     error
	waiters int // under Pages.mu (tests watch it)
}

type pageEntry struct {
	key     string
	account int64
	stamp   Stamp
	body    []byte
}

// pageOverhead is what an entry costs beside its key and body: the map
// slot, the list element and the entry (measured: ~200 bytes).
const pageOverhead = 200

// DefaultPageBytes is the pages' budget when Options.PageBytes is 0.
const DefaultPageBytes = 32 << 20

// accountSlots is how many account counters a pageClock holds: an account
// counts on slot id mod accountSlots. Two accounts on one slot make each
// other's pages stale (slower, never wrong); ids are sequential, so that
// starts past 4096 accounts. 32 KiB a database.
const accountSlots = 4096

// pageClock counts the commits that may change kept pages (see Pages).
// Counters only grow: a stamp read twice is equal only if no commit
// counted on them between the reads.
type pageClock struct {
	all      atomic.Uint64
	accounts [accountSlots]atomic.Uint64
}

func (c *pageClock) slot(account int64) *atomic.Uint64 {
	return &c.accounts[uint64(account)%accountSlots]
}

// moved counts one commit that named ids, or every account.
func (c *pageClock) moved(all bool, ids []int64) {
	if all {
		c.all.Add(1)
		return
	}
	for _, id := range ids {
		c.slot(id).Add(1)
	}
}

func (c *pageClock) stamp(account int64) Stamp {
	return Stamp{all: c.all.Load(), account: c.slot(account).Load()}
}

// Stamp identifies an account's committed state (see Pages).
type Stamp struct {
	// wal is, on SQLite, the WAL-index header when it is not the one this
	// process's last commit left (a commit of another process or
	// connection since); zero, which no header is, otherwise.
	wal          walHeader
	all, account uint64
}

// Stamp returns account's commit stamp, or false when it cannot be trusted
// now (PostgreSQL not listening; SQLite without its WAL index mapped yet):
// then read the database.
func (db *DB) Stamp(ctx context.Context, account int64) (Stamp, bool) {
	c := db.cache
	if c == nil {
		return Stamp{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		if !c.live {
			return Stamp{}, false
		}
		return db.clock.stamp(account), true
	}
	if c.wal == nil && !c.walTry {
		// Not mapped yet: the read cache maps it at its first query.
		c.current(ctx)
	}
	if c.wal == nil {
		return Stamp{}, false
	}
	// Under c.mu, which committedSQLite holds while it moves the counters
	// and records its header: the two are read as one.
	s := db.clock.stamp(account)
	if h := c.wal.header(); h != c.ours {
		s.wal = h
	}
	return s, true
}

// committed counts a group's commit on the pages' clock: after its COMMIT
// returned (or failed: it may still have landed) and before its writers
// are answered. reqs are the group's writes, with what each named.
func (db *DB) committed(reqs []*writeReq) {
	all, ids := touched(reqs)
	if db.engine == SQLite {
		db.committedSQLite(all, ids)
		return
	}
	db.clock.moved(all, ids)
}

// committedSQLite counts a SQLite group's commit, and records the WAL-index
// header it left as this process's (Cache.ours): while the header stays
// that, nothing but this process's commits, counted, has been committed,
// and stamps leave it out; any other header is in the stamp, so a foreign
// commit moves every account's stamp.
//
// Whether anyone else committed since the previous group's check is told
// by PRAGMA data_version on the committer's connection: it changes between
// two reads on one connection if, and only if (barring a spurious change,
// which costs a global move only), another connection committed in
// between; the connection's own commits leave it. SQLite implements it by
// comparing, at every read transaction's start, the WAL-index header with
// the connection's private copy of the last one it read or wrote (a
// checkpoint that loads a newer one clears the copy, so that the change
// still shows). The committer reads, under no lock of SQLite's:
//
//	COMMIT (holds the write lock from BEGIN IMMEDIATE; releases it)
//	h  = the WAL-index header                       (1)
//	dv = PRAGMA data_version                        (2)
//	under c.mu: move the counters (the global one too if dv changed
//	since the last check, or cannot be compared); ours = h     (3)
//
// A foreign commit F lands in one of these spans, and is seen:
//   - before this group's BEGIN IMMEDIATE, or after the previous check's
//     (2): this group's BEGIN (a read transaction's start) or (2) sees it,
//     dv changed, and (3) moves the global counter;
//   - between COMMIT and (2): (2) sees it, likewise; h may or may not hold
//     it, which does not matter: the global counter moved after F landed;
//   - after (2): not yet counted, but the header then differs from ours
//     (headers change with every commit, and ours was read before F), so
//     every stamp carries the header until a later group's check counts F
//     (its BEGIN sees it).
//
// F cannot land between BEGIN IMMEDIATE and COMMIT: this group holds the
// write lock. A stamp equal to an earlier one therefore means: the same
// header and no count, or both headers ours with no count between them, in
// which case every foreign commit between them was counted globally
// (above), and every one of this process's was counted on the accounts it
// named. A header recorded torn (F rewriting it during (1)) is one no
// reader sees again: stamps carry the real one, and (2) has counted F.
func (db *DB) committedSQLite(all bool, ids []int64) {
	c := db.cache
	c.mu.Lock()
	if c.wal == nil && !c.walTry {
		// Mapped at the read cache's first query: map it now (once), so
		// that the pages start from this commit's header, not from one
		// the stamps carry because it was not recorded.
		c.current(groupCtx)
	}
	var h walHeader
	if c.wal != nil {
		h = c.wal.header()
	}
	c.mu.Unlock()
	foreign := db.foreignCommitted()
	c.mu.Lock()
	defer c.mu.Unlock()
	db.clock.moved(all || foreign, ids)
	c.ours = h
}

// foreignCommitted reports whether another connection may have committed
// since the last call (see committedSQLite), reading PRAGMA data_version
// on the committer's connection.
func (db *DB) foreignCommitted() bool {
	var v int64
	err := db.wconn.Raw(func(dc any) error {
		if err := db.useRaw(dc); err != nil {
			return err
		}
		return db.rawQueryRow("PRAGMA data_version", nil).Scan(&v)
	})
	// Versions of two connections cannot be compared: a connection
	// replaced (wrecover) counts as a foreign commit.
	same := err == nil && db.versionOn == db.raw && db.version == v
	db.versionOn, db.version = db.raw, v
	if err != nil {
		db.versionOn = nil
	}
	return !same
}

func newPages(budget int64) *Pages {
	if budget == 0 {
		budget = DefaultPageBytes
	}
	if budget < 0 {
		return nil
	}
	return &Pages{budget: budget, lru: list.New(), byKey: map[string]*list.Element{}, loading: map[string]*pageLoad{}}
}

// Page returns the encoded answer kept under key if nothing that may change
// account's pages was committed since it was loaded, or loads it (and keeps
// it). load must depend only on account's data in the database and key:
// the writes that change what it reads name account (Tx.Touches), or no
// account at all.
func (db *DB) Page(ctx context.Context, account int64, key string, load func() ([]byte, error)) ([]byte, error) {
	p := db.pages
	if p == nil {
		return load()
	}
	if db.fences != nil && db.CacheServing() {
		if err := db.fences.wait(ctx); err != nil {
			return load()
		}
	}
	stamp, ok := db.Stamp(ctx, account)
	if !ok {
		return load()
	}
	body, l, lead := p.find(key, account, stamp)
	switch {
	case body != nil:
		return body, nil
	case !lead:
		// Loaded under the same stamp: nothing that may change the page
		// was committed between that load's start and this read's.
		select {
		case <-l.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if l.err != nil {
			return load() // its error may be its own (its context)
		}
		return l.body, nil
	}
	defer p.finish(key, l) // even if load panics: its waiters load themselves
	l.body, l.err = load()
	return l.body, l.err
}

// find returns the answer kept under key for account at stamp, or else the
// load to wait for (lead false) or to run (lead true, then finish).
func (p *Pages) find(key string, account int64, stamp Stamp) (body []byte, l *pageLoad, lead bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if el := p.byKey[key]; el != nil {
		if e := el.Value.(*pageEntry); e.account == account && e.stamp == stamp {
			p.lru.MoveToFront(el)
			return e.body, nil, false
		}
	}
	if l := p.loading[key]; l != nil && l.account == account && l.stamp == stamp {
		l.waiters++
		return nil, l, false
	}
	l = &pageLoad{account: account, stamp: stamp, done: make(chan struct{})}
	p.loading[key] = l // a load under an older stamp keeps its own waiters
	return nil, l, true
}

// finish keeps l's answer, if it has one, and lets its waiters go.
func (p *Pages) finish(key string, l *pageLoad) {
	if l.body == nil && l.err == nil {
		l.err = errors.New("store: pages: load did not return") // it panicked
	}
	if l.err == nil {
		p.put(key, l.account, l.stamp, l.body)
	}
	p.mu.Lock()
	if p.loading[key] == l {
		delete(p.loading, key)
	}
	p.mu.Unlock()
	close(l.done)
}

func (p *Pages) put(key string, account int64, stamp Stamp, body []byte) {
	size := entrySize(key, body)
	if size > p.budget/8 {
		return // one answer may not push out most of the others
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if el := p.byKey[key]; el != nil {
		p.remove(el)
	}
	p.byKey[key] = p.lru.PushFront(&pageEntry{key: key, account: account, stamp: stamp, body: body})
	p.used += size
	for p.used > p.budget {
		p.remove(p.lru.Back())
	}
}

func (p *Pages) remove(el *list.Element) {
	e := p.lru.Remove(el).(*pageEntry)
	delete(p.byKey, e.key)
	p.used -= entrySize(e.key, e.body)
}

func entrySize(key string, body []byte) int64 {
	return int64(len(key) + len(body) + pageOverhead)
}

// PageStats reports the pages kept and the bytes they are counted for.
func (db *DB) PageStats() (entries int, bytes int64) {
	p := db.pages
	if p == nil {
		return 0, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byKey), p.used
}
