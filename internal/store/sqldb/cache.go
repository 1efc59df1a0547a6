package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// Cache keeps the results of hot reads (credentials, settings: what the
// caller reads on every request and rarely changes) for as long as none of
// them has changed. It is exact, not time-based: every write that may change
// cached data (Write with DropCache, in this process or another, such as the
// CLI) bumps a counter row in the same transaction (Generation), and the
// whole cache is dropped when a request sees a new value. The hot paths'
// writes (KeepCache) do not bump it, so the cache survives their load. On
// PostgreSQL the signal is a notification sent in the write's transaction
// and received on a dedicated connection (cachepg.go); while that connection
// is down the cache is off.
//
// The generation query itself is skipped while SQLite's WAL index shows
// that nothing at all has been committed since the last one (walindex_unix.go):
// on a read-mostly server that query was a quarter of a request's CPU.
type Cache struct {
	mu      sync.Mutex
	conn    *sql.Conn // dedicated to reading the generation
	genSQL  string    // Generation.Read
	gen     *sql.Stmt // genSQL prepared on conn at first use (after migrations)
	shm     *shmFile  // the database's -shm descriptor; nil where there is none
	wal     *walIndex // nil until mapped, or where it cannot be
	walTry  bool      // whether mapping was attempted
	seen    walHeader // WAL-index header read before the last generation query
	ours    walHeader // the header this process's last commit left (pages.go)
	version int64
	entries map[string]any

	// PostgreSQL (conn is nil): whether the notification connection is
	// listening. Every notification, and every change of live, moves version.
	live bool
}

func newCache(ctx context.Context, pool *sql.DB, genSQL string) (*Cache, error) {
	conn, err := pool.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: cache connection: %w", err)
	}
	return &Cache{conn: conn, genSQL: genSQL, version: -1, entries: map[string]any{}}, nil
}

// close closes the cache's connection and returns the WAL-index view for
// the caller to unmap.
func (c *Cache) close() (*walIndex, error) {
	// Under the lock: a check racing with Close must not read unmapped memory.
	c.mu.Lock()
	defer c.mu.Unlock()
	wal := c.wal
	c.wal, c.walTry = nil, true
	var err error
	if c.gen != nil {
		err = c.gen.Close()
	}
	if c.conn != nil {
		err = errors.Join(err, c.conn.Close())
	}
	return wal, err
}

// current reads the generation and drops every entry if it moved. It
// returns the version to tag new entries with.
func (c *Cache) current(ctx context.Context) (int64, error) {
	if c.conn == nil {
		if !c.live {
			return 0, errCacheOff
		}
		return c.version, nil
	}
	var hdr walHeader
	if c.wal != nil {
		// Read before the query: a commit that lands in between then
		// shows as a changed header next time.
		hdr = c.wal.header()
		if c.version >= 0 && hdr == c.seen {
			return c.version, nil
		}
	}
	if c.gen == nil {
		gen, err := c.conn.PrepareContext(ctx, c.genSQL)
		if err != nil {
			return 0, fmt.Errorf("store: cache generation: %w", err)
		}
		c.gen = gen
	}
	var v int64
	if err := c.gen.QueryRowContext(ctx).Scan(&v); err != nil {
		return 0, fmt.Errorf("store: cache generation: %w", err)
	}
	if c.wal != nil {
		c.seen = hdr
	} else if !c.walTry {
		// The query has made SQLite create the WAL index; map it now.
		// c.seen stays zero, which no real header equals, so the next
		// check queries once more with the header read first.
		c.walTry = true
		if c.shm != nil {
			c.wal, _ = mapWALIndex(c.shm)
		}
	}
	if v != c.version {
		c.version = v
		clear(c.entries)
	}
	return v, nil
}

// scope remembers, for one request, the version already checked, so a request
// that makes several cached reads pays for one generation query and sees
// one consistent snapshot.
type scope struct{ version int64 }

type scopeKey struct{}

// WithReadScope marks ctx as one request: cached reads made with it check the
// database version once.
func WithReadScope(ctx context.Context) context.Context {
	return context.WithValue(ctx, scopeKey{}, &scope{version: -1})
}

// checked returns the current version, querying it only once per read scope.
// c.mu must be held.
func (c *Cache) checked(ctx context.Context) (int64, error) {
	sc, _ := ctx.Value(scopeKey{}).(*scope)
	if sc != nil && sc.version >= 0 && sc.version == c.version {
		return sc.version, nil
	}
	v, err := c.current(ctx)
	if err == nil && sc != nil {
		sc.version = v
	}
	return v, err
}

// maxCacheEntries bounds the cache: per-recipient opt-out answers grow with
// traffic, so past this many entries the cache starts over.
const maxCacheEntries = 1 << 17

// Cached returns the cached value for key or loads it. The version is read
// before loading, so a value loaded during a concurrent commit is tagged with
// the older version and dropped at the next check: never stale.
// Callers must treat returned values as read-only, and must not use one key
// for values of two types.
func Cached[T any](ctx context.Context, db *DB, key string, load func() (T, error)) (T, error) {
	c := db.cache
	if c == nil {
		return load()
	}
	e, found, v, err := c.Lookup(ctx, key)
	if err != nil {
		return load()
	}
	if found {
		return e.(T), nil
	}
	val, err := load()
	if err != nil {
		return val, err
	}
	c.Keep(key, val, v)
	return val, nil
}

// Cache is the read cache (nil if it has none), for callers that look up
// several keys before one load (Cached is the one-key form).
func (db *DB) Cache() *Cache { return db.cache }

// Lookup returns key's cached value, and the version to tag a value loaded
// now with (Keep). An error means the cache is off: read the database.
func (c *Cache) Lookup(ctx context.Context, key string) (val any, found bool, version int64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if version, err = c.checked(ctx); err != nil {
		return nil, false, 0, err
	}
	val, found = c.entries[key]
	return val, found, version, nil
}

// Keep stores val, loaded after version was read (Lookup), unless the
// database has moved on since.
func (c *Cache) Keep(key string, val any, version int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != version {
		return
	}
	if len(c.entries) >= maxCacheEntries {
		clear(c.entries)
	}
	c.entries[key] = val
}
