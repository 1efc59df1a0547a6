package store

import (
	"context"
	"fmt"

	"switchboard/internal/domain"
)

// AddHostedMedia records that m.Name, already stored in the blob store, is
// the account's.
func (s *Store) AddHostedMedia(ctx context.Context, m *domain.HostedMedia) error {
	return s.write(ctx, func(tx *Tx) error {
		var by any
		if m.CreatedBy != 0 {
			by = m.CreatedBy
		}
		if _, err := tx.exec(ctx, `INSERT INTO hosted_media (name, account_id, content_type, size, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			m.Name, m.AccountID, m.ContentType, m.Size, by, tx.now); err != nil {
			return fmt.Errorf("store: add hosted media: %w", err)
		}
		m.CreatedAt = fromMicros(tx.now)
		return nil
	})
}
