package store

import (
	"context"
	"database/sql"
	"fmt"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// IngestToken is a credential a phone system pushes calls with.
type IngestToken struct {
	ID        int64
	AccountID int64
	Name      string
	Prefix    string
	CreatedAt int64
	RevokedAt *int64
}

// CreateIngestToken stores the hash of a new ingest token.
func (s *Store) CreateIngestToken(ctx context.Context, accountID int64, name, prefix string, hash []byte) (IngestToken, error) {
	t := IngestToken{AccountID: accountID, Name: name, Prefix: prefix}
	err := s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		if err := accountExists(ctx, tx, accountID); err != nil {
			return err
		}
		id, err := tx.Insert(ctx, `INSERT INTO ingest_tokens (account_id, name, prefix, hash, created_at) VALUES (?, ?, ?, ?, ?)`,
			accountID, name, prefix, hash, tx.Now())
		if err != nil {
			return fmt.Errorf("store: create ingest token: %w", err)
		}
		t.ID, t.CreatedAt = id, tx.Now()
		return nil
	})
	return t, err
}

// IngestTokenAccount returns the account of the live ingest token with hash.
func (s *Store) IngestTokenAccount(ctx context.Context, hash []byte) (int64, error) {
	return sqldb.Cached(ctx, s.db, "ingest:"+string(hash), func() (int64, error) {
		var account int64
		err := s.db.QueryRow(ctx, `SELECT account_id FROM ingest_tokens WHERE hash = ? AND revoked_at IS NULL`, hash).Scan(&account)
		if err != nil {
			return 0, fmt.Errorf("store: ingest token: %w", notFound(err, "ingest token"))
		}
		return account, nil
	})
}

// IngestTokens lists the account's ingest tokens, oldest first.
func (s *Store) IngestTokens(ctx context.Context, accountID int64) ([]IngestToken, error) {
	rows, err := s.db.Query(ctx, `SELECT id, account_id, name, prefix, created_at, revoked_at FROM ingest_tokens WHERE account_id = ? ORDER BY id`, accountID)
	if err != nil {
		return nil, fmt.Errorf("store: ingest tokens: %w", err)
	}
	defer rows.Close()
	out := []IngestToken{}
	for rows.Next() {
		var t IngestToken
		var revoked sql.NullInt64
		if err := rows.Scan(&t.ID, &t.AccountID, &t.Name, &t.Prefix, &t.CreatedAt, &revoked); err != nil {
			return nil, err
		}
		if revoked.Valid {
			t.RevokedAt = &revoked.Int64
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// RevokeIngestToken revokes one of the account's ingest tokens.
func (s *Store) RevokeIngestToken(ctx context.Context, accountID, id int64) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `UPDATE ingest_tokens SET revoked_at = ? WHERE account_id = ? AND id = ? AND revoked_at IS NULL`, tx.Now(), accountID, id)
		if err != nil {
			return fmt.Errorf("store: revoke ingest token: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.Errorf(domain.NotFound, "no live ingest token %d on account %d", id, accountID)
		}
		return nil
	})
}
