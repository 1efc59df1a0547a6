package sqldb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// cacheChannel carries PostgreSQL's cache notifications. Write sends one in
// the transaction of every write that may change cached data (DropCache),
// with the writer's schema as payload, so that databases opened on other
// schemas of the same server database ignore it.
const cacheChannel = "switchboard_cache"

// commitChannel carries a notification of every committed group (commitPG),
// with the writer's schema and the accounts its writes named as payload
// (touchMark, encodeTouched): the encoded pages (pages.go) of those
// accounts, or of every account, go stale on every node.
const commitChannel = "switchboard_commit"

// commitNotify takes the payload's tail after the schema (Tx.commitPayload).
// legacyNotify follows it in every group: the payload nodes from before
// accounts were named count (the schema alone), so that during a rolling
// upgrade they still hear every commit. A transaction's notifications
// arrive together, in order, from its backend: a listener that heard the
// accounts from a backend skips the legacy one that follows from it, and
// counts every account on a legacy one heard alone (an older node's).
const (
	commitNotify = `SELECT pg_notify('` + commitChannel + `', coalesce(current_schema(), '') || $1::text)`
	legacyNotify = `SELECT pg_notify('` + commitChannel + `', coalesce(current_schema(), ''))`
)

// errCacheOff makes cached reads go to the database: on PostgreSQL while the
// notification connection is not listening.
var errCacheOff = errors.New("store: read cache off")

// How the listener watches its connection: a connection that has been quiet
// for listenIdle is pinged, and counts as lost if the ping takes longer than
// listenIdle. A lost connection turns the cache off until it is back, so a
// notification missed on a dead connection can leave an entry stale for at
// most about 2×listenIdle; one PostgreSQL closes itself is noticed at once.
const (
	listenIdle       = time.Second
	listenRetryFirst = 50 * time.Millisecond
	listenRetryMax   = 2 * time.Second
)

// invalidate drops every entry: a notification arrived, or this process
// wrote.
func (c *Cache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.version++
	clear(c.entries)
}

// setLive turns the PostgreSQL cache on or off. Either way what it holds is
// dropped: entries kept while notifications might have been missed.
func (c *Cache) setLive(live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = live
	c.version++
	clear(c.entries)
}

// CacheServing reports whether the read cache answers from memory: always on
// SQLite, and on PostgreSQL while its notification connection listens.
func (db *DB) CacheServing() bool { return db.cache.conn != nil || db.cache.isLive() }

// isLive reports whether the PostgreSQL cache is serving.
func (c *Cache) isLive() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}

// cacheListener keeps a connection listening on cacheChannel for a
// PostgreSQL database's read cache, and on commitChannel for its pages
// (pages.go, pagefence.go), reconnecting when it is lost.
type cacheListener struct {
	cfg    *pgx.ConnConfig
	cache  *Cache
	clock  *pageClock // the DB's commit counters (pages.go)
	fences *fencer    // the DB's page fences (pagefence.go)
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}
	// redial cuts a wait before reconnecting short (tests hold the
	// connection lost, then end the outage when they choose).
	redial chan struct{}

	mu    sync.Mutex
	pid   uint32        // the listening backend's process id (tests terminate it)
	retry time.Duration // the first wait before reconnecting (tests lengthen it)
}

func startCacheListener(url string, cache *Cache, clock *pageClock, fences *fencer, log *slog.Logger) (*cacheListener, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: cache listen URL: %w", err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &cacheListener{cfg: cfg, cache: cache, clock: clock, fences: fences, log: log, cancel: cancel, done: make(chan struct{}), redial: make(chan struct{}, 1), retry: listenRetryFirst}
	go l.run(ctx)
	return l, nil
}

func (l *cacheListener) stop() {
	l.cancel()
	<-l.done
}

func (l *cacheListener) run(ctx context.Context) {
	defer close(l.done)
	wait := l.firstRetry()
	for {
		start := time.Now()
		err := l.listen(ctx)
		l.cache.setLive(false)
		l.clock.all.Add(1)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > listenRetryMax {
			wait = l.firstRetry() // it had been up: retry soon
		}
		wait = max(wait, l.firstRetry()) // a test holding the outage lengthened it
		l.log.Warn("read cache off: notification connection lost; reads go to the database until it is back", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		case <-l.redial:
		}
		wait = max(min(2*wait, listenRetryMax), l.firstRetry())
	}
}

// listen connects, listens and turns the cache on, then applies
// notifications until the connection fails or ctx ends.
func (l *cacheListener) listen(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var schema string
	if _, err := conn.Exec(ctx, "LISTEN "+cacheChannel); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+commitChannel); err != nil {
		return err
	}
	if err := conn.QueryRow(ctx, "SELECT coalesce(current_schema(), '')").Scan(&schema); err != nil {
		return err
	}
	l.mu.Lock()
	l.pid = conn.PgConn().PID()
	l.mu.Unlock()
	// Listening from here on: anything committed after this point arrives
	// as a notification, and setLive drops what was cached before.
	l.clock.all.Add(1) // entries kept before were kept while not listening
	l.cache.setLive(true)
	l.log.Info("read cache on: listening for changes", "channel", cacheChannel)
	var named uint32 // the backend whose accounts were just heard (legacyNotify)
	for {
		wctx, cancel := context.WithTimeout(ctx, listenIdle)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			switch {
			case n.Channel == commitChannel && strings.HasPrefix(n.Payload, schema+fenceMark):
				l.fences.heard(n.Payload[len(schema+fenceMark):])
			case n.Channel == commitChannel && strings.HasPrefix(n.Payload, schema+touchMark):
				l.clock.moved(decodeTouched(n.Payload[len(schema+touchMark):]))
				named = n.PID
			case n.Payload != schema:
			case n.Channel == commitChannel && named == n.PID:
				named = 0 // the legacy twin of the accounts just heard
			case n.Channel == commitChannel:
				l.clock.all.Add(1) // a node that names no accounts
			default:
				l.cache.invalidate()
			}
			continue
		case ctx.Err() != nil:
			return ctx.Err()
		case !conn.IsClosed() && errors.Is(err, context.DeadlineExceeded):
			// Quiet: make sure the connection is still there.
			pctx, cancel := context.WithTimeout(ctx, listenIdle)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return fmt.Errorf("ping: %w", err)
			}
		default:
			return err
		}
	}
}

func (l *cacheListener) firstRetry() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.retry
}
