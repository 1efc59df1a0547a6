package store

import (
	"context"
	"fmt"
	"strconv"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// SetRate adds or replaces the account's rate for a destination prefix.
func (s *Store) SetRate(ctx context.Context, r *domain.Rate) error {
	if r.SMS < 0 || r.MMS < 0 {
		return domain.Errorf(domain.Invalid, "rates cannot be negative")
	}
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		if err := accountExists(ctx, tx, r.AccountID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO rates (account_id, prefix, sms_micros, mms_micros, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (account_id, prefix) DO UPDATE SET sms_micros = excluded.sms_micros, mms_micros = excluded.mms_micros, created_at = excluded.created_at`,
			r.AccountID, r.Prefix, int64(r.SMS), int64(r.MMS), tx.Now())
		if err != nil {
			return fmt.Errorf("store: set rate: %w", err)
		}
		r.CreatedAt = fromMicros(tx.Now())
		return nil
	})
}

// DeleteRate removes the account's rate for prefix.
func (s *Store) DeleteRate(ctx context.Context, accountID int64, prefix string) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `DELETE FROM rates WHERE account_id = ? AND prefix = ?`, accountID, prefix)
		if err != nil {
			return fmt.Errorf("store: delete rate: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.Errorf(domain.NotFound, "no rate for prefix %q in account %d", prefix, accountID)
		}
		return nil
	})
}

// Rates lists the account's rates by prefix. The result is shared: do not modify it.
func (s *Store) Rates(ctx context.Context, accountID int64) ([]domain.Rate, error) {
	return sqldb.Cached(ctx, s.db, "rates:"+strconv.FormatInt(accountID, 10), func() ([]domain.Rate, error) {
		rows, err := s.db.Query(ctx, `SELECT prefix, sms_micros, mms_micros, created_at FROM rates WHERE account_id = ? ORDER BY prefix`, accountID)
		if err != nil {
			return nil, fmt.Errorf("store: rates: %w", err)
		}
		defer rows.Close()
		out := []domain.Rate{}
		for rows.Next() {
			r := domain.Rate{AccountID: accountID}
			var created int64
			if err := rows.Scan(&r.Prefix, &r.SMS, &r.MMS, &created); err != nil {
				return nil, fmt.Errorf("store: rates: %w", err)
			}
			r.CreatedAt = fromMicros(created)
			out = append(out, r)
		}
		return out, rows.Err()
	})
}
