package sqldb

import (
	"container/list"
	"context"
	"sync"
)

// Pages keeps encoded answers of hot reads that change with every write of
// their kind (an inbox's first pages: a send or an inbound text moves them),
// which the read cache, dropped only by DropCache writes, cannot hold. Each
// entry is tagged with the database's commit stamp read before it was
// loaded, and served only while the stamp has not moved: exact, whatever
// the write was and wherever it came from.
//
// The stamp is, on SQLite, the WAL-index header (which every commit of any
// process rewrites before it returns, walindex_unix.go) with this process's
// commit counter; on PostgreSQL, the commit counter, which this process's
// committers move after every COMMIT (before any of its writers is answered)
// and the read cache's listener moves on every other node's commit
// notification (cachepg.go). The PostgreSQL pages follow the read cache's
// rule: off while the listener is not listening (reads go to SQL), every
// entry stale once it listens again.
//
// The memory is bounded by bytes (Options.PageBytes): least recently used
// entries go first.
type Pages struct {
	mu     sync.Mutex
	budget int64
	used   int64
	lru    *list.List // of *pageEntry, most recently used first
	byKey  map[string]*list.Element
}

type pageEntry struct {
	key   string
	stamp Stamp
	body  []byte
}

// pageOverhead is what an entry costs beside its key and body: the map
// slot, the list element and the entry (measured: ~200 bytes).
const pageOverhead = 200

// DefaultPageBytes is the pages' budget when Options.PageBytes is 0.
const DefaultPageBytes = 32 << 20

// Stamp identifies the database's committed state (see Pages).
type Stamp struct {
	wal     walHeader
	commits uint64
}

// Stamp returns the commit stamp, or false when it cannot be trusted now
// (PostgreSQL not listening; SQLite without its WAL index mapped yet): then
// read the database.
func (db *DB) Stamp(ctx context.Context) (Stamp, bool) {
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
		return Stamp{commits: db.commits.Load()}, true
	}
	if c.wal == nil && !c.walTry {
		// Not mapped yet: the read cache maps it at its first query.
		c.current(ctx)
	}
	if c.wal == nil {
		return Stamp{}, false
	}
	// The counter first: a commit between the two reads leaves a stamp that
	// no later read returns.
	n := db.commits.Load()
	return Stamp{wal: c.wal.header(), commits: n}, true
}

// committed moves the commit counter: after a group's COMMIT returned (or
// failed: it may still have landed) and before its writers are answered.
func (db *DB) committed() { db.commits.Add(1) }

func newPages(budget int64) *Pages {
	if budget == 0 {
		budget = DefaultPageBytes
	}
	if budget < 0 {
		return nil
	}
	return &Pages{budget: budget, lru: list.New(), byKey: map[string]*list.Element{}}
}

// Page returns the encoded answer kept under key if the database has not
// changed since it was loaded, or loads it (and keeps it). load must depend
// only on the database and key.
func (db *DB) Page(ctx context.Context, key string, load func() ([]byte, error)) ([]byte, error) {
	p := db.pages
	if p == nil {
		return load()
	}
	if db.fences != nil && db.CacheServing() {
		if err := db.fences.wait(ctx); err != nil {
			return load()
		}
	}
	stamp, ok := db.Stamp(ctx)
	if !ok {
		return load()
	}
	if body, found := p.get(key, stamp); found {
		return body, nil
	}
	body, err := load()
	if err != nil {
		return nil, err
	}
	p.put(key, stamp, body)
	return body, nil
}

func (p *Pages) get(key string, stamp Stamp) ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	el := p.byKey[key]
	if el == nil {
		return nil, false
	}
	e := el.Value.(*pageEntry)
	if e.stamp != stamp {
		return nil, false
	}
	p.lru.MoveToFront(el)
	return e.body, true
}

func (p *Pages) put(key string, stamp Stamp, body []byte) {
	size := entrySize(key, body)
	if size > p.budget/8 {
		return // one answer may not push out most of the others
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if el := p.byKey[key]; el != nil {
		p.remove(el)
	}
	p.byKey[key] = p.lru.PushFront(&pageEntry{key: key, stamp: stamp, body: body})
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
