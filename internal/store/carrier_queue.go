package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"switchboard/internal/store/sqldb"
)

// A carrier connection's queue and binds (migration 0039): what package
// carriers keeps across nodes. What a turn, a bind or a lease means for
// sending is that package's; this file keeps the rows.
// No kept page (sqldb.Pages) shows them: every write here says so
// (Tx.TouchesNone), so that a busy queue leaves every account's pages kept.

// CarrierQueued is a message in a connection's queue.
type CarrierQueued struct {
	ID, MessageID int64
	// Payload is what the carrier is handed, as the queue's owner wrote it.
	Payload   []byte
	Due       time.Time
	Tries     int
	CreatedAt time.Time
}

// EnqueueCarrier puts message messageID in connection carrierID's queue
// and returns its turn: now, or, when every > 0, the next free turn of
// number on the connection, every apart from the one before it (shared by
// every node through carrier_number_slots).
func (s *Store) EnqueueCarrier(ctx context.Context, carrierID, messageID int64, payload []byte, number string, every time.Duration) (time.Time, error) {
	var due int64
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.TouchesNone()
		now := tx.Now()
		due = now
		if every > 0 {
			step := every.Microseconds()
			// One statement takes the turn, so that two sends at once on
			// different nodes cannot take the same one.
			var next int64
			err := tx.QueryRow(ctx, `INSERT INTO carrier_number_slots (carrier_id, number, next_at) VALUES (?, ?, ?)
				ON CONFLICT (carrier_id, number) DO UPDATE SET next_at =
					CASE WHEN carrier_number_slots.next_at > ? THEN carrier_number_slots.next_at ELSE ? END + ?
				RETURNING next_at`, carrierID, number, now+step, now, now, step).Scan(&next)
			if err != nil {
				return fmt.Errorf("number's turn: %w", err)
			}
			due = next - step
		}
		_, err := tx.Exec(ctx, `INSERT INTO carrier_queue (carrier_id, message_id, payload, due_at, created_at) VALUES (?, ?, ?, ?, ?)`,
			carrierID, messageID, string(payload), due, now)
		return err
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("store: enqueue for carrier: %w", err)
	}
	return fromMicros(due), nil
}

// ClaimCarrierQueue takes up to limit of connection carrierID's due
// messages, in turn order, for owner to send now: each is marked sending,
// and never claimed again (see ReleaseCarrierQueued, DropStaleCarrierSends).
func (s *Store) ClaimCarrierQueue(ctx context.Context, carrierID int64, owner string, limit int, lease time.Duration) ([]CarrierQueued, error) {
	var got []CarrierQueued
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.TouchesNone()
		got = got[:0]
		now := tx.Now()
		pick := `SELECT id FROM carrier_queue WHERE carrier_id = ? AND due_at <= ? AND NOT sending ORDER BY due_at, id LIMIT ?`
		set := `SET sending = TRUE, lease_owner = ?, lease_until = ?, tries = tries + 1`
		ret := ` RETURNING carrier_queue.id, message_id, payload, due_at, tries, created_at`
		query := `UPDATE carrier_queue ` + set + ` WHERE id IN (` + pick + `)` + ret
		args := []any{owner, now + lease.Microseconds(), carrierID, now, limit}
		if s.db.Engine() == Postgres {
			// SKIP LOCKED: binds on several nodes take disjoint rows
			// without waiting on each other.
			query = `WITH c AS MATERIALIZED (` + pick + ` FOR UPDATE SKIP LOCKED) UPDATE carrier_queue ` + set +
				` FROM c WHERE carrier_queue.id = c.id` + ret
			args = []any{carrierID, now, limit, owner, now + lease.Microseconds()}
		}
		return tx.Query(ctx, query, args, func(r row) error {
			var q CarrierQueued
			var payload string
			var due, created int64
			if err := r.Scan(&q.ID, &q.MessageID, &payload, &due, &q.Tries, &created); err != nil {
				return err
			}
			q.Payload, q.Due, q.CreatedAt = []byte(payload), fromMicros(due), fromMicros(created)
			got = append(got, q)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("store: claim carrier queue: %w", err)
	}
	slices.SortFunc(got, func(a, b CarrierQueued) int { // RETURNING promises no order
		return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(a.ID, b.ID))
	})
	return got, nil
}

// ReleaseCarrierQueued puts a claimed message back in its queue, due at
// due: the carrier certainly did not take it (no bind was up, or it asked
// to be sent later). It reports false, changing nothing, when owner no
// longer holds it.
func (s *Store) ReleaseCarrierQueued(ctx context.Context, id int64, owner string, due time.Time) (bool, error) {
	var ok bool
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.TouchesNone()
		res, err := tx.Exec(ctx, `UPDATE carrier_queue SET sending = FALSE, lease_owner = NULL, lease_until = NULL, due_at = ? WHERE id = ? AND lease_owner = ?`,
			micros(due), id, owner)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		ok = n == 1
		return err
	})
	return ok, err
}

// DoneCarrierQueued removes a sent (or refused) message from its queue.
func (s *Store) DoneCarrierQueued(ctx context.Context, id int64) error {
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.TouchesNone()
		_, err := tx.Exec(ctx, `DELETE FROM carrier_queue WHERE id = ?`, id)
		return err
	})
}

// DropStaleCarrierSends removes the messages whose sender stopped while
// sending them (marked sending, lease over): the carrier may have them, so
// they are never sent again; their messages stay pending for a receipt or
// the reconciler. It returns their message ids.
func (s *Store) DropStaleCarrierSends(ctx context.Context) ([]int64, error) {
	var ids []int64
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.TouchesNone()
		ids = ids[:0]
		return tx.Query(ctx, `DELETE FROM carrier_queue WHERE sending AND lease_until <= ? RETURNING message_id`, []any{tx.Now()}, func(r row) error {
			var id int64
			if err := r.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
			return nil
		})
	})
	return ids, err
}

// CarrierQueueNext is the due time of connection carrierID's next message
// not being sent, and how many wait; ok is false when none does.
func (s *Store) CarrierQueueNext(ctx context.Context, carrierID int64) (next time.Time, waiting int, ok bool, err error) {
	var due sql.NullInt64
	err = s.db.QueryRow(ctx, `SELECT MIN(due_at), COUNT(*) FROM carrier_queue WHERE carrier_id = ? AND NOT sending`, carrierID).Scan(&due, &waiting)
	if err != nil || !due.Valid {
		return time.Time{}, 0, false, err
	}
	return fromMicros(due.Int64), waiting, true, nil
}

// CarrierQueueCounts counts each connection's queue: messages waiting
// their turn, and those being sent.
func (s *Store) CarrierQueueCounts(ctx context.Context) (waiting, sending map[int64]int, err error) {
	waiting, sending = map[int64]int{}, map[int64]int{}
	rows, err := s.db.Query(ctx, `SELECT carrier_id, sending, COUNT(*) FROM carrier_queue GROUP BY carrier_id, sending`)
	if err != nil {
		return nil, nil, fmt.Errorf("store: carrier queue counts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var isSending bool
		var n int
		if err := rows.Scan(&id, &isSending, &n); err != nil {
			return nil, nil, err
		}
		if isSending {
			sending[id] = n
		} else {
			waiting[id] = n
		}
	}
	return waiting, sending, rows.Err()
}

// CarrierBind is a lease on one of a connection's binds.
type CarrierBind struct {
	CarrierID  int64
	Slot       int
	Owner      string
	LeaseUntil time.Time
	InFlight   int
}

// TakeCarrierBind leases to owner, for lease, the first of connection
// carrierID's slots (0 to slots-1) that nobody holds (or whose lease
// ended); ok is false when all are held.
func (s *Store) TakeCarrierBind(ctx context.Context, carrierID int64, slots int, owner string, lease time.Duration) (slot int, ok bool, err error) {
	err = s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.TouchesNone()
		ok = false
		now := tx.Now()
		held := map[int]bool{}
		err := tx.Query(ctx, `SELECT slot FROM carrier_binds WHERE carrier_id = ? AND lease_until > ?`, []any{carrierID, now}, func(r row) error {
			var n int
			err := r.Scan(&n)
			held[n] = true
			return err
		})
		if err != nil {
			return err
		}
		for slot = 0; slot < slots; slot++ {
			if held[slot] {
				continue
			}
			// The condition makes the take a compare-and-set: another node
			// that took the slot since the read above keeps it.
			res, err := tx.Exec(ctx, `INSERT INTO carrier_binds (carrier_id, slot, owner, lease_until) VALUES (?, ?, ?, ?)
				ON CONFLICT (carrier_id, slot) DO UPDATE SET owner = excluded.owner, lease_until = excluded.lease_until, in_flight = 0
				WHERE carrier_binds.lease_until <= ?`, carrierID, slot, owner, now+lease.Microseconds(), now)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 1 {
				ok = true
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("store: take carrier bind: %w", err)
	}
	return slot, ok, nil
}

// RenewCarrierBind extends owner's lease on connection carrierID's slot
// and records its submits in flight; ok is false when owner no longer
// holds it (another node took it after the lease ended).
func (s *Store) RenewCarrierBind(ctx context.Context, carrierID int64, slot int, owner string, lease time.Duration, inFlight int) (ok bool, err error) {
	err = s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.TouchesNone()
		res, err := tx.Exec(ctx, `UPDATE carrier_binds SET lease_until = ?, in_flight = ? WHERE carrier_id = ? AND slot = ? AND owner = ?`,
			tx.Now()+lease.Microseconds(), inFlight, carrierID, slot, owner)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		ok = n == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: renew carrier bind: %w", err)
	}
	return ok, nil
}

// ReleaseCarrierBind gives up owner's lease on connection carrierID's slot.
func (s *Store) ReleaseCarrierBind(ctx context.Context, carrierID int64, slot int, owner string) error {
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.TouchesNone()
		_, err := tx.Exec(ctx, `DELETE FROM carrier_binds WHERE carrier_id = ? AND slot = ? AND owner = ?`, carrierID, slot, owner)
		return err
	})
}

// CarrierBinds lists the binds held now (leases not ended), by connection
// and slot.
func (s *Store) CarrierBinds(ctx context.Context) ([]CarrierBind, error) {
	rows, err := s.db.Query(ctx, `SELECT carrier_id, slot, owner, lease_until, in_flight FROM carrier_binds WHERE lease_until > ? ORDER BY carrier_id, slot`,
		micros(s.db.Now()))
	if err != nil {
		return nil, fmt.Errorf("store: carrier binds: %w", err)
	}
	defer rows.Close()
	var out []CarrierBind
	for rows.Next() {
		var b CarrierBind
		var until int64
		if err := rows.Scan(&b.CarrierID, &b.Slot, &b.Owner, &until, &b.InFlight); err != nil {
			return nil, err
		}
		b.LeaseUntil = fromMicros(until)
		out = append(out, b)
	}
	return out, rows.Err()
}

// InCarrierQueue reports whether message id waits in a connection's queue
// (or is being sent from it).
func (s *Store) InCarrierQueue(ctx context.Context, id int64) (bool, error) {
	var n int
	err := s.db.QueryRow(ctx, `SELECT COUNT(*) FROM carrier_queue WHERE message_id = ?`, id).Scan(&n)
	return n > 0, err
}
