package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// MaxBlockedPerLine bounds a line's block list.
const MaxBlockedPerLine = 10000

// BlockedSenders lists the line's blocked numbers, newest first.
func (s *Store) BlockedSenders(ctx context.Context, line domain.Line) ([]domain.BlockedSender, error) {
	rows, err := s.db.Query(ctx, `SELECT number, reason, blocked_at FROM blocked_senders WHERE line_id = ? ORDER BY blocked_at DESC, number`, line.ID)
	if err != nil {
		return nil, fmt.Errorf("store: blocked senders: %w", err)
	}
	defer rows.Close()
	out := []domain.BlockedSender{}
	for rows.Next() {
		b := domain.BlockedSender{LineID: line.ID, Line: line.Number}
		var at int64
		if err := rows.Scan(&b.Number, &b.Reason, &at); err != nil {
			return nil, fmt.Errorf("store: blocked senders: %w", err)
		}
		b.BlockedAt = fromMicros(at)
		out = append(out, b)
	}
	return out, rows.Err()
}

// BlockedSender returns the line's entry for number; not_found when the
// number is not blocked.
func (s *Store) BlockedSender(ctx context.Context, line domain.Line, number string) (domain.BlockedSender, error) {
	b := domain.BlockedSender{LineID: line.ID, Line: line.Number, Number: number}
	var at int64
	err := s.db.QueryRow(ctx, `SELECT reason, blocked_at FROM blocked_senders WHERE line_id = ? AND number = ?`, line.ID, number).Scan(&b.Reason, &at)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return domain.BlockedSender{}, domain.Errorf(domain.NotFound, "%s is not blocked on line %s", number, line.Number)
		}
		return domain.BlockedSender{}, fmt.Errorf("store: blocked sender: %w", err)
	}
	b.BlockedAt = fromMicros(at)
	return b, nil
}

// Block adds b.Number to the line's block list. When it was already there,
// b becomes the stored entry (its reason and time unchanged) and created is
// false.
func (s *Store) Block(ctx context.Context, b *domain.BlockedSender) (created bool, err error) {
	err = s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		created = false
		var reason string
		var at int64
		err := tx.QueryRow(ctx, `SELECT reason, blocked_at FROM blocked_senders WHERE line_id = ? AND number = ?`, b.LineID, b.Number).Scan(&reason, &at)
		if err == nil {
			b.Reason, b.BlockedAt = reason, fromMicros(at)
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: block: %w", err)
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM blocked_senders WHERE line_id = ?`, b.LineID).Scan(&n); err != nil {
			return fmt.Errorf("store: block: %w", err)
		}
		if n >= MaxBlockedPerLine {
			return domain.Errorf(domain.Conflict, "line %s already blocks %d numbers, the most allowed; unblock one first", b.Line, MaxBlockedPerLine)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO blocked_senders (line_id, number, reason, blocked_at) VALUES (?, ?, ?, ?)`, b.LineID, b.Number, b.Reason, tx.Now()); err != nil {
			return fmt.Errorf("store: block: %w", err)
		}
		b.BlockedAt, created = fromMicros(tx.Now()), true
		return nil
	})
	return created, err
}

// Unblock removes number from the line's block list; not_found when it was
// not blocked.
func (s *Store) Unblock(ctx context.Context, line domain.Line, number string) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `DELETE FROM blocked_senders WHERE line_id = ? AND number = ?`, line.ID, number)
		if err != nil {
			return fmt.Errorf("store: unblock: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.Errorf(domain.NotFound, "%s is not blocked on line %s", number, line.Number)
		}
		return nil
	})
}
