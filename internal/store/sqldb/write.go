package sqldb

import (
	"context"
	"errors"
)

// WriteOptions say what kind of write Write runs; combine them with |.
// Every write joins a group commit (group.go) and returns once it is
// durably committed, or rolled back because its function failed.
type WriteOptions uint8

const (
	// DropCache (the zero value, the absence of KeepCache) is for a write
	// that may change what the read cache holds: it tells every process's
	// cache to drop what it holds. On SQLite it bumps the cache generation
	// (Generation.Bump) in the write's transaction. On PostgreSQL it sends a
	// notification in the same transaction (delivered to the other nodes
	// only if it commits), then drops this process's cache itself, so its
	// next read sees its own write.
	DropCache WriteOptions = 0
	// KeepCache is for the hot paths, whose writes change nothing the read
	// cache holds: they leave the cache and its generation alone, so that
	// the cache survives their load.
	KeepCache WriteOptions = 1 << 0
	// Contended is for a write that updates a row that many concurrent
	// writes update. On PostgreSQL the row stays locked from that update to
	// the group's commit, and other groups that update it wait that long:
	// such writes run after the others of their group, so that the lock is
	// held for the group's end only, and they may leave the update itself
	// to the group's end (GroupMerge). (The writes of a group are
	// concurrent requests: any order is one they could have arrived in.)
	Contended WriteOptions = 1 << 1
	// Alone is for a write whose lost acknowledgement no client retries
	// (work that only a slow reconciler would find again). A process killed
	// during a group's COMMIT (or just after it, before its callers ran on)
	// leaves every write of the group committed with no one acting on it.
	// Alone in its transaction (on PostgreSQL; SQLite's committer is
	// unchanged), a crash holds back one such write, as before group
	// commit, not a group's worth.
	Alone WriteOptions = 1 << 2
)

type writeReq struct {
	ctx  context.Context
	fn   func(*Tx) error
	done chan error
	// tries counts the times fn lost a deadlock or serialization conflict
	// (PostgreSQL); see maxTries.
	tries int
	// contended: see Contended; alone: see Alone.
	contended, alone bool
	// touch is what fn's last run named (touches.go); touchBuf holds the
	// first account it names, so that naming one allocates nothing.
	touch    touches
	touchBuf [1]int64
}

// ErrClosed is the error of a write made after (or queued too late before)
// DB.Close: it was not made.
var ErrClosed = errors.New("store: closed")

// Write runs fn in a transaction, as opt says, and returns once it is
// durably committed (or rolled back because fn failed); the call joins the
// next group commit (see committer). fn may run more than once (the group
// it was in failed or lost a conflict), each time from the start.
func (db *DB) Write(ctx context.Context, opt WriteOptions, fn func(*Tx) error) error {
	req := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1), contended: opt&Contended != 0, alone: opt&Alone != 0}
	if opt&KeepCache != 0 {
		return db.enqueue(req)
	}
	if db.engine == Postgres {
		req.fn = func(tx *Tx) error {
			if err := fn(tx); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `SELECT pg_notify('`+cacheChannel+`', coalesce(current_schema(), ''))`)
			return err
		}
		err := db.enqueue(req)
		if db.cache != nil {
			// Even after an error: a failed commit may still have landed.
			db.cache.invalidate()
		}
		return err
	}
	req.fn = func(tx *Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, db.bump)
		return err
	}
	return db.enqueue(req)
}

func (db *DB) enqueue(req *writeReq) error {
	ctx := req.ctx
	// Read-locked while queueing, so that Close can stop admitting writes
	// and then answer every one already queued.
	db.closeMu.RLock()
	if db.closed {
		db.closeMu.RUnlock()
		return ErrClosed
	}
	select {
	case db.batch <- req:
	case <-ctx.Done():
		db.closeMu.RUnlock()
		return ctx.Err()
	}
	db.closeMu.RUnlock()
	// Once queued, wait for the outcome even if ctx ends: the committer decides
	// whether the write happened, and the caller must learn which.
	return <-req.done
}

// OnWake sets fn (nil: none) to run after every commit of a group in which
// a write called Tx.Wake, so that a background worker of this process starts
// at once instead of at its next poll. One listener per DB, in this process
// only: other processes find the work by polling. fn runs on the committer's
// path and must return at once.
func (db *DB) OnWake(fn func()) {
	if fn == nil {
		db.onWake.Store(nil)
		return
	}
	db.onWake.Store(&fn)
}

// woken runs the OnWake listener if t, just committed, asked for it.
func (db *DB) woken(t *Tx) {
	if !t.wake {
		return
	}
	if fn := db.onWake.Load(); fn != nil {
		(*fn)()
	}
}
