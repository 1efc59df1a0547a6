package sqldb

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

// On PostgreSQL a node learns of another node's commit from its
// notification, which arrives a moment after that commit was answered: a
// client whose write one node answered could read the other node's page
// kept from before it. So before a kept page is answered, the node passes a
// fence: it sends a notification of its own (fenceNotify) and waits until
// its listener receives it. PostgreSQL queues notifications in commit order
// and the listener applies them in that order, so by then every commit
// answered before the fence was sent has moved the commit counter. Readers
// that arrive together share one fence (fencer batches them). A fence that
// does not come back within fenceWait (the listener is lost and does not
// know it yet) sends the read to the database.
//
// The fence's transaction commits without waiting for its WAL flush
// (synchronous_commit off: it changes nothing), so a fence costs a round
// trip to PostgreSQL and the notification's way back, not a disk write.
const fenceNotify = `SELECT set_config('synchronous_commit', 'off', true), pg_notify('` + commitChannel + `', coalesce(current_schema(), '') || '` + fenceMark + `' || $1)`

// fenceMark separates the schema from the fence's name in its payload.
const fenceMark = "/fence/"

const fenceWait = time.Second

var errFence = errors.New("store: pages: fence did not return")

type fencer struct {
	db     *DB
	prefix string // this node's fence names start with it

	mu      sync.Mutex
	next    *fence            // collecting readers; not sent yet
	sending bool              // a goroutine sends fences (run)
	out     map[string]*fence // sent, by name, until the listener hears them
	n       uint64
}

type fence struct {
	name string
	done chan struct{} // closed when it came back, or was given up (lost)
	lost bool          // set before done is closed
}

func newFencer(db *DB) *fencer {
	return &fencer{db: db, prefix: strconv.FormatUint(rand.Uint64(), 36) + ".", out: map[string]*fence{}}
}

// wait returns once a fence sent after the call has come back.
func (f *fencer) wait(ctx context.Context) error {
	f.mu.Lock()
	if f.next == nil {
		f.n++
		f.next = &fence{name: f.prefix + strconv.FormatUint(f.n, 36), done: make(chan struct{})}
	}
	fc := f.next
	if !f.sending {
		f.sending = true
		go f.run()
	}
	f.mu.Unlock()
	t := time.NewTimer(2 * fenceWait) // run gives up on it before
	defer t.Stop()
	select {
	case <-fc.done:
		if fc.lost {
			return errFence
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return errFence
	}
}

// run sends the fences readers wait for, one at a time: the readers who
// arrive while one is out share the next.
func (f *fencer) run() {
	for {
		f.mu.Lock()
		fc := f.next
		f.next = nil
		if fc == nil {
			f.sending = false
			f.mu.Unlock()
			return
		}
		f.out[fc.name] = fc
		f.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), fenceWait)
		_, err := f.db.w.ExecContext(ctx, fenceNotify, fc.name)
		if err == nil {
			select {
			case <-fc.done:
			case <-ctx.Done():
			}
		}
		cancel()
		f.mu.Lock()
		if f.out[fc.name] == fc {
			// Not back: its readers read the database.
			delete(f.out, fc.name)
			fc.lost = true
			close(fc.done)
		}
		f.mu.Unlock()
	}
}

// heard is the listener's: a fence's notification arrived (payload without
// the schema and fenceMark). Other nodes' fences are ignored.
func (f *fencer) heard(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fc := f.out[name]; fc != nil {
		delete(f.out, name)
		close(fc.done)
	}
}
