package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"

	"switchboard/internal/store/sqldb"
)

// ServerKey returns the secret named name, shared by every process on this
// database. The first caller anywhere creates it with newSecret; a racing
// node's insert loses and both read the one that won.
func (s *Store) ServerKey(ctx context.Context, name string, newSecret func() []byte) ([]byte, error) {
	var secret []byte
	err := s.db.QueryRow(ctx, `SELECT secret FROM server_keys WHERE name = ?`, name).Scan(&secret)
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
	err = s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO server_keys (name, secret, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`,
			name, fresh, tx.Now()); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT secret FROM server_keys WHERE name = ?`, name).Scan(&secret)
	})
	if err != nil {
		return nil, fmt.Errorf("store: create server key %s: %w", name, err)
	}
	return secret, nil
}

// RecordingKey returns the secret that signs recording links, creating it on
// first use.
func (s *Store) RecordingKey(ctx context.Context) ([]byte, error) {
	key, err := sqldb.Cached(ctx, s.db, "recording-key", func() ([]byte, error) { return s.recordingKey(ctx) })
	if err == nil && key == nil {
		// None yet: make one (two processes racing keep the newest).
		if err := s.RotateRecordingKey(ctx); err != nil {
			return nil, err
		}
		return s.recordingKey(ctx)
	}
	return key, err
}

func (s *Store) recordingKey(ctx context.Context) ([]byte, error) {
	var key []byte
	err := s.db.QueryRow(ctx, `SELECT secret FROM recording_keys ORDER BY id DESC LIMIT 1`).Scan(&key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: recording key: %w", err)
	}
	return key, nil
}

// RotateRecordingKey replaces the key that signs recording links: every link
// handed out before stops working.
func (s *Store) RotateRecordingKey(ctx context.Context) error {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		id, err := tx.Insert(ctx, `INSERT INTO recording_keys (secret, created_at) VALUES (?, ?)`, key, tx.Now())
		if err != nil {
			return fmt.Errorf("store: rotate recording key: %w", err)
		}
		_, err = tx.Exec(ctx, `DELETE FROM recording_keys WHERE id < ?`, id)
		return err
	})
}
