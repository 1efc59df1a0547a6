package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// NotificationPrefs returns the person's saved notification preferences;
// found is false when they saved none (internal/team supplies the defaults).
func (s *Store) NotificationPrefs(ctx context.Context, accountID, userID int64) (p domain.NotificationPrefs, found bool, err error) {
	var updated int64
	err = s.db.QueryRow(ctx, `SELECT assigned_to_me, unassigned_on_lines, mentions, updated_at FROM notification_prefs WHERE account_id = ? AND user_id = ?`,
		accountID, userID).Scan(&p.AssignedToMe, &p.UnassignedOnLines, &p.Mentions, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return p, false, nil
	}
	if err != nil {
		return p, false, fmt.Errorf("store: notification preferences: %w", err)
	}
	at := fromMicros(updated)
	p.UpdatedAt = &at
	return p, true, nil
}

// PutNotificationPrefs saves the person's notification preferences,
// setting p.UpdatedAt.
func (s *Store) PutNotificationPrefs(ctx context.Context, accountID, userID int64, p *domain.NotificationPrefs) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO notification_prefs (account_id, user_id, assigned_to_me, unassigned_on_lines, mentions, updated_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (account_id, user_id) DO UPDATE SET assigned_to_me = excluded.assigned_to_me, unassigned_on_lines = excluded.unassigned_on_lines,
				mentions = excluded.mentions, updated_at = excluded.updated_at`,
			accountID, userID, p.AssignedToMe, p.UnassignedOnLines, p.Mentions, tx.Now())
		if err != nil {
			return fmt.Errorf("store: put notification preferences: %w", err)
		}
		at := fromMicros(tx.Now())
		p.UpdatedAt = &at
		return nil
	})
}
