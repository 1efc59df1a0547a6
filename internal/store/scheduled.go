package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/money"
	"switchboard/internal/store/sqldb"
)

// ClaimScheduledMessages is the claimable table of scheduled messages: a
// queued one is due at its send time (or at its next retry).
const ClaimScheduledMessages ClaimTable = "scheduled_messages"

func init() { registerClaimTable(ClaimScheduledMessages) }

// CreateScheduled writes a scheduled message, its placeholder in the thread
// of its recipients (a messages row in status scheduled) and its job (due at
// m.SendAt), in one transaction, and with answer (when set) the
// Idempotency-Key's answer. It sets m.ID, m.MessageID, m.State and
// m.CreatedAt.
func (s *Store) CreateScheduled(ctx context.Context, m *domain.ScheduledMessage, answer *IdempotencyAnswer) error {
	to, err := json.Marshal(m.Recipients)
	if err != nil {
		return err
	}
	prices, err := json.Marshal(m.UnitPrices)
	if err != nil {
		return err
	}
	media, err := json.Marshal(nonNilStrings(m.Media))
	if err != nil {
		return err
	}
	var by any
	if m.CreatedBy != 0 {
		by = m.CreatedBy
	}
	sendAt := micros(m.SendAt)
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.Touches(m.AccountID)
		convID, err := upsertConversation(ctx, tx, m.AccountID, m.LineID, participantsOf(m.Recipients))
		if err != nil {
			return err
		}
		msgID, err := tx.Insert(ctx, `INSERT INTO messages (account_id, conversation_id, line_id, direction, from_number, to_numbers, body, media, type, status, units, unit_price, price, sent_by, scheduled, scheduled_at, created_at)
			VALUES (?, ?, ?, 'out', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, TRUE, ?, ?)`,
			m.AccountID, convID, m.LineID, m.Line, string(to), m.Text, string(media), m.Type, domain.StatusScheduled, m.Units, int64(maxPrice(m.UnitPrices)), int64(m.Price), by, sendAt, tx.Now())
		if err != nil {
			return fmt.Errorf("store: scheduled placeholder: %w", err)
		}
		// The placeholder uses the files from now on, so the cleanup leaves
		// them; one the cleanup removed since the caller checked it is gone.
		if len(m.Media) > 0 {
			missing, err := useMedia(ctx, tx, m.AccountID, m.Media)
			if err != nil {
				return err
			}
			if missing >= 0 {
				return &NotHostedError{Index: missing}
			}
		}
		id, err := tx.Insert(ctx, `INSERT INTO scheduled_messages (account_id, line_id, message_id, recipients, unit_prices, subject, body, media, type, units, price, send_at, state, created_by, created_at, due_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			m.AccountID, m.LineID, msgID, string(to), string(prices), m.Subject, m.Text, string(media), m.Type, m.Units, int64(m.Price), sendAt, domain.ScheduleQueued, by, tx.Now(), sendAt)
		if err != nil {
			return fmt.Errorf("store: schedule: %w", err)
		}
		if answer != nil {
			if err := answer.finish(ctx, tx, id); err != nil {
				return err
			}
		}
		m.ID, m.MessageID, m.State, m.CreatedAt = id, msgID, domain.ScheduleQueued, fromMicros(tx.Now())
		return nil
	})
}

// participantsOf is the conversation key of a message to recipients.
func participantsOf(to []string) string { return strings.Join(slices.Sorted(slices.Values(to)), ",") }

func maxPrice(p []money.Micros) money.Micros {
	var m money.Micros
	for _, v := range p {
		m = max(m, v)
	}
	return m
}

const scheduledColumns = `s.id, s.account_id, s.line_id, l.number, s.message_id, s.recipients, s.unit_prices, s.subject, s.body, s.media, s.type, s.units, s.price, s.send_at, s.state, s.attempts, s.created_by, s.created_at`

func scanScheduled(r row) (domain.ScheduledMessage, error) {
	var m domain.ScheduledMessage
	var to, prices, media string
	var price, sendAt, created int64
	var by sql.NullInt64
	if err := r.Scan(&m.ID, &m.AccountID, &m.LineID, &m.Line, &m.MessageID, &to, &prices, &m.Subject, &m.Text, &media, &m.Type, &m.Units, &price, &sendAt,
		&m.State, &m.Attempts, &by, &created); err != nil {
		return m, err
	}
	if err := errors.Join(json.Unmarshal([]byte(to), &m.Recipients), json.Unmarshal([]byte(prices), &m.UnitPrices), json.Unmarshal([]byte(media), &m.Media)); err != nil {
		return m, fmt.Errorf("store: scheduled message %d: %w", m.ID, err)
	}
	m.Price, m.SendAt, m.CreatedBy, m.CreatedAt = money.Micros(price), fromMicros(sendAt), by.Int64, fromMicros(created)
	return m, nil
}

// ScheduledMessages lists the line's queued messages, soonest first (the id
// breaks ties).
func (s *Store) ScheduledMessages(ctx context.Context, line domain.Line) ([]domain.ScheduledMessage, error) {
	rows, err := s.db.Query(ctx, `SELECT `+scheduledColumns+` FROM scheduled_messages s JOIN lines l ON l.id = s.line_id
		WHERE s.line_id = ? AND s.account_id = ? AND s.state = 'queued' ORDER BY s.send_at, s.id`, line.ID, line.AccountID)
	if err != nil {
		return nil, fmt.Errorf("store: scheduled messages: %w", err)
	}
	defer rows.Close()
	out := []domain.ScheduledMessage{}
	for rows.Next() {
		m, err := scanScheduled(rows)
		if err != nil {
			return nil, fmt.Errorf("store: scheduled messages: %w", err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// ScheduledMessage returns scheduled message id whatever its state, for the
// dispatcher (no account: the caller holds the row's lease).
func (s *Store) ScheduledMessage(ctx context.Context, id int64) (domain.ScheduledMessage, error) {
	m, err := scanScheduled(s.db.QueryRow(ctx, `SELECT `+scheduledColumns+` FROM scheduled_messages s JOIN lines l ON l.id = s.line_id WHERE s.id = ?`, id))
	if err != nil {
		return m, fmt.Errorf("store: scheduled message: %w", notFound(err, "scheduled message"))
	}
	return m, nil
}

// CancelScheduled cancels the line's queued message id: it is never sent or
// charged, and its placeholder leaves the thread. One that is not queued
// (sent, being sent, cancelled, skipped) or not the line's is not_found.
func (s *Store) CancelScheduled(ctx context.Context, line domain.Line, id int64) error {
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.Touches(line.AccountID)
		var msgID int64
		var media string
		err := tx.QueryRow(ctx, `UPDATE scheduled_messages SET state = ?, due_at = NULL, lease_owner = NULL, lease_until = NULL
			WHERE id = ? AND line_id = ? AND account_id = ? AND state = ? RETURNING message_id, media`,
			domain.ScheduleCancelled, id, line.ID, line.AccountID, domain.ScheduleQueued).Scan(&msgID, &media)
		if errors.Is(err, sql.ErrNoRows) {
			return domain.Errorf(domain.NotFound, "scheduled message %d not found on line %s (or already sent or cancelled)", id, line.Number)
		}
		if err != nil {
			return fmt.Errorf("store: cancel scheduled: %w", err)
		}
		var names []string
		if err := json.Unmarshal([]byte(media), &names); err != nil {
			return fmt.Errorf("store: cancel scheduled %d: %w", id, err)
		}
		return deletePlaceholder(ctx, tx, msgID, names)
	})
}

// deletePlaceholder removes a scheduled message's stand-in from its thread
// (only while it is one: a sent message stays), and with it its use of
// media, the schedule's files (the placeholder lists the same). A file no
// longer used waits for the cleanup; an intent written in the same
// transaction (BeginScheduledSend) uses it again before anyone sees it
// unused.
func deletePlaceholder(ctx context.Context, tx *Tx, msgID int64, media []string) error {
	res, err := tx.Exec(ctx, `DELETE FROM messages WHERE id = ? AND status = ?`, msgID, domain.StatusScheduled)
	if err != nil {
		return fmt.Errorf("store: scheduled placeholder: %w", err)
	}
	if len(media) == 0 {
		return nil
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil
	}
	_, err = releaseMedia(ctx, tx, media, false)
	return err
}

// BeginScheduledSend moves queued message m to sending and, in the same
// transaction, replaces its placeholder by o's intent (an ordinary pending
// message, as CreateOutbound writes it) and returns the intent's message id.
// It reports false, changing nothing,
// when m is no longer queued (cancelled meanwhile) or owner no longer holds
// its lease. A message that MarkOutboundSent later records sent also ends
// the schedule (state sent).
func (s *Store) BeginScheduledSend(ctx context.Context, m domain.ScheduledMessage, owner string, o *Outbound) (int64, bool, error) {
	to, err := json.Marshal(o.To)
	if err != nil {
		return 0, false, err
	}
	media, err := json.Marshal(nonNilStrings(o.Media))
	if err != nil {
		return 0, false, err
	}
	var id int64
	err = s.db.Write(ctx, sqldb.KeepCache|sqldb.Alone, func(tx *Tx) error {
		tx.Touches(m.AccountID)
		tx.Touches(o.AccountID)
		if err := deletePlaceholder(ctx, tx, m.MessageID, m.Media); err != nil {
			return err
		}
		id, err = createOutbound(ctx, tx, o, string(to), string(media))
		if err != nil {
			return err
		}
		// The compare-and-set last, so that the hot path runs one statement
		// on the schedule; losing it rolls the intent back.
		res, err := tx.Exec(ctx, `UPDATE scheduled_messages SET state = ?, message_id = ? WHERE id = ? AND state = ? AND lease_owner = ?`,
			domain.ScheduleSending, id, m.ID, domain.ScheduleQueued, owner)
		if err != nil {
			return fmt.Errorf("store: begin scheduled send: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errNotQueued
		}
		o.scheduleID = m.ID
		return nil
	})
	if errors.Is(err, errNotQueued) {
		return 0, false, nil
	}
	return id, err == nil, err
}

// errNotQueued rolls back BeginScheduledSend's transaction: the schedule
// was cancelled or taken over meanwhile.
var errNotQueued = errors.New("store: scheduled message no longer queued")

// finishSchedule ends a schedule whose message the send path now owns.
func finishSchedule(ctx context.Context, tx *Tx, id int64, state string) error {
	if _, err := tx.Exec(ctx, `UPDATE scheduled_messages SET state = ?, due_at = NULL, lease_owner = NULL, lease_until = NULL WHERE id = ? AND state IN (?, ?)`,
		state, id, domain.ScheduleSending, domain.ScheduleQueued); err != nil {
		return fmt.Errorf("store: finish schedule: %w", err)
	}
	return nil
}

// ScheduleHandedOff ends schedule id, being sent, as sent: the dispatcher
// calls it for a schedule left sending (by a dispatcher that stopped, or a
// lost carrier answer) once its message is settled, sent by a delivery
// receipt or abandoned.
func (s *Store) ScheduleHandedOff(ctx context.Context, id int64) error {
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error { return finishSchedule(ctx, tx, id, domain.ScheduleSent) })
}

// SkipScheduled ends queued message m uncharged because every recipient
// opted out by its send time; its placeholder leaves the thread. It reports
// false when m was no longer queued or leased to owner.
func (s *Store) SkipScheduled(ctx context.Context, m domain.ScheduledMessage, owner string) (bool, error) {
	var ok bool
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.Touches(m.AccountID)
		ok = false
		res, err := tx.Exec(ctx, `UPDATE scheduled_messages SET state = ?, due_at = NULL, lease_owner = NULL, lease_until = NULL WHERE id = ? AND state = ? AND lease_owner = ?`,
			domain.ScheduleSkipped, m.ID, domain.ScheduleQueued, owner)
		if err != nil {
			return fmt.Errorf("store: skip scheduled: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		ok = true
		return deletePlaceholder(ctx, tx, m.MessageID, m.Media)
	})
	return ok, err
}

// RequeueScheduled puts schedule id, whose carrier refused the message (it
// was down), back in the queue, due at next: its pending message becomes its
// placeholder again (status scheduled, uncharged) and the attempt is
// counted. If a delivery receipt already proved the carrier took the message
// (status sent), the schedule ends as sent instead. It reports whether it
// was requeued.
func (s *Store) RequeueScheduled(ctx context.Context, id, msgID int64, sendAt, next time.Time) (bool, error) {
	var requeued bool
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		requeued = false
		res, err := tx.Exec(ctx, `UPDATE messages SET status = ?, scheduled = TRUE, scheduled_at = ? WHERE id = ? AND status = ?`,
			domain.StatusScheduled, micros(sendAt), msgID, domain.StatusPending)
		if err != nil {
			return fmt.Errorf("store: requeue scheduled: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return finishSchedule(ctx, tx, id, domain.ScheduleSent)
		}
		if _, err := tx.Exec(ctx, `UPDATE scheduled_messages SET state = ?, attempts = attempts + 1, due_at = ?, lease_owner = NULL, lease_until = NULL WHERE id = ? AND state = ?`,
			domain.ScheduleQueued, micros(next), id, domain.ScheduleSending); err != nil {
			return fmt.Errorf("store: requeue scheduled: %w", err)
		}
		requeued = true
		return nil
	})
	return requeued, err
}

// ResendScheduled puts schedule m, left sending by an interrupted send whose
// message was then abandoned (no evidence the carrier took it; uncharged),
// back in the queue, due at due, with a new placeholder in its thread. The
// abandoned message stays as it is, so that a delivery receipt that still
// comes for it marks it sent and charges it. It reports false, changing
// nothing, when m is no longer sending that message or the message is no
// longer abandoned.
func (s *Store) ResendScheduled(ctx context.Context, m domain.ScheduledMessage, due time.Time) (bool, error) {
	to, err := json.Marshal(m.Recipients)
	if err != nil {
		return false, err
	}
	media, err := json.Marshal(nonNilStrings(m.Media))
	if err != nil {
		return false, err
	}
	var by any
	if m.CreatedBy != 0 {
		by = m.CreatedBy
	}
	err = s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.Touches(m.AccountID)
		convID, err := upsertConversation(ctx, tx, m.AccountID, m.LineID, participantsOf(m.Recipients))
		if err != nil {
			return err
		}
		placeholder, err := tx.Insert(ctx, `INSERT INTO messages (account_id, conversation_id, line_id, direction, from_number, to_numbers, body, media, type, status, units, unit_price, price, sent_by, scheduled, scheduled_at, created_at)
			VALUES (?, ?, ?, 'out', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, TRUE, ?, ?)`,
			m.AccountID, convID, m.LineID, m.Line, string(to), m.Text, string(media), m.Type, domain.StatusScheduled, m.Units, int64(maxPrice(m.UnitPrices)), int64(m.Price), by, micros(m.SendAt), tx.Now())
		if err != nil {
			return fmt.Errorf("store: scheduled placeholder: %w", err)
		}
		if _, err := useMedia(ctx, tx, m.AccountID, m.Media); err != nil {
			return err
		}
		res, err := tx.Exec(ctx, `UPDATE scheduled_messages SET state = ?, message_id = ?, attempts = attempts + 1, due_at = ?, lease_owner = NULL, lease_until = NULL
			WHERE id = ? AND state = ? AND message_id = ? AND EXISTS (SELECT 1 FROM messages WHERE id = ? AND status = ?)`,
			domain.ScheduleQueued, placeholder, micros(due), m.ID, domain.ScheduleSending, m.MessageID, m.MessageID, domain.StatusAbandoned)
		if err != nil {
			return fmt.Errorf("store: resend scheduled: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errNotQueued // rolls the placeholder back
		}
		return nil
	})
	if errors.Is(err, errNotQueued) {
		return false, nil
	}
	return err == nil, err
}

// HasDueScheduled reports whether a scheduled message is due and free to
// claim: a cheap read, so an idle dispatcher polls without writing.
func (s *Store) HasDueScheduled(ctx context.Context) (bool, error) {
	var id int64
	now := micros(s.db.Now())
	err := s.db.QueryRow(ctx, `SELECT id FROM scheduled_messages WHERE due_at <= ? AND (lease_until IS NULL OR lease_until <= ?) LIMIT 1`, now, now).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// HostedMediaOwned reports which of names are media hosted for the account.
func (s *Store) HostedMediaOwned(ctx context.Context, accountID int64, names []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, n := range names {
		var one int
		err := s.db.QueryRow(ctx, `SELECT 1 FROM hosted_media WHERE name = ? AND account_id = ?`, n, accountID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("store: hosted media: %w", err)
		}
		out[n] = true
	}
	return out, nil
}
