package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// CreateAPIKey stores a key's hash and metadata (never the key itself).
func (s *Store) CreateAPIKey(ctx context.Context, k *domain.APIKey) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		if err := accountExists(ctx, tx, k.AccountID); err != nil {
			return err
		}
		id, err := tx.Insert(ctx, `INSERT INTO api_keys (account_id, name, prefix, hash, scopes, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			k.AccountID, k.Name, k.Prefix, k.Hash, strings.Join(k.Scopes, " "), tx.Now())
		if err != nil {
			return fmt.Errorf("store: create api key: %w", err)
		}
		k.ID, k.CreatedAt = id, fromMicros(tx.Now())
		return nil
	})
}

const keyColumns = `id, account_id, name, prefix, hash, scopes, created_at, revoked_at`

func scanKey(sc interface{ Scan(...any) error }) (domain.APIKey, error) {
	var k domain.APIKey
	var scopes string
	var created int64
	var revoked sql.NullInt64
	if err := sc.Scan(&k.ID, &k.AccountID, &k.Name, &k.Prefix, &k.Hash, &scopes, &created, &revoked); err != nil {
		return k, err
	}
	k.Scopes = strings.Fields(scopes)
	k.CreatedAt = fromMicros(created)
	if revoked.Valid {
		t := fromMicros(revoked.Int64)
		k.RevokedAt = &t
	}
	return k, nil
}

// APIKeyByHash finds a key by the hash of its secret, revoked or not.
func (s *Store) APIKeyByHash(ctx context.Context, hash []byte) (domain.APIKey, error) {
	return sqldb.Cached(ctx, s.db, "key:"+string(hash), func() (domain.APIKey, error) { return s.apiKeyByHash(ctx, hash) })
}

func (s *Store) apiKeyByHash(ctx context.Context, hash []byte) (domain.APIKey, error) {
	k, err := scanKey(s.db.QueryRow(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE hash = ?`, hash))
	if err != nil {
		return k, fmt.Errorf("store: api key: %w", notFound(err, "api key"))
	}
	return k, nil
}

// APIKeys lists the account's keys, oldest first.
func (s *Store) APIKeys(ctx context.Context, accountID int64) ([]domain.APIKey, error) {
	rows, err := s.db.Query(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE account_id = ? ORDER BY id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("store: api keys: %w", err)
	}
	defer rows.Close()
	out := []domain.APIKey{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("store: api keys: %w", err)
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// RevokeAPIKey revokes the account's key id. Revoking twice keeps the first time.
func (s *Store) RevokeAPIKey(ctx context.Context, accountID, id int64) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE account_id = ? AND id = ?`, tx.Now(), accountID, id)
		if err != nil {
			return fmt.Errorf("store: revoke api key: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.Errorf(domain.NotFound, "api key %d not found in account %d", id, accountID)
		}
		return nil
	})
}
