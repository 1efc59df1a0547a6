package sqldb

import (
	"slices"
	"strconv"
	"strings"
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
// What a write named is kept on its request (writeReq.touch), set by the
// run of its function in its group's transaction (runFn); the Tx keeps the
// requests it ran, whose names its commit notification carries.

// touches is what one run of a write function named.
type touches struct {
	named bool // Touches or TouchesNone was called
	// all: the run named nothing (set when it returned), so every
	// account's pages may have changed.
	all bool
	ids []int64
}

// Touches says that the running write function may change what account
// accountID's kept pages show (DB.Page); see the package's rule above.
func (t *Tx) Touches(accountID int64) {
	if r := t.cur; r != nil {
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
	if r := t.cur; r != nil {
		r.touch.named = true
	}
}

// touched returns what the writes reqs, whose group just committed (or
// failed to), named in their last run.
func touched(reqs []*writeReq) (all bool, ids []int64) {
	for _, r := range reqs {
		all = all || r.touch.all
		ids = append(ids, r.touch.ids...)
	}
	return all, ids
}

// commitPayload is the tail of t's commit notification (commitNotify): the
// accounts its group's writes named, for the other nodes' pages.
func (t *Tx) commitPayload() string {
	all, ids := touched(t.ran)
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
