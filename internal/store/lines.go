package store

import (
	"context"
	"fmt"
	"strings"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// CreateLine adds a phone number to an account. A number belongs to at most one
// account (inbound texts are routed by it); assigned users must be the account's.
func (s *Store) CreateLine(ctx context.Context, l *domain.Line) error {
	if l.Number == "" {
		return domain.Errorf(domain.Invalid, "line number is required")
	}
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		if err := accountExists(ctx, tx, l.AccountID); err != nil {
			return err
		}
		var carrierID any
		if l.CarrierID > 0 {
			carrierID = l.CarrierID
		}
		id, err := tx.Insert(ctx, `INSERT INTO lines (account_id, number, name, bulk_enabled, sms_enabled, carrier_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			l.AccountID, l.Number, l.Name, l.BulkEnabled, l.SMSEnabled, carrierID, tx.Now())
		if sqldb.IsUniqueViolation(err) {
			return domain.Errorf(domain.Conflict, "number %s is already a line", l.Number)
		}
		if err != nil {
			return fmt.Errorf("store: create line: %w", err)
		}
		if err := assignLine(ctx, tx, l.AccountID, id, l.UserIDs); err != nil {
			return err
		}
		l.ID = id
		return nil
	})
}

// assignLine assigns the line to users, each of which must be the account's.
func assignLine(ctx context.Context, tx *Tx, accountID, lineID int64, users []int64) error {
	for _, uid := range users {
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM users WHERE id = ? AND account_id = ? AND deleted_at IS NULL`, uid, accountID).Scan(&n); err != nil {
			return fmt.Errorf("store: find user: %w", err)
		}
		if n == 0 {
			return domain.Errorf(domain.NotFound, "user %d not found in account %d", uid, accountID)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO line_users (line_id, user_id) VALUES (?, ?) ON CONFLICT DO NOTHING`, lineID, uid); err != nil {
			return fmt.Errorf("store: assign line: %w", err)
		}
	}
	return nil
}

// UpdateLine saves l's name, users, bulk and SMS settings. The number is a
// line's identity (its threads and charges are with it) and is not changed.
func (s *Store) UpdateLine(ctx context.Context, l domain.Line) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `UPDATE lines SET name = ?, bulk_enabled = ?, sms_enabled = ? WHERE id = ? AND account_id = ?`,
			l.Name, l.BulkEnabled, l.SMSEnabled, l.ID, l.AccountID)
		if err != nil {
			return fmt.Errorf("store: update line: %w", err)
		}
		if err := oneRow(res, "line"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM line_users WHERE line_id = ?`, l.ID); err != nil {
			return fmt.Errorf("store: unassign line: %w", err)
		}
		return assignLine(ctx, tx, l.AccountID, l.ID, l.UserIDs)
	})
}

// DeleteLine deletes the account's line, with its users, blocked senders
// and opt-outs. It is refused (conflict, saying with what) while the line is
// in use: while any conversation, message or pending scheduled message is on
// it, because deleting the line would delete the account's history with it
// (threads, comments, the texts the ledger's charges point at).
func (s *Store) DeleteLine(ctx context.Context, accountID, id int64) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		var number string
		// The row lock makes a text arriving meanwhile wait, then fail on
		// the missing line (its conversation's foreign key).
		err := tx.QueryRow(ctx, `SELECT number FROM lines WHERE id = ? AND account_id = ?`+tx.ForUpdate(), id, accountID).Scan(&number)
		if err != nil {
			return fmt.Errorf("store: delete line: %w", notFound(err, "line"))
		}
		var convs, msgs, scheduled int64
		err = tx.QueryRow(ctx, `SELECT (SELECT COUNT(*) FROM conversations WHERE line_id = ?), (SELECT COUNT(*) FROM messages WHERE line_id = ?),
			(SELECT COUNT(*) FROM scheduled_messages WHERE line_id = ? AND state IN ('queued', 'sending'))`, id, id, id).Scan(&convs, &msgs, &scheduled)
		if err != nil {
			return fmt.Errorf("store: line use: %w", err)
		}
		if use := lineUse(convs, msgs, scheduled); use != "" {
			return domain.Errorf(domain.Conflict, "line %d (%s) is in use: %s; a line with history cannot be deleted (line edit --no-sms=true stops its texts)", id, number, use)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM lines WHERE id = ?`, id); err != nil {
			return fmt.Errorf("store: delete line: %w", err)
		}
		return nil
	})
}

// lineUse says what a line holds, e.g. "3 conversations, 12 messages"; ""
// when nothing.
func lineUse(convs, msgs, scheduled int64) string {
	var parts []string
	for _, c := range []struct {
		n         int64
		one, many string
	}{{convs, "conversation", "conversations"}, {msgs, "message", "messages"}, {scheduled, "scheduled message pending", "scheduled messages pending"}} {
		switch {
		case c.n == 1:
			parts = append(parts, "1 "+c.one)
		case c.n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.many))
		}
	}
	return strings.Join(parts, ", ")
}

const lineColumns = `id, account_id, number, name, bulk_enabled, sms_enabled, COALESCE(carrier_id, 0)`

// Lines lists the account's lines by number; smsOnly keeps the SMS-capable ones.
// The result is shared: callers must not modify it.
func (s *Store) Lines(ctx context.Context, accountID int64, smsOnly bool) ([]domain.Line, error) {
	key := fmt.Sprintf("lines:%d:%t", accountID, smsOnly)
	return sqldb.Cached(ctx, s.db, key, func() ([]domain.Line, error) { return s.lines(ctx, accountID, smsOnly) })
}

func (s *Store) lines(ctx context.Context, accountID int64, smsOnly bool) ([]domain.Line, error) {
	q := `SELECT ` + lineColumns + ` FROM lines WHERE account_id = ?`
	if smsOnly {
		q += ` AND sms_enabled`
	}
	rows, err := s.db.Query(ctx, q+` ORDER BY number`, accountID)
	if err != nil {
		return nil, fmt.Errorf("store: lines: %w", err)
	}
	defer rows.Close()
	out := []domain.Line{}
	byID := map[int64]int{}
	for rows.Next() {
		var l domain.Line
		if err := rows.Scan(&l.ID, &l.AccountID, &l.Number, &l.Name, &l.BulkEnabled, &l.SMSEnabled, &l.CarrierID); err != nil {
			return nil, fmt.Errorf("store: lines: %w", err)
		}
		l.UserIDs = []int64{}
		byID[l.ID] = len(out)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: lines: %w", err)
	}
	rows.Close()

	urows, err := s.db.Query(ctx, `SELECT lu.line_id, lu.user_id FROM line_users lu JOIN lines l ON l.id = lu.line_id WHERE l.account_id = ? ORDER BY lu.line_id, lu.user_id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("store: line users: %w", err)
	}
	defer urows.Close()
	for urows.Next() {
		var lineID, userID int64
		if err := urows.Scan(&lineID, &userID); err != nil {
			return nil, fmt.Errorf("store: line users: %w", err)
		}
		if i, ok := byID[lineID]; ok {
			out[i].UserIDs = append(out[i].UserIDs, userID)
		}
	}
	return out, urows.Err()
}

// LineByNumber finds the line with number, in any account (for routing inbound texts).
func (s *Store) LineByNumber(ctx context.Context, number string) (domain.Line, error) {
	var l domain.Line
	err := s.db.QueryRow(ctx, `SELECT `+lineColumns+` FROM lines WHERE number = ?`, number).
		Scan(&l.ID, &l.AccountID, &l.Number, &l.Name, &l.BulkEnabled, &l.SMSEnabled, &l.CarrierID)
	if err != nil {
		return l, fmt.Errorf("store: line: %w", notFound(err, "line"))
	}
	rows, err := s.db.Query(ctx, `SELECT user_id FROM line_users WHERE line_id = ? ORDER BY user_id`, l.ID)
	if err != nil {
		return l, fmt.Errorf("store: line users: %w", err)
	}
	defer rows.Close()
	l.UserIDs = []int64{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return l, fmt.Errorf("store: line users: %w", err)
		}
		l.UserIDs = append(l.UserIDs, id)
	}
	return l, rows.Err()
}
