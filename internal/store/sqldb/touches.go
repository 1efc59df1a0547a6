package sqldb

import (
	"slices"
	"strconv"
	"strings"
	"sync"
)

// A write names the accounts whose kept pages (pages.go) it may change, so
// that its commit makes only their pages stale: Tx.Touches, once per
// account, or Tx.TouchesNone for a write that changes nothing any page
// shows (a queue's lease, a delivery attempt). A write function that names
// nothing makes every account's pages stale, so a write path that forgets
// to name its accounts is slower, never wrong.
//
// The names cover the whole write function: once it named one account, a
// change it makes to another account's pages without naming that one goes
// unseen. So name in the write function itself, or in a helper only when
// every caller changes nothing beyond what the helper names (a helper
// cannot know what else its caller changes). Name every account whose
// pages the function may change, before or after changing them (a write
// that fails is undone, whatever it named).
//
// What a write named is kept beside its request (writeReq.touch), reached
// from the Tx it runs in through txWrites, since a Tx lives only for one
// run of its group.

// touches is what one run of a write function named.
type touches struct {
	named bool // Touches or TouchesNone was called
	// all: the run named nothing (set when it returned), so every
	// account's pages may have changed.
	all bool
	ids []int64
}

// txWrites is one Tx's record: the write function running in it, and every
// one that ran in it (PostgreSQL's commit notification names theirs).
type txWrites struct {
	cur *writeReq
	ran []*writeReq
}

// writeTrack maps each Tx that runs writes to its record. Entries go when
// their writes' group is counted (committed) or a write of theirs runs
// again in a newer Tx.
type writeTrack struct {
	mu  sync.Mutex
	txs map[*Tx]*txWrites
}

// Touches says that the running write function may change what account
// accountID's kept pages show (DB.Page); see the package's rule above.
func (t *Tx) Touches(accountID int64) {
	tr := &t.db.track
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if w := tr.txs[t]; w != nil && w.cur != nil {
		r := w.cur
		r.touch.named = true
		if !slices.Contains(r.touch.ids, accountID) {
			r.touch.ids = append(r.touch.ids, accountID)
		}
	}
}

// TouchesNone says that the running write function changes nothing any
// kept page shows, whatever account it belongs to: only tables no page
// reads (a queue, its leases, webhook deliveries). Calls of Touches in the
// same function still count.
func (t *Tx) TouchesNone() {
	tr := &t.db.track
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if w := tr.txs[t]; w != nil && w.cur != nil {
		w.cur.touch.named = true
	}
}

// tracked wraps r's function so that what it names is recorded on r.
func (db *DB) tracked(r *writeReq, fn func(*Tx) error) func(*Tx) error {
	return func(t *Tx) error {
		tr := &db.track
		tr.mu.Lock()
		if r.tx != t {
			// r ran in an older Tx of its group (rolled back to run again
			// in savepoints): that Tx is over, with its record.
			if r.tx != nil {
				delete(tr.txs, r.tx)
			}
			r.tx = t
		}
		if tr.txs == nil {
			tr.txs = map[*Tx]*txWrites{}
		}
		w := tr.txs[t]
		if w == nil {
			w = &txWrites{}
			tr.txs[t] = w
		}
		w.cur = r
		w.ran = append(w.ran, r)
		r.touch = touches{}
		tr.mu.Unlock()
		defer func() {
			tr.mu.Lock()
			w.cur = nil
			r.touch.all = !r.touch.named
			tr.mu.Unlock()
		}()
		return fn(t)
	}
}

// touched returns what the writes reqs, whose group just committed (or
// failed to), named, and forgets their Tx records.
func (db *DB) touched(reqs []*writeReq) (all bool, ids []int64) {
	tr := &db.track
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, r := range reqs {
		if r.tx != nil {
			delete(tr.txs, r.tx)
			r.tx = nil
		}
		all = all || r.touch.all
		ids = append(ids, r.touch.ids...)
	}
	return all, ids
}

// commitPayload is the tail of t's commit notification (commitNotify): the
// accounts its group's writes named, for the other nodes' pages.
func (t *Tx) commitPayload() string {
	tr := &t.db.track
	tr.mu.Lock()
	var all bool
	var ids []int64
	if w := tr.txs[t]; w != nil {
		for _, r := range w.ran {
			all = all || r.touch.all
			ids = append(ids, r.touch.ids...)
		}
	} else {
		all = true
	}
	tr.mu.Unlock()
	return touchMark + encodeTouched(all, ids)
}

// touchMark separates the schema from the accounts in a commit
// notification's payload. A payload that is the schema alone (a node from
// before accounts were named) makes every page stale.
const touchMark = "/touch/"

// maxTouchedBytes bounds the accounts' text in a notification: PostgreSQL
// refuses a payload of 8000 bytes or more, and the schema's name goes
// before it. A group that names more accounts says all.
const maxTouchedBytes = 7000

// encodeTouched writes the accounts a group named as the payload's tail:
// "*" for every account, "-" for none, or their ids in decimal, separated
// by commas.
func encodeTouched(all bool, ids []int64) string {
	if all {
		return "*"
	}
	if len(ids) == 0 {
		return "-"
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	b := make([]byte, 0, 8*len(ids))
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
		if len(b) > maxTouchedBytes {
			return "*"
		}
	}
	return string(b)
}

// decodeTouched reads encodeTouched's text. Anything it does not
// understand ("*", empty, a malformed id) means every account.
func decodeTouched(s string) (all bool, ids []int64) {
	switch s {
	case "-":
		return false, nil
	case "", "*":
		return true, nil
	}
	for f := range strings.SplitSeq(s, ",") {
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return true, nil
		}
		ids = append(ids, id)
	}
	return false, ids
}
