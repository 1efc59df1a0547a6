package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ServerKey returns the secret named name, shared by every process on this
// database. The first caller anywhere creates it with newSecret; a racing
// node's insert loses and both read the one that won.
func (s *Store) ServerKey(ctx context.Context, name string, newSecret func() []byte) ([]byte, error) {
	var secret []byte
	err := s.queryRow(ctx, `SELECT secret FROM server_keys WHERE name = ?`, name).Scan(&secret)
	if err == nil {
		return secret, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: server key %s: %w", name, err)
	}
	fresh := newSecret()
	if len(fresh) == 0 {
		return nil, fmt.Errorf("store: server key %s: empty secret", name)
	}
	err = s.writeData(ctx, func(tx *Tx) error {
		if _, err := tx.exec(ctx, `INSERT INTO server_keys (name, secret, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`,
			name, fresh, tx.now); err != nil {
			return err
		}
		return tx.queryRow(ctx, `SELECT secret FROM server_keys WHERE name = ?`, name).Scan(&secret)
	})
	if err != nil {
		return nil, fmt.Errorf("store: create server key %s: %w", name, err)
	}
	return secret, nil
}
