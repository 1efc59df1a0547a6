package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"time"

	"switchboard/internal/domain"
)

// Idempotency-Key records are kept at least this long.
const IdempotencyTTL = 24 * time.Hour

// idempotencyLease is how long a running request owns its key. A record still
// running after that, with no message linked, belongs to a process that
// stopped before writing anything, so a retry may take it over.
const idempotencyLease = 2 * time.Minute

// Replay is a stored response to repeat.
type Replay struct {
	Status int
	Body   []byte
}

// IdempotencyClaim is a running request's hold on its key. A request that
// outlives the lease can be taken over by a retry; every later write for the
// key names the claim, so the overtaken request finds out instead of
// sending under a key that is no longer its own.
type IdempotencyClaim struct {
	AccountID int64
	Key       string
	at        int64 // created_at written by the claim
}

// BeginIdempotent claims key for a request whose body hashes to hash. It
// returns a Replay when the same request already completed, a conflict while
// it is still running, invalid_request (422) when the key was used with a
// different body, or a claim when the caller should proceed.
func (s *Store) BeginIdempotent(ctx context.Context, accountID int64, key string, hash []byte) (*Replay, *IdempotencyClaim, error) {
	var replay *Replay
	var claim *IdempotencyClaim
	err := s.writeData(ctx, func(tx *Tx) error {
		// A write function may run twice (again in a savepoint when another
		// write of its group fails): start from nothing each time.
		replay, claim = nil, nil
		var (
			storedHash []byte
			state      string
			status     int
			response   []byte
			messageID  sql.NullInt64
			created    int64
		)
		err := tx.queryRow(ctx, `SELECT request_hash, state, status, response, message_id, created_at FROM idempotency_keys WHERE account_id = ? AND key = ?`, accountID, key).
			Scan(&storedHash, &state, &status, &response, &messageID, &created)
		conflict := domain.Errorf(domain.Conflict, "a request with this Idempotency-Key is still in progress; retry later")
		switch {
		case errors.Is(err, sql.ErrNoRows):
			// Claim it; a concurrent request that claimed it first wins.
			res, err := tx.exec(ctx, `INSERT INTO idempotency_keys (account_id, key, request_hash, state, created_at) VALUES (?, ?, ?, 'running', ?) ON CONFLICT DO NOTHING`,
				accountID, key, hash, tx.now)
			if err != nil {
				return fmt.Errorf("store: idempotency: %w", err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return conflict
			}
			claim = &IdempotencyClaim{AccountID: accountID, Key: key, at: tx.now}
			return nil
		case err != nil:
			return fmt.Errorf("store: idempotency: %w", err)
		case tx.now-created > IdempotencyTTL.Microseconds():
			// Expired: forget it and start over.
		case !bytes.Equal(storedHash, hash):
			return &domain.Error{Code: domain.Invalid, Status: http.StatusUnprocessableEntity,
				Message: "Idempotency-Key was already used for a different request (another body, or another user)"}
		case state == "done":
			replay = &Replay{Status: status, Body: response}
			return nil
		case messageID.Valid || tx.now-created < idempotencyLease.Microseconds():
			return conflict
		}
		// Take over an expired record or a dead request's claim, unless a
		// concurrent request just did (compare-and-swap on created_at).
		res, err := tx.exec(ctx, `UPDATE idempotency_keys SET request_hash = ?, state = 'running', status = 0, response = NULL, message_id = NULL, created_at = ?
			WHERE account_id = ? AND key = ? AND created_at = ?`, hash, tx.now, accountID, key, created)
		if err != nil {
			return fmt.Errorf("store: idempotency: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return conflict
		}
		claim = &IdempotencyClaim{AccountID: accountID, Key: key, at: tx.now}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return replay, claim, nil
}

// errClaimLost is what a write for an overtaken claim fails with: nothing was
// sent under it, and the request that took the key over decides.
var errClaimLost = domain.Errorf(domain.Conflict, "a newer request with this Idempotency-Key took it over; retry later")

// FinishIdempotent stores the final response for the claimed key. A 5xx
// response (nothing happened) releases the key instead, so the client's retry
// runs again. A claim that was taken over changes nothing.
func (s *Store) FinishIdempotent(ctx context.Context, c *IdempotencyClaim, status int, body []byte) error {
	return s.writeData(ctx, func(tx *Tx) error {
		var err error
		if status >= 500 {
			_, err = tx.exec(ctx, `DELETE FROM idempotency_keys WHERE account_id = ? AND key = ? AND created_at = ? AND state = 'running'`, c.AccountID, c.Key, c.at)
		} else {
			_, err = tx.exec(ctx, `UPDATE idempotency_keys SET state = 'done', status = ?, response = ? WHERE account_id = ? AND key = ? AND created_at = ?`, status, body, c.AccountID, c.Key, c.at)
		}
		if err != nil {
			return fmt.Errorf("store: idempotency: %w", err)
		}
		return nil
	})
}

// PruneIdempotency deletes records older than the TTL.
func (s *Store) PruneIdempotency(ctx context.Context) error {
	return s.writeData(ctx, func(tx *Tx) error {
		_, err := tx.exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < ? AND state = 'done'`, tx.now-IdempotencyTTL.Microseconds())
		return err
	})
}
