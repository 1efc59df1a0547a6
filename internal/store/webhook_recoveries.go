package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// Recover jobs (POST /webhooks/{id}/recover, migration 0026): a job sends
// again every delivery of its subscription, for events in its window, that
// did not succeed, with the event's own webhook-id. It is background work in
// a claimable table, taken up by any node's dispatcher and done in batches
// (RecoverBatch), each one transaction.

// ClaimWebhookRecoveries is the claimable table of recover jobs.
const ClaimWebhookRecoveries ClaimTable = "webhook_recoveries"

func init() { registerClaimTable(ClaimWebhookRecoveries) }

// RecoverBatchSize is how many of the subscription's deliveries a batch of
// the dispatcher's looks at: one short transaction (on SQLite it holds the
// one writer).
const RecoverBatchSize = 500

// recoverStartMargin is how much earlier than a window's start the scan of
// a subscription's deliveries starts. Delivery ids follow their creation
// time only roughly (PostgreSQL hands ids out in one order and commits in
// another; nodes' clocks differ), and a delivery is never created before its
// event: starting this much before the window misses none of its events.
const recoverStartMargin = 10 * time.Minute

// recoveryColumns are what WebhookRecovery reads of a job.
const recoveryColumns = `id, account_id, webhook_id, status, since_at, until_at, queued, created_at, updated_at, finished_at`

// CreateWebhookRecovery starts a recover job for the account's subscription
// webhookID over the events of [since, until): until zero or later than now
// means now. The subscription must be enabled (a disabled one skips what is
// queued to it) and have no other job running; since must be before until,
// and not before now minus retention (older deliveries are pruned). The job
// is due at once, and this process's dispatcher is woken.
func (s *Store) CreateWebhookRecovery(ctx context.Context, accountID, webhookID int64, since, until time.Time, retention time.Duration) (domain.WebhookRecovery, error) {
	// Where the scan starts is found first, by reads outside the write: a
	// start found on an older snapshot is still a safe start (later
	// deliveries have later ids).
	start, err := s.recoverStart(ctx, webhookID, since.Add(-recoverStartMargin))
	if err != nil {
		return domain.WebhookRecovery{}, err
	}
	var id int64
	err = s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		var enabled bool
		// Locked (PostgreSQL), so that two requests for the subscription
		// cannot both find no job running.
		if err := tx.QueryRow(ctx, `SELECT enabled FROM webhooks WHERE id = ? AND account_id = ?`+s.db.ForUpdate(), webhookID, accountID).Scan(&enabled); err != nil {
			return notFound(err, "webhook")
		}
		if !enabled {
			return domain.Errorf(domain.Conflict, "webhook %d is disabled: enable it first (a disabled webhook's deliveries are skipped, not sent)", webhookID)
		}
		var running int64
		err := tx.QueryRow(ctx, `SELECT id FROM webhook_recoveries WHERE webhook_id = ? AND status = ? LIMIT 1`, webhookID, domain.RecoveryRunning).Scan(&running)
		if err == nil {
			return domain.Errorf(domain.Conflict, "recover %d of webhook %d is still running: GET /webhooks/%d/recover/%d follows it", running, webhookID, webhookID, running)
		} else if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: recover: %w", err)
		}
		now := tx.Now()
		from, to := micros(since), micros(until)
		if until.IsZero() || to > now {
			to = now
		}
		if oldest := now - retention.Microseconds(); from < oldest {
			return domain.Errorf(domain.Invalid, "since is before %s: deliveries older than the webhook retention (%s) are deleted",
				fromMicros(oldest).Format(time.RFC3339), retention)
		}
		if from >= to {
			return domain.Errorf(domain.Invalid, "since must be before until (which is now when not given or in the future)")
		}
		var last sql.NullInt64
		if err := tx.QueryRow(ctx, `SELECT MAX(id) FROM webhook_deliveries WHERE webhook_id = ?`, webhookID).Scan(&last); err != nil {
			return fmt.Errorf("store: recover: %w", err)
		}
		id, err = tx.Insert(ctx, `INSERT INTO webhook_recoveries (account_id, webhook_id, since_at, until_at, last_delivery, cursor_id, status, created_at, updated_at, due_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, accountID, webhookID, from, to, last.Int64, start, domain.RecoveryRunning, now, now, now)
		if err != nil {
			return fmt.Errorf("store: recover: %w", err)
		}
		tx.Wake() // due now: wake the dispatcher
		return nil
	})
	if err != nil {
		return domain.WebhookRecovery{}, err
	}
	return s.WebhookRecovery(ctx, accountID, webhookID, id)
}

// recoverStart returns the id after which a scan of the subscription's
// deliveries for events since from starts: the largest id of a delivery
// created before from, found by bisecting the ids (a delivery's creation
// time grows with its id, up to recoverStartMargin), so a job over the last
// hour does not read a month of deliveries first. 0 scans from the start.
func (s *Store) recoverStart(ctx context.Context, webhookID int64, from time.Time) (int64, error) {
	threshold := micros(from)
	// after(x) reports whether the first delivery with an id of x or more
	// was created at or after from (or there is none): false at lo, true at
	// hi throughout.
	after := func(x int64) (bool, int64, error) {
		var id, created int64
		err := s.db.QueryRow(ctx, `SELECT id, created_at FROM webhook_deliveries WHERE webhook_id = ? AND id >= ? ORDER BY id LIMIT 1`, webhookID, x).Scan(&id, &created)
		if errors.Is(err, sql.ErrNoRows) {
			return true, 0, nil
		}
		if err != nil {
			return false, 0, fmt.Errorf("store: recover start: %w", err)
		}
		return created >= threshold, id, nil
	}
	ok, first, err := after(0)
	if err != nil || ok {
		return 0, err
	}
	var hi int64
	if err := s.db.QueryRow(ctx, `SELECT COALESCE(MAX(id), 0) FROM webhook_deliveries WHERE webhook_id = ?`, webhookID).Scan(&hi); err != nil {
		return 0, fmt.Errorf("store: recover start: %w", err)
	}
	lo := first // a delivery created before from
	hi++
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, id, err := after(mid)
		if err != nil {
			return 0, err
		}
		switch {
		case ok:
			hi = mid
		default:
			lo = min(id, hi-1) // the delivery found, created before from
		}
	}
	return lo, nil
}

// WebhookRecovery returns the account's recover job id of subscription
// webhookID, with the states of the deliveries it queued.
func (s *Store) WebhookRecovery(ctx context.Context, accountID, webhookID, id int64) (domain.WebhookRecovery, error) {
	var r domain.WebhookRecovery
	var since, until, created, updated int64
	var finished sql.NullInt64
	err := s.db.QueryRow(ctx, `SELECT `+recoveryColumns+` FROM webhook_recoveries WHERE id = ? AND webhook_id = ? AND account_id = ?`, id, webhookID, accountID).
		Scan(&r.ID, &r.AccountID, &r.WebhookID, &r.Status, &since, &until, &r.Queued, &created, &updated, &finished)
	if err != nil {
		return r, notFound(err, "recover")
	}
	r.Since, r.Until, r.CreatedAt, r.UpdatedAt = fromMicros(since), fromMicros(until), fromMicros(created), fromMicros(updated)
	if finished.Valid {
		t := fromMicros(finished.Int64)
		r.FinishedAt = &t
	}
	r.Deliveries = map[string]int{domain.DeliveryPending: 0, domain.DeliverySucceeded: 0, domain.DeliveryFailed: 0, domain.DeliverySkipped: 0}
	rows, err := s.db.Query(ctx, `SELECT state, COUNT(*) FROM webhook_deliveries WHERE recovery_id = ? AND webhook_id = ? GROUP BY state`, id, webhookID)
	if err != nil {
		return r, fmt.Errorf("store: recover: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			return r, fmt.Errorf("store: recover: %w", err)
		}
		r.Deliveries[state] = n
	}
	return r, rows.Err()
}

// RecoverBatch does the next batch of recover job id, leased to owner, in
// one transaction: it looks at the next batch deliveries of the
// job's subscription and, for each event of the window among them,
//
//   - that has a failed or skipped delivery and none that succeeded or is
//     pending, queues a new delivery due now (the event's webhook-id, so a
//     receiver drops it if it has it after all);
//   - that has a delivery pending for a later retry, makes it due now
//     instead of queuing another (unless an attempt of it is under way).
//
// Then it moves the job's cursor on and releases it, due again at once, or
// done once its last delivery is looked at. A lost lease changes nothing
// (ErrLeaseLost). It reports whether the job is done.
func (s *Store) RecoverBatch(ctx context.Context, owner string, id int64, batch int) (done bool, err error) {
	err = s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		done = false
		var webhookID, since, until, last, cursor int64
		err := tx.QueryRow(ctx, `SELECT webhook_id, since_at, until_at, last_delivery, cursor_id FROM webhook_recoveries WHERE id = ? AND lease_owner = ?`, id, owner).
			Scan(&webhookID, &since, &until, &last, &cursor)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrLeaseLost // or deleted with its subscription
		}
		if err != nil {
			return fmt.Errorf("store: recover batch: %w", err)
		}
		var hi sql.NullInt64
		var n int
		if err := tx.QueryRow(ctx, `SELECT MAX(id), COUNT(*) FROM (SELECT id FROM webhook_deliveries WHERE webhook_id = ? AND id > ? AND id <= ? ORDER BY id LIMIT ?) b`,
			webhookID, cursor, last, batch).Scan(&hi, &n); err != nil {
			return fmt.Errorf("store: recover batch: %w", err)
		}
		queued := int64(0)
		if hi.Valid {
			// One new delivery per event of the window whose deliveries
			// here failed or were skipped, unless one of its deliveries
			// succeeded or is pending (this job's own included: they are
			// pending, so an event is queued once).
			res, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (account_id, webhook_id, event_id, state, created_at, updated_at, due_at, recovery_id)
				SELECT c.account_id, ?, c.event_id, 'pending', ?, ?, ?, ? FROM (
					SELECT DISTINCT d.account_id, d.event_id
					FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
					WHERE d.webhook_id = ? AND d.id > ? AND d.id <= ? AND d.state IN ('failed', 'skipped')
					AND e.created_at >= ? AND e.created_at < ?
					AND NOT EXISTS (SELECT 1 FROM webhook_deliveries x WHERE x.event_id = d.event_id AND x.webhook_id = d.webhook_id
						AND (x.state = 'succeeded' OR x.due_at IS NOT NULL))) c
				ORDER BY c.event_id`,
				webhookID, tx.Now(), tx.Now(), tx.Now(), id, webhookID, cursor, hi.Int64, since, until)
			if err != nil {
				return fmt.Errorf("store: recover batch: %w", err)
			}
			q, _ := res.RowsAffected()
			// Pending deliveries waiting for a later retry go now.
			res, err = tx.Exec(ctx, `UPDATE webhook_deliveries SET due_at = ?, recovery_id = ?
				WHERE webhook_id = ? AND id > ? AND id <= ? AND due_at > ? AND (lease_until IS NULL OR lease_until <= ?)
				AND event_id IN (SELECT id FROM events WHERE created_at >= ? AND created_at < ?)`,
				tx.Now(), id, webhookID, cursor, hi.Int64, tx.Now(), tx.Now(), since, until)
			if err != nil {
				return fmt.Errorf("store: recover batch: %w", err)
			}
			b, _ := res.RowsAffected()
			queued, cursor = q+b, hi.Int64
			if queued > 0 {
				tx.Wake() // due now: wake the dispatcher
			}
		}
		done = n < batch
		var next *int64
		status, finished := domain.RecoveryRunning, sql.NullInt64{}
		if done {
			status, finished = domain.RecoveryDone, sql.NullInt64{Int64: tx.Now(), Valid: true}
		} else {
			now := tx.Now()
			next = &now
		}
		if err := releaseClaim(ctx, tx, ClaimWebhookRecoveries, owner, id, next); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE webhook_recoveries SET cursor_id = ?, queued = queued + ?, status = ?, finished_at = ?, updated_at = ? WHERE id = ?`,
			cursor, queued, status, finished, tx.Now(), id); err != nil {
			return fmt.Errorf("store: recover batch: %w", err)
		}
		return nil
	})
	return done, err
}
