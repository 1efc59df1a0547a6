package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// ClaimWebhookDeliveries is the claimable table of webhook deliveries.
const ClaimWebhookDeliveries ClaimTable = "webhook_deliveries"

func init() { registerClaimTable(ClaimWebhookDeliveries) }

// ClaimDeliveries is Claim of ClaimWebhookDeliveries, leaving out the
// deliveries of the subscriptions in skip: those the dispatcher could not
// start now (it has as many of theirs in hand as it may), and would only
// hand back.
func (s *Store) ClaimDeliveries(ctx context.Context, owner string, limit int, lease time.Duration, skip []int64) ([]int64, error) {
	if len(skip) == 0 {
		return s.Claim(ctx, ClaimWebhookDeliveries, owner, limit, lease)
	}
	args := make([]any, len(skip))
	for i, id := range skip {
		args[i] = id
	}
	c := claimStatementsFor(ClaimWebhookDeliveries, `webhook_id NOT IN (?`+strings.Repeat(", ?", len(skip)-1)+`)`)
	return s.claim(ctx, ClaimWebhookDeliveries, c, args, owner, limit, lease)
}

// FanOutEvents turns up to limit outbox events not yet fanned out into one
// delivery per subscription of the event's account and type: pending for a
// subscription enabled now, skipped (never due) for one disabled, so that
// the history shows what a disabled subscription missed and
// POST /webhooks/{id}/recover can send it later. It returns how many events
// it took (fewer than limit means none are left) and how many deliveries it
// wrote, skipped ones included. A subscription backing off after failures
// gets its new deliveries due when its backoff ends. A personal event
// (audience_user_id set, migration 0029: one user's read state) gets no
// delivery at all, not even a skipped one, so recover never sends it either:
// a subscription is the account's, and must not learn a user's read state.
// It still counts as taken, and the cursor passes it.
func (s *Store) FanOutEvents(ctx context.Context, limit int) (events, deliveries int, err error) {
	err = s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.TouchesNone() // events and deliveries: no page shows them
		events, deliveries = 0, 0
		if s.db.Engine() == Postgres {
			return fanOutPG(ctx, tx, limit, &events, &deliveries)
		}
		// SQLite: the single writer sees every committed event in id order.
		var hi sql.NullInt64
		var n int
		if err := tx.QueryRow(ctx, `SELECT MAX(id), COUNT(*) FROM (SELECT id FROM events WHERE fanned_out = FALSE ORDER BY id LIMIT ?)`, limit).Scan(&hi, &n); err != nil {
			return fmt.Errorf("store: fan out: %w", err)
		}
		if !hi.Valid {
			return nil
		}
		res, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (account_id, webhook_id, event_id, state, created_at, updated_at, due_at)
			SELECT e.account_id, w.id, e.id, `+fanOutState+`, ?, ?, `+fanOutDue+`
			FROM events e JOIN webhooks w ON w.account_id = e.account_id AND w.type = e.type
			WHERE e.fanned_out = FALSE AND e.id <= ? AND e.audience_user_id IS NULL`, tx.Now(), tx.Now(), tx.Now(), tx.Now(), hi.Int64)
		if err != nil {
			return fmt.Errorf("store: fan out: %w", err)
		}
		d, _ := res.RowsAffected()
		if _, err := tx.Exec(ctx, `UPDATE events SET fanned_out = TRUE WHERE fanned_out = FALSE AND id <= ?`, hi.Int64); err != nil {
			return fmt.Errorf("store: fan out: %w", err)
		}
		events, deliveries = n, int(d)
		return nil
	})
	return events, deliveries, err
}

// fanOutState and fanOutDue are a fanned-out delivery's state and due_at
// for subscription w (two parameters: now, now): a disabled subscription's
// is skipped and never due; an enabled one's pending, due now or when its
// backoff ends.
const (
	fanOutState = `CASE WHEN w.enabled THEN 'pending' ELSE 'skipped' END`
	fanOutDue   = `CASE WHEN NOT w.enabled THEN NULL WHEN w.backoff_until > ? THEN w.backoff_until ELSE ? END`
)

// fanOutHorizon (PostgreSQL) is the id of the oldest transaction still
// running, in the statement's snapshot: every transaction with a lower id has
// ended, so its events are all visible or gone for good, and no event can
// later appear with a lower xid (migration 0022).
const fanOutHorizon = `pg_snapshot_xmin(pg_current_snapshot())::text::bigint`

// fanOutPG is FanOutEvents on PostgreSQL: the events past the cursor whose
// transactions have ended, in (xid, id) order, and the cursor moved past
// them, in the group's transaction. Several nodes take turns: a fan-out that
// finds the cursor locked by another takes nothing (the other is at work, and
// the dispatcher polls again).
func fanOutPG(ctx context.Context, tx *Tx, limit int, events, deliveries *int) error {
	var curXid, curID int64
	err := tx.QueryRow(ctx, `SELECT xid, event_id FROM event_fanout WHERE id = 1 FOR UPDATE SKIP LOCKED`).Scan(&curXid, &curID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: fan out: %w", err)
	}
	// One statement, one snapshot: the events it takes are the ones it saw
	// below the horizon, and the cursor moves to the last of them.
	err = tx.QueryRow(ctx, `WITH batch AS (
			SELECT id, account_id, type, xid, audience_user_id FROM events
			WHERE xid IS NOT NULL AND (xid, id) > (?, ?) AND xid < `+fanOutHorizon+`
			ORDER BY xid, id LIMIT ?),
		ins AS (
			INSERT INTO webhook_deliveries (account_id, webhook_id, event_id, state, created_at, updated_at, due_at)
			SELECT b.account_id, w.id, b.id, `+fanOutState+`, ?, ?, `+fanOutDue+`
			FROM batch b JOIN webhooks w ON w.account_id = b.account_id AND w.type = b.type
			WHERE b.audience_user_id IS NULL
			RETURNING 1),
		last AS (SELECT xid, id FROM batch ORDER BY xid DESC, id DESC LIMIT 1),
		moved AS (UPDATE event_fanout f SET xid = last.xid, event_id = last.id FROM last WHERE f.id = 1 RETURNING 1)
		SELECT (SELECT COUNT(*) FROM batch), (SELECT COUNT(*) FROM ins), (SELECT COUNT(*) FROM moved)`,
		curXid, curID, limit, tx.Now(), tx.Now(), tx.Now(), tx.Now()).Scan(events, deliveries, new(int))
	if err != nil {
		return fmt.Errorf("store: fan out: %w", err)
	}
	return nil
}

// HasUnfannedEvents reports whether an event waits to be fanned out: a cheap
// read, so an idle dispatcher polls without writing. On PostgreSQL that
// includes an event that a transaction still running holds back (see
// fanOutPG): a fan-out takes it once that transaction ends.
func (s *Store) HasUnfannedEvents(ctx context.Context) (bool, error) {
	var id int64
	query := `SELECT id FROM events WHERE fanned_out = FALSE LIMIT 1`
	if s.db.Engine() == Postgres {
		// Ordered, so that the plan walks events_fanout from the cursor: a
		// bare LIMIT 1 gets a sequential scan over the fanned-out events.
		query = `SELECT id FROM events WHERE xid IS NOT NULL
			AND (xid, id) > ((SELECT xid FROM event_fanout WHERE id = 1), (SELECT event_id FROM event_fanout WHERE id = 1))
			ORDER BY xid, id LIMIT 1`
	}
	err := s.db.QueryRow(ctx, query).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// DueWebhookWork reports whether a delivery, and whether a recover job, is
// due and free to claim: one cheap read, so an idle dispatcher polls
// without writing, and a busy one asks once per pass.
func (s *Store) DueWebhookWork(ctx context.Context, now time.Time) (deliveries, recoveries bool, err error) {
	us := micros(now)
	err = s.db.QueryRow(ctx, `SELECT
		EXISTS (SELECT 1 FROM webhook_deliveries WHERE due_at <= ? AND (lease_until IS NULL OR lease_until <= ?)),
		EXISTS (SELECT 1 FROM webhook_recoveries WHERE due_at <= ? AND (lease_until IS NULL OR lease_until <= ?))`,
		us, us, us, us).Scan(&deliveries, &recoveries)
	return deliveries, recoveries, err
}

// DeliveryBacklog counts pending deliveries (due or waiting for a retry).
func (s *Store) DeliveryBacklog(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, `SELECT COUNT(*) FROM webhook_deliveries WHERE due_at IS NOT NULL`).Scan(&n)
	return n, err
}

// DeliveryJob is a claimed delivery with what an attempt needs.
type DeliveryJob struct {
	domain.WebhookDelivery
	Webhook domain.Webhook // URL, Enabled and the secrets
	// Payload is the event's data; EventAt when it happened.
	Payload json.RawMessage
	EventAt time.Time
}

// DeliveryJobs loads claimed deliveries ids. A delivery deleted meanwhile
// (its subscription was) is left out.
func (s *Store) DeliveryJobs(ctx context.Context, ids []int64) ([]DeliveryJob, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := s.db.Readers().QueryContext(ctx, s.db.Rebind(`SELECT d.id, d.account_id, d.webhook_id, d.event_id, d.attempts, d.created_at,
		w.url, w.enabled, w.secret, w.previous_until, e.type, e.payload, e.created_at
		FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id JOIN events e ON e.id = d.event_id
		WHERE d.id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`), args...)
	if err != nil {
		return nil, fmt.Errorf("store: delivery jobs: %w", err)
	}
	defer rows.Close()
	var out []DeliveryJob
	var prevUntils []int64
	for rows.Next() {
		var j DeliveryJob
		var created, prevUntil, eventAt int64
		var payload string
		if err := rows.Scan(&j.ID, &j.AccountID, &j.WebhookID, &j.EventID, &j.Attempts, &created,
			&j.Webhook.URL, &j.Webhook.Enabled, &j.Webhook.Secret, &prevUntil, &j.EventType, &payload, &eventAt); err != nil {
			return nil, fmt.Errorf("store: delivery jobs: %w", err)
		}
		j.Webhook.ID, j.Webhook.AccountID, j.Webhook.Type = j.WebhookID, j.AccountID, j.EventType
		j.CreatedAt, j.EventAt, j.Payload = fromMicros(created), fromMicros(eventAt), json.RawMessage(payload)
		j.State = domain.DeliveryPending
		out, prevUntils = append(out, j), append(prevUntils, prevUntil)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: delivery jobs: %w", err)
	}
	rows.Close() // before the next query: the reader pool may be one connection
	return out, s.withPreviousSecrets(ctx, out, prevUntils)
}

// DeliveryOutcome is what became of one claimed delivery.
type DeliveryOutcome struct {
	DeliveryID, WebhookID int64
	// Attempt is the attempt made; nil when none was (the subscription was
	// busy, disabled, or the dispatcher stopped first).
	Attempt *domain.WebhookAttempt
	// Response is the start of the endpoint's answer, kept for debugging.
	Response string
	// State is the delivery's state afterwards; NextAt when a pending one is
	// next due.
	State  string
	NextAt time.Time
	// Backoff holds the subscription's other deliveries until NextAt (the
	// endpoint failed); ClearBackoff ends such a hold (it answered 2xx).
	Backoff, ClearBackoff bool
	// Disable turns the subscription off (it answered 410 Gone).
	Disable bool
}

// FinishDeliveries records outcomes of deliveries leased to owner, each with
// the end of its lease, in one transaction. An outcome whose lease was lost
// (it ran out and another process claimed the delivery) is dropped: that
// process records its own. It returns how many were recorded.
func (s *Store) FinishDeliveries(ctx context.Context, owner string, outs []DeliveryOutcome) (int, error) {
	var n int
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.TouchesNone() // deliveries, attempts, subscriptions: no page shows them
		n = 0
		if tx.Engine() == Postgres && distinctDeliveries(outs) {
			return finishDeliveriesPG(ctx, tx, owner, outs, &n)
		}
		for _, o := range outs {
			var next *int64
			if o.State == domain.DeliveryPending {
				us := micros(o.NextAt)
				next = &us
			}
			if err := releaseClaim(ctx, tx, ClaimWebhookDeliveries, owner, o.DeliveryID, next); errors.Is(err, ErrLeaseLost) {
				continue
			} else if err != nil {
				return err
			}
			attempts := 0
			if o.Attempt != nil {
				attempts = 1
				if _, err := tx.Exec(ctx, `INSERT INTO webhook_attempts (delivery_id, webhook_id, attempted_at, status_code, latency_us, error, response) VALUES (?, ?, ?, ?, ?, ?, ?)`,
					o.DeliveryID, o.WebhookID, micros(o.Attempt.At), o.Attempt.StatusCode, o.Attempt.Latency.Microseconds(), o.Attempt.Error, attemptResponse(o.Response)); err != nil {
					return fmt.Errorf("store: record attempt: %w", err)
				}
			}
			if _, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET state = ?, attempts = attempts + ?, updated_at = ? WHERE id = ?`, o.State, attempts, tx.Now(), o.DeliveryID); err != nil {
				return fmt.Errorf("store: finish delivery: %w", err)
			}
			if err := finishSubscription(ctx, tx, o, nil, nil); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// finishSubscription makes what outcome o changes on its subscription:
// disabled, held back, or its hold ended. cleared, when not nil, is the
// subscriptions whose hold the batch's last change already ended (on
// PostgreSQL, where the changes are queued): a second end changes nothing,
// so it is left out. later (PostgreSQL) is the deliveries whose outcomes
// follow o's in the batch: already released there, they are left as a
// hold would have found them, still leased.
func finishSubscription(ctx context.Context, tx *Tx, o DeliveryOutcome, cleared map[int64]bool, later []int64) error {
	switch {
	case o.Disable:
		delete(cleared, o.WebhookID)
		if err := tx.ExecLater(ctx, `UPDATE webhooks SET enabled = FALSE, backoff_until = 0, updated_at = ? WHERE id = ?`, tx.Now(), o.WebhookID); err != nil {
			return fmt.Errorf("store: disable webhook: %w", err)
		}
	case o.Backoff:
		delete(cleared, o.WebhookID)
		until := micros(o.NextAt)
		if err := tx.ExecLater(ctx, `UPDATE webhooks SET backoff_until = ? WHERE id = ? AND backoff_until < ?`, until, o.WebhookID, until); err != nil {
			return fmt.Errorf("store: webhook backoff: %w", err)
		}
		// Deliveries already due wait too, instead of each finding
		// the endpoint down in turn.
		q, args := `UPDATE webhook_deliveries SET due_at = ? WHERE webhook_id = ? AND due_at IS NOT NULL AND due_at < ? AND (lease_until IS NULL OR lease_until <= ?)`,
			[]any{until, o.WebhookID, until, tx.Now()}
		if len(later) > 0 {
			q, args = q+` AND id <> ALL(?)`, append(args, later)
		}
		if err := tx.ExecLater(ctx, q, args...); err != nil {
			return fmt.Errorf("store: webhook backoff: %w", err)
		}
	case o.ClearBackoff:
		if cleared[o.WebhookID] {
			return nil
		}
		if cleared != nil {
			cleared[o.WebhookID] = true
		}
		if err := tx.ExecLater(ctx, `UPDATE webhooks SET backoff_until = 0 WHERE id = ? AND backoff_until <> 0`, o.WebhookID); err != nil {
			return fmt.Errorf("store: webhook backoff: %w", err)
		}
	}
	return nil
}

// distinctDeliveries reports whether no delivery has two outcomes in outs
// (finishDeliveriesPG's statements all read the rows as they were before).
func distinctDeliveries(outs []DeliveryOutcome) bool {
	seen := make(map[int64]bool, len(outs))
	for _, o := range outs {
		if seen[o.DeliveryID] {
			return false
		}
		seen[o.DeliveryID] = true
	}
	return true
}

// finishDeliveriesPG is FinishDeliveries on PostgreSQL: one statement per
// outcome, the lease's end, the delivery's state and its attempt together,
// all sent in one pipeline (a round trip for the batch instead of three per
// outcome); then what the recorded ones change on their subscriptions, in
// order, queued.
func finishDeliveriesPG(ctx context.Context, tx *Tx, owner string, outs []DeliveryOutcome, n *int) error {
	stmts := make([]sqldb.Stmt, len(outs))
	for i, o := range outs {
		var next any
		if o.State == domain.DeliveryPending {
			next = micros(o.NextAt)
		}
		if o.Attempt == nil {
			stmts[i] = sqldb.Stmt{Query: finishNoAttemptPG, Args: []any{next, o.DeliveryID, owner, o.State, tx.Now()}}
			continue
		}
		stmts[i] = sqldb.Stmt{Query: finishAttemptPG, Args: []any{next, o.DeliveryID, owner, o.State, tx.Now(),
			o.WebhookID, micros(o.Attempt.At), o.Attempt.StatusCode, o.Attempt.Latency.Microseconds(), o.Attempt.Error, attemptResponse(o.Response)}}
	}
	recorded := make([]bool, len(outs))
	err := tx.QueryEach(ctx, stmts, func(i int, r sqldb.Row) error {
		var id int64
		switch err := r.Scan(&id); {
		case errors.Is(err, sql.ErrNoRows): // the lease was lost
		case err != nil:
			return fmt.Errorf("store: finish delivery: %w", err)
		default:
			recorded[i] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	cleared := map[int64]bool{}
	for i, o := range outs {
		if !recorded[i] {
			continue
		}
		var later []int64
		if o.Backoff {
			for j := i + 1; j < len(outs); j++ {
				if recorded[j] {
					later = append(later, outs[j].DeliveryID)
				}
			}
		}
		if err := finishSubscription(ctx, tx, o, cleared, later); err != nil {
			return err
		}
		*n++
	}
	return nil
}

// finishNoAttemptPG ends owner $3's lease of delivery $2 (due next at $1,
// NULL for never) and sets its state $4 at $5; no row when the lease was
// lost. finishAttemptPG also records its attempt ($6 the subscription, $7
// when, $8 status code, $9 latency, $10 error, $11 response) and counts it.
const (
	finishNoAttemptPG = `UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL, due_at = $1, state = $4, updated_at = $5
		WHERE id = $2 AND lease_owner = $3 RETURNING id`
	finishAttemptPG = `WITH r AS (
		UPDATE webhook_deliveries SET lease_owner = NULL, lease_until = NULL, due_at = $1, state = $4, attempts = attempts + 1, updated_at = $5
		WHERE id = $2 AND lease_owner = $3 RETURNING id),
		a AS (INSERT INTO webhook_attempts (delivery_id, webhook_id, attempted_at, status_code, latency_us, error, response)
			SELECT id, $6, $7, $8, $9, $10, $11 FROM r)
		SELECT id FROM r`
)

// WebhookDeliveries lists the subscription's deliveries, newest first, at
// most limit with ids below before (0: from the newest), each with its last
// attempt and its attempt log (the newest DeliveryLogAttempts attempts).
func (s *Store) WebhookDeliveries(ctx context.Context, accountID, webhookID, before int64, limit int) ([]domain.WebhookDelivery, error) {
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := s.db.Query(ctx, `SELECT d.id, d.event_id, e.type, d.state, d.attempts, d.due_at, d.created_at, d.updated_at, d.recovery_id,
		a.attempted_at, a.status_code, a.latency_us, a.error
		FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
		LEFT JOIN webhook_attempts a ON a.id = (SELECT MAX(id) FROM webhook_attempts WHERE delivery_id = d.id)
		WHERE d.webhook_id = ? AND d.account_id = ? AND d.id < ? ORDER BY d.id DESC LIMIT ?`, webhookID, accountID, before, limit)
	if err != nil {
		return nil, fmt.Errorf("store: webhook deliveries: %w", err)
	}
	defer rows.Close()
	out := []domain.WebhookDelivery{}
	for rows.Next() {
		d := domain.WebhookDelivery{AccountID: accountID, WebhookID: webhookID}
		var due, recovery, at, status, latency sql.NullInt64
		var created, updated int64
		var errText sql.NullString
		if err := rows.Scan(&d.ID, &d.EventID, &d.EventType, &d.State, &d.Attempts, &due, &created, &updated, &recovery, &at, &status, &latency, &errText); err != nil {
			return nil, fmt.Errorf("store: webhook deliveries: %w", err)
		}
		d.CreatedAt, d.UpdatedAt, d.RecoveryID = fromMicros(created), fromMicros(updated), recovery.Int64
		if due.Valid {
			t := fromMicros(due.Int64)
			d.NextAttemptAt = &t
		}
		if at.Valid {
			d.Last = &domain.WebhookAttempt{At: fromMicros(at.Int64), StatusCode: int(status.Int64), Latency: time.Duration(latency.Int64) * time.Microsecond, Error: errText.String}
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: webhook deliveries: %w", err)
	}
	rows.Close() // before the next query: the reader pool may be one connection
	return out, s.withAttemptLogs(ctx, accountID, webhookID, out)
}

// Redeliver queues the event of the account's delivery id to its subscription
// again, as a new delivery due now with the same webhook-id.
func (s *Store) Redeliver(ctx context.Context, accountID, webhookID, deliveryID int64) (int64, error) {
	var id int64
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		var eventID int64
		err := tx.QueryRow(ctx, `SELECT event_id FROM webhook_deliveries WHERE id = ? AND webhook_id = ? AND account_id = ?`, deliveryID, webhookID, accountID).Scan(&eventID)
		if err != nil {
			return notFound(err, "delivery")
		}
		id, err = tx.Insert(ctx, `INSERT INTO webhook_deliveries (account_id, webhook_id, event_id, state, created_at, updated_at, due_at) VALUES (?, ?, ?, 'pending', ?, ?, ?)`,
			accountID, webhookID, eventID, tx.Now(), tx.Now(), tx.Now())
		if err != nil {
			return fmt.Errorf("store: redeliver: %w", err)
		}
		tx.Wake() // due now: wake the dispatcher
		return nil
	})
	return id, err
}

// AddTestDelivery writes a test event for the account's subscription and a
// delivery of it to that subscription alone, already leased to owner for
// lease (the caller attempts it at once; a dispatcher would otherwise race it),
// and returns the delivery's id. The event is never fanned out to other
// subscriptions. If the caller dies before releasing it, the lease ends and
// a dispatcher delivers it like any other.
func (s *Store) AddTestDelivery(ctx context.Context, accountID, webhookID int64, payload []byte, owner string, lease time.Duration) (int64, error) {
	var id int64
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		var typ string
		if err := tx.QueryRow(ctx, `SELECT type FROM webhooks WHERE id = ? AND account_id = ?`, webhookID, accountID).Scan(&typ); err != nil {
			return notFound(err, "webhook")
		}
		// Never fanned out: marked so on SQLite, without an xid on PostgreSQL.
		insert := `INSERT INTO events (account_id, type, payload, created_at, fanned_out) VALUES (?, ?, ?, ?, TRUE)`
		if tx.Engine() == Postgres {
			insert = `INSERT INTO events (account_id, type, payload, created_at, xid) VALUES (?, ?, ?, ?, NULL)`
		}
		eventID, err := tx.Insert(ctx, insert, accountID, typ, string(payload), tx.Now())
		if err != nil {
			return fmt.Errorf("store: test event: %w", err)
		}
		id, err = tx.Insert(ctx, `INSERT INTO webhook_deliveries (account_id, webhook_id, event_id, state, created_at, updated_at, due_at, lease_owner, lease_until) VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?)`,
			accountID, webhookID, eventID, tx.Now(), tx.Now(), tx.Now(), owner, tx.Now()+lease.Microseconds())
		if err != nil {
			return fmt.Errorf("store: test delivery: %w", err)
		}
		return nil
	})
	return id, err
}

// WebhookDelivery returns one delivery of the account's subscription with its last attempt.
func (s *Store) WebhookDelivery(ctx context.Context, accountID, webhookID, deliveryID int64) (domain.WebhookDelivery, error) {
	list, err := s.WebhookDeliveries(ctx, accountID, webhookID, deliveryID+1, 1)
	if err != nil {
		return domain.WebhookDelivery{}, err
	}
	if len(list) == 0 || list[0].ID != deliveryID {
		return domain.WebhookDelivery{}, domain.Errorf(domain.NotFound, "delivery not found")
	}
	return list[0], nil
}

// PruneWebhookHistory deletes, in one transaction, up to batch deliveries
// that finished (succeeded, failed or skipped) more than retention ago, with
// their attempts, and up to batch outbox events older than retention that
// are fanned out and have no delivery left, and up to batch recover jobs
// done more than retention ago. Pending deliveries, and the events they
// deliver, are never deleted. It returns how many deliveries and
// events went; fewer than batch of both means nothing more is due.
func (s *Store) PruneWebhookHistory(ctx context.Context, retention time.Duration, batch int) (deliveries, events int, err error) {
	err = s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		cutoff := tx.Now() - retention.Microseconds()
		// Attempts go with their delivery (ON DELETE CASCADE, both engines).
		res, err := tx.Exec(ctx, `DELETE FROM webhook_deliveries WHERE id IN (
			SELECT id FROM webhook_deliveries WHERE due_at IS NULL AND updated_at < ? ORDER BY updated_at LIMIT ?)`, cutoff, batch)
		if err != nil {
			return fmt.Errorf("store: prune deliveries: %w", err)
		}
		d, _ := res.RowsAffected()
		fannedOut := `e.fanned_out = TRUE`
		if tx.Engine() == Postgres {
			fannedOut = `(e.xid IS NULL OR (e.xid, e.id) <= (SELECT xid, event_id FROM event_fanout WHERE id = 1))`
		}
		res, err = tx.Exec(ctx, `DELETE FROM events WHERE id IN (
			SELECT e.id FROM events e WHERE e.created_at < ? AND `+fannedOut+`
			AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)
			ORDER BY e.created_at LIMIT ?)`, cutoff, batch)
		if err != nil {
			return fmt.Errorf("store: prune events: %w", err)
		}
		e, _ := res.RowsAffected()
		// Recover jobs done before the retention; few, so not counted.
		if _, err := tx.Exec(ctx, `DELETE FROM webhook_recoveries WHERE id IN (
			SELECT id FROM webhook_recoveries WHERE due_at IS NULL AND updated_at < ? ORDER BY updated_at LIMIT ?)`, cutoff, batch); err != nil {
			return fmt.Errorf("store: prune recover jobs: %w", err)
		}
		deliveries, events = int(d), int(e)
		return nil
	})
	return deliveries, events, err
}
