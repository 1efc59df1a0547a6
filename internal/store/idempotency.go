package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// Idempotency-Key records are kept at least this long.
const IdempotencyTTL = 24 * time.Hour

// idempotencyLease is how long a running request owns its key. A record still
// running after that, with no message linked, belongs to a process that
// stopped before writing anything, so a retry may take it over.
const idempotencyLease = 2 * time.Minute

// IdempotentRecord is what a key holds once its first request has an
// answer: Data as the caller stored it (the store does not read it) and,
// when the request wrote a message, that message's id and status now.
type IdempotentRecord struct {
	Data          []byte
	MessageID     int64
	MessageStatus string
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
// returns the key's record when the same request already has an answer, a
// conflict while it is still running, invalid_request (Unprocessable) when
// the key was used with a different body, or a claim when the caller should
// proceed. A key linked to a message keeps pointing at it whatever becomes
// of it: pending is a conflict; sent and abandoned return the record (the
// caller answers from the message's status); only a failed message (the
// client was told nothing was sent) frees the key, and MarkUnsent deletes
// the record then.
func (s *Store) BeginIdempotent(ctx context.Context, accountID int64, key string, hash []byte) (*IdempotentRecord, *IdempotencyClaim, error) {
	var rec *IdempotentRecord
	var claim *IdempotencyClaim
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		// A write function may run twice (again in a savepoint when another
		// write of its group fails): start from nothing each time.
		rec, claim = nil, nil
		tx.Touches(accountID)
		var (
			storedHash []byte
			state      string
			response   []byte
			messageID  sql.NullInt64
			msgStatus  sql.NullString
			created    int64
		)
		err := tx.QueryRow(ctx, `SELECT k.request_hash, k.state, k.response, k.message_id, m.status, k.created_at
			FROM idempotency_keys k LEFT JOIN messages m ON m.id = k.message_id WHERE k.account_id = ? AND k.key = ?`, accountID, key).
			Scan(&storedHash, &state, &response, &messageID, &msgStatus, &created)
		conflict := domain.Errorf(domain.Conflict, "a request with this Idempotency-Key is still in progress; retry later")
		switch {
		case errors.Is(err, sql.ErrNoRows):
			// Claim it; a concurrent request that claimed it first wins.
			res, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (account_id, key, request_hash, state, created_at) VALUES (?, ?, ?, 'running', ?) ON CONFLICT DO NOTHING`,
				accountID, key, hash, tx.Now())
			if err != nil {
				return fmt.Errorf("store: idempotency: %w", err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return conflict
			}
			claim = &IdempotencyClaim{AccountID: accountID, Key: key, at: tx.Now()}
			return nil
		case err != nil:
			return fmt.Errorf("store: idempotency: %w", err)
		case tx.Now()-created > IdempotencyTTL.Microseconds():
			// Expired: forget it and start over.
		case !bytes.Equal(storedHash, hash):
			return domain.Unprocessablef("Idempotency-Key was already used for a different request (another body, or another user)")
		case messageID.Valid && msgStatus.String == domain.StatusPending:
			return conflict
		case messageID.Valid && msgStatus.String != domain.StatusFailed:
			// Sent or abandoned (or deleted since): the caller answers from it.
			rec = &IdempotentRecord{Data: response, MessageID: messageID.Int64, MessageStatus: msgStatus.String}
			return nil
		case messageID.Valid:
			// Failed: the record should have gone with the refusal; run again.
		case state == "done":
			rec = &IdempotentRecord{Data: response}
			return nil
		case tx.Now()-created < idempotencyLease.Microseconds():
			return conflict
		}
		// Take over an expired record or a dead request's claim, unless a
		// concurrent request just did (compare-and-swap on created_at).
		res, err := tx.Exec(ctx, `UPDATE idempotency_keys SET request_hash = ?, state = 'running', status = 0, response = NULL, message_id = NULL, created_at = ?
			WHERE account_id = ? AND key = ? AND created_at = ?`, hash, tx.Now(), accountID, key, created)
		if err != nil {
			return fmt.Errorf("store: idempotency: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return conflict
		}
		claim = &IdempotencyClaim{AccountID: accountID, Key: key, at: tx.Now()}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return rec, claim, nil
}

// errClaimLost is what a write for an overtaken claim fails with: nothing was
// sent under it, and the request that took the key over decides.
var errClaimLost = domain.Errorf(domain.Conflict, "a newer request with this Idempotency-Key took it over; retry later")

// IdempotencyAnswer finishes an Idempotency-Key claim inside the
// transaction of the change it answers for (a schedule), so that a retry
// finds either nothing done or the answer. Data is the answer as the caller
// built it before the transaction, naming the row the change creates (the
// store does not read it): handed as data, as a send's IdempotencyLink is.
type IdempotencyAnswer struct {
	Claim *IdempotencyClaim
	Data  IDTemplate
}

// finish stores the answer naming row id; a claim taken over by a newer
// request fails the transaction (errClaimLost), so the change is not made
// twice.
func (a *IdempotencyAnswer) finish(ctx context.Context, tx *Tx, id int64) error {
	c := a.Claim
	res, err := tx.Exec(ctx, `UPDATE idempotency_keys SET state = 'done', response = ? WHERE account_id = ? AND key = ? AND created_at = ? AND state = 'running' AND message_id IS NULL`,
		a.Data.With(id), c.AccountID, c.Key, c.at)
	if err != nil {
		return fmt.Errorf("store: idempotency: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return errClaimLost
	}
	return nil
}

// FinishIdempotent stores data as the answer of the claimed key. A claim
// that was taken over, or whose request wrote a message (the message decides
// then), changes nothing.
func (s *Store) FinishIdempotent(ctx context.Context, c *IdempotencyClaim, data []byte) error {
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.Touches(c.AccountID)
		_, err := tx.Exec(ctx, `UPDATE idempotency_keys SET state = 'done', response = ? WHERE account_id = ? AND key = ? AND created_at = ? AND message_id IS NULL`,
			data, c.AccountID, c.Key, c.at)
		if err != nil {
			return fmt.Errorf("store: idempotency: %w", err)
		}
		return nil
	})
}

// ReleaseIdempotent forgets the claimed key, so that a retry runs again: its
// request did nothing. A claim that was taken over, or whose request wrote a
// message, changes nothing.
func (s *Store) ReleaseIdempotent(ctx context.Context, c *IdempotencyClaim) error {
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.Touches(c.AccountID)
		_, err := tx.Exec(ctx, `DELETE FROM idempotency_keys WHERE account_id = ? AND key = ? AND created_at = ? AND state = 'running' AND message_id IS NULL`,
			c.AccountID, c.Key, c.at)
		if err != nil {
			return fmt.Errorf("store: idempotency: %w", err)
		}
		return nil
	})
}

// PruneIdempotency deletes records older than the TTL, finished or not (a
// claim that old belongs to a request long dead, and a message that old was
// resolved by the reconciler long ago).
func (s *Store) PruneIdempotency(ctx context.Context) error {
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < ?`, tx.Now()-IdempotencyTTL.Microseconds())
		return err
	})
}
