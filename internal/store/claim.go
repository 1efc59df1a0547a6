package store

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sync"
	"time"

	"switchboard/internal/store/sqldb"
)

// ClaimTable names a claimable table: a queue of background work that
// several Switchboard processes may share. Only registered names are accepted.
//
// Background work that several Switchboard processes may share (webhook
// deliveries, scheduled messages) is kept as rows of a claimable table, and a
// process takes rows with Claim before working on them. A claimable table has
// at least these columns:
//
//	id          integer primary key
//	due_at      BIGINT   -- unix micros; the row is work once due_at <= now; NULL: nothing to do
//	lease_owner TEXT     -- the claimer holding the row; NULL when free
//	lease_until BIGINT   -- unix micros the lease ends; NULL when free
//
// and should have the index
//
//	CREATE INDEX <table>_due ON <table> (due_at, id) WHERE due_at IS NOT NULL;
//
// (a partial index: both engines accept it, and it holds only pending work).
// Its name is declared once, next to the table's other store code, and
// registered so that Claim and Release build no SQL from a caller's string:
//
//	const ClaimWebhookDeliveries ClaimTable = "webhook_deliveries"
//
//	func init() { registerClaimTable(ClaimWebhookDeliveries) }
//
// Claim leases rows that are due and not leased (or whose lease ran out) to
// one owner for a while; nobody else gets them until then. The owner does the
// work, then calls Release (or, inside its own store method's transaction,
// releaseClaim) with the next time the row is due, or nil when it is done.
// Release acts only while the row is still leased to that owner, so a process
// whose lease ran out and was claimed by another cannot overwrite the other's
// outcome; it gets ErrLeaseLost instead. A lease must therefore be longer than
// the work takes (an HTTP delivery's timeout plus margin), and a crashed
// process's rows come back by themselves once their leases end.
//
// PostgreSQL claims with SELECT … FOR UPDATE SKIP LOCKED, so concurrent
// claimers (in one process or on many nodes) take disjoint rows without
// waiting on each other. SQLite claims through the single writer, which
// already runs one write at a time, and across processes BEGIN IMMEDIATE
// serializes the writers.
type ClaimTable string

// ErrLeaseLost reports that a row was no longer leased to the owner releasing
// it: its lease ran out and another owner claimed it, or it never was leased.
var ErrLeaseLost = errors.New("store: lease lost")

// claimSQL is a registered table's statements, built once from its name.
type claimSQL struct {
	sqlite, postgres, release string
}

var (
	claimMu     sync.RWMutex
	claimTables = map[ClaimTable]*claimSQL{}
	claimName   = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

// registerClaimTable adds t to the tables Claim and Release accept. It is
// called from an init function in the file that owns the table, and panics on
// a name that is not a plain SQL identifier or is registered twice.
func registerClaimTable(t ClaimTable) {
	if !claimName.MatchString(string(t)) {
		panic(fmt.Sprintf("store: claim table %q is not a plain identifier", t))
	}
	claimMu.Lock()
	defer claimMu.Unlock()
	if claimTables[t] != nil {
		panic(fmt.Sprintf("store: claim table %q registered twice", t))
	}
	claimTables[t] = claimStatementsFor(t, "")
}

// claimStatementsFor builds t's statements; filter, when not empty, is one
// more condition a claimed row must meet (SQL of the caller's, never input).
func claimStatementsFor(t ClaimTable, filter string) *claimSQL {
	if filter != "" {
		filter = " AND " + filter
	}
	pick := `SELECT id FROM ` + string(t) + ` WHERE due_at <= ? AND (lease_until IS NULL OR lease_until <= ?)` + filter + ` ORDER BY due_at, id LIMIT ?`
	return &claimSQL{
		// MATERIALIZED: the locking pick runs exactly once, so the LIMIT
		// holds and every row it returns is one it locked.
		postgres: `WITH c AS MATERIALIZED (` + pick + ` FOR UPDATE SKIP LOCKED) ` +
			`UPDATE ` + string(t) + ` SET lease_owner = ?, lease_until = ? FROM c WHERE ` + string(t) + `.id = c.id ` +
			`RETURNING ` + string(t) + `.id, ` + string(t) + `.due_at`,
		sqlite:  `UPDATE ` + string(t) + ` SET lease_owner = ?, lease_until = ? WHERE id IN (` + pick + `) RETURNING id, due_at`,
		release: `UPDATE ` + string(t) + ` SET lease_owner = NULL, lease_until = NULL, due_at = ? WHERE id = ? AND lease_owner = ?`,
	}
}

func claimStatements(t ClaimTable) (*claimSQL, error) {
	claimMu.RLock()
	defer claimMu.RUnlock()
	if c := claimTables[t]; c != nil {
		return c, nil
	}
	return nil, fmt.Errorf("store: %q is not a registered claim table", t)
}

// NewLeaseOwner returns an owner name for Claim that no other process (or
// other claimer in this one) uses: service, host, process id and a random tag.
func NewLeaseOwner(service string) string {
	host, _ := os.Hostname()
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s@%s:%d:%s", service, host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Claim leases up to limit of table's due rows to owner for lease and returns
// their ids, oldest due first (due_at, then id). A row is due when due_at <=
// now and it is not leased, or its lease has ended. No other Claim gets a row
// until its lease ends or owner releases it.
func (s *Store) Claim(ctx context.Context, table ClaimTable, owner string, limit int, lease time.Duration) ([]int64, error) {
	c, err := claimStatements(table)
	if err != nil {
		return nil, err
	}
	return s.claim(ctx, table, c, nil, owner, limit, lease)
}

// claim runs c, whose filter (if any) takes filterArgs.
func (s *Store) claim(ctx context.Context, table ClaimTable, c *claimSQL, filterArgs []any, owner string, limit int, lease time.Duration) ([]int64, error) {
	if owner == "" || limit <= 0 || lease <= 0 {
		return nil, fmt.Errorf("store: claim %s: want an owner, a positive limit and lease (got %q, %d, %v)", table, owner, limit, lease)
	}
	type claimed struct{ id, due int64 }
	var got []claimed
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.TouchesNone() // a lease: no page shows it
		// On SQLite this function may run twice (a batch retried in
		// savepoints); only the last run's rows were committed.
		got = got[:0]
		until := tx.Now() + lease.Microseconds()
		pick := append(append([]any{tx.Now(), tx.Now()}, filterArgs...), limit)
		query, args := c.sqlite, append([]any{owner, until}, pick...)
		if s.db.Engine() == Postgres {
			query, args = c.postgres, append(pick, owner, until)
		}
		return tx.Query(ctx, query, args, func(r row) error {
			var cl claimed
			if err := r.Scan(&cl.id, &cl.due); err != nil {
				return err
			}
			got = append(got, cl)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: claim %s: %w", table, err)
	}
	// RETURNING promises no order.
	slices.SortFunc(got, func(a, b claimed) int {
		if a.due != b.due {
			return cmp.Compare(a.due, b.due)
		}
		return cmp.Compare(a.id, b.id)
	})
	ids := make([]int64, len(got))
	for i, cl := range got {
		ids[i] = cl.id
	}
	return ids, nil
}

// Release ends owner's lease on table's row id and sets when the row is next
// due: nextDue, or never (due_at NULL) when nextDue is nil. It returns
// ErrLeaseLost, changing nothing, if the row is not leased to owner.
func (s *Store) Release(ctx context.Context, table ClaimTable, owner string, id int64, nextDue *time.Time) error {
	var due *int64
	if nextDue != nil {
		us := micros(*nextDue)
		due = &us
	}
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.TouchesNone() // a lease: no page shows it
		return releaseClaim(ctx, tx, table, owner, id, due)
	})
}

// releaseClaim is Release inside a store method's own transaction, so that a
// row's outcome (a delivery attempt, a sent message) and the end of its lease
// commit together; ErrLeaseLost then rolls the outcome back as well. nextDue
// is in unix micros; nil means never.
func releaseClaim(ctx context.Context, t *Tx, table ClaimTable, owner string, id int64, nextDue *int64) error {
	c, err := claimStatements(table)
	if err != nil {
		return err
	}
	var due any
	if nextDue != nil {
		due = *nextDue
	}
	res, err := t.Exec(ctx, c.release, due, id, owner)
	if err != nil {
		return fmt.Errorf("store: release %s %d: %w", table, id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store: release %s %d: %w", table, id, err)
	} else if n == 0 {
		return ErrLeaseLost
	}
	return nil
}
