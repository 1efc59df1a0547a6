package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// AppSession is a session of the Switchboard app: a browser's cookie names
// it (by the hash of its secret), and it holds the grant's current refresh
// token (by hash) on the browser's behalf.
type AppSession struct {
	ID        int64
	GrantID   int64
	AccountID int64
	UserID    int64
	CreatedAt time.Time
	UsedAt    time.Time
}

// AppSessionLimits are the limits a session is held to at each use: it ends
// Idle after its last use or Lifetime after it began.
type AppSessionLimits struct {
	Idle     time.Duration
	Lifetime time.Duration
}

// Why an app session can no longer be used; AppSessionEnded tells which.
var (
	errSessionUnknown = domain.Errorf(domain.Unauthenticated, "no session: signed out, or never signed in")
	errSessionIdle    = domain.Errorf(domain.Unauthenticated, "the session was not used for too long")
	errSessionExpired = domain.Errorf(domain.Unauthenticated, "the session reached its time limit")
	errSessionRevoked = domain.Errorf(domain.Unauthenticated, "the session's grant was revoked")
)

// AppSessionEnd says why a session cannot be used, for an error from
// RefreshAppSession: "unknown", "idle", "expired", "revoked", or "" for an
// error that is not about the session.
func AppSessionEnd(err error) string {
	switch {
	case errors.Is(err, errSessionUnknown):
		return "unknown"
	case errors.Is(err, errSessionIdle):
		return "idle"
	case errors.Is(err, errSessionExpired):
		return "expired"
	case errors.Is(err, errSessionRevoked):
		return "revoked"
	}
	return ""
}

// StartAppSession redeems the authorization code the app's sign-in brought
// back, as ExchangeOAuthCode does but issuing the refresh token alone (p's
// AccessHash is ignored), and keeps that refresh token's hash in a new
// session named by sessionHash, in one transaction. The session whose hash
// is replaces, if any (this browser's earlier one), ends with its grant
// revoked: a browser holds one session.
func (s *Store) StartAppSession(ctx context.Context, x CodeExchange, p TokenPair, sessionHash, replaces []byte) (AppSession, error) {
	p.AccessHash = nil
	var out AppSession
	var replay bool
	err := s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		out = AppSession{}
		if len(replaces) > 0 {
			if err := s.endAppSession(ctx, tx, replaces); err != nil {
				return err
			}
		}
		issued, r, err := s.exchangeCode(ctx, tx, x, p)
		if replay = r; err != nil || replay {
			return err
		}
		err = tx.QueryRow(ctx, `INSERT INTO app_sessions (hash, grant_id, refresh_hash, created_at, used_at) VALUES (?, ?, ?, ?, ?) RETURNING id`,
			sessionHash, issued.Grant.ID, p.RefreshHash, tx.Now(), tx.Now()).Scan(&out.ID)
		if err != nil {
			return fmt.Errorf("store: start app session: %w", err)
		}
		out.GrantID, out.AccountID, out.UserID = issued.Grant.ID, issued.Grant.AccountID, issued.Grant.UserID
		out.CreatedAt, out.UsedAt = fromMicros(tx.Now()), fromMicros(tx.Now())
		return nil
	})
	if err == nil && replay {
		return AppSession{}, errCodeReplay
	}
	return out, err
}

// RefreshAppSession issues a new access token through the session named by
// sessionHash: it rotates the session's refresh token (p's refresh hash
// replaces it) and marks the session used, in one transaction, the session's
// row locked so that two tabs asking at once rotate one after the other
// (never presenting one refresh token twice, which would revoke the grant).
// A session past a limit is deleted and its grant revoked; an error for a
// session that cannot be used is one AppSessionEnd names.
func (s *Store) RefreshAppSession(ctx context.Context, sessionHash []byte, limits AppSessionLimits, p TokenPair) (AppSession, IssuedTokens, error) {
	var (
		sess   AppSession
		issued IssuedTokens
		ended  error
	)
	err := s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		sess, issued, ended = AppSession{}, IssuedTokens{}, nil
		// Lock order is grant, then its session (as for codes and tokens):
		// a revocation that locked the grant first finishes first.
		var grantID int64
		err := tx.QueryRow(ctx, `SELECT grant_id FROM app_sessions WHERE hash = ?`, sessionHash).Scan(&grantID)
		if errors.Is(err, sql.ErrNoRows) {
			ended = errSessionUnknown
			return nil
		}
		if err != nil {
			return fmt.Errorf("store: app session: %w", err)
		}
		if _, err := s.lockGrant(ctx, tx, grantID); err != nil {
			return err
		}
		var refreshHash []byte
		var created, used int64
		err = tx.QueryRow(ctx, `SELECT id, grant_id, refresh_hash, created_at, used_at FROM app_sessions WHERE hash = ?`+s.db.ForUpdate(), sessionHash).
			Scan(&sess.ID, &sess.GrantID, &refreshHash, &created, &used)
		if errors.Is(err, sql.ErrNoRows) {
			ended = errSessionUnknown // ended meanwhile
			return nil
		}
		if err != nil {
			return fmt.Errorf("store: app session: %w", err)
		}
		switch now := tx.Now(); {
		case created+limits.Lifetime.Microseconds() <= now:
			ended = errSessionExpired
		case used+limits.Idle.Microseconds() <= now:
			ended = errSessionIdle
		}
		if ended != nil {
			return s.endAppSession(ctx, tx, sessionHash)
		}
		var replay bool
		issued, replay, err = s.rotateRefresh(ctx, tx, RefreshExchange{RefreshHash: refreshHash, ClientID: AppClientID}, p)
		if replay || domain.ErrorCode(err) == domain.NotFound {
			// Revoked (sign-out elsewhere, offboarding, a replay) or expired:
			// the session goes with it, in this transaction.
			ended = errSessionRevoked
			return s.endAppSession(ctx, tx, sessionHash)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE app_sessions SET refresh_hash = ?, used_at = ? WHERE id = ?`, p.RefreshHash, tx.Now(), sess.ID); err != nil {
			return fmt.Errorf("store: use app session: %w", err)
		}
		// The spent token never left the server, so it need not wait out its
		// lifetime for a replay: expired now, pruning deletes it in a day
		// (a session rotates at every access token, tens of times a day).
		if _, err := tx.Exec(ctx, `UPDATE oauth_tokens SET expires_at = ? WHERE hash = ?`, tx.Now(), refreshHash); err != nil {
			return fmt.Errorf("store: use app session: %w", err)
		}
		sess.AccountID, sess.UserID = issued.Grant.AccountID, issued.Grant.UserID
		sess.CreatedAt, sess.UsedAt = fromMicros(created), fromMicros(tx.Now())
		return nil
	})
	if err == nil && ended != nil {
		return AppSession{}, IssuedTokens{}, ended
	}
	return sess, issued, err
}

// EndAppSession ends the session named by sessionHash: its grant is revoked
// with every token of it (so the access tokens other tabs hold stop working
// too) and the session is deleted. An unknown session is not an error.
func (s *Store) EndAppSession(ctx context.Context, sessionHash []byte) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		return s.endAppSession(ctx, tx, sessionHash)
	})
}

func (s *Store) endAppSession(ctx context.Context, tx *Tx, sessionHash []byte) error {
	var grantID int64
	err := tx.QueryRow(ctx, `SELECT grant_id FROM app_sessions WHERE hash = ?`, sessionHash).Scan(&grantID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: end app session: %w", err)
	}
	if _, err := s.lockGrant(ctx, tx, grantID); err != nil {
		return err
	}
	if err := revokeGrant(ctx, tx, grantID); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM app_sessions WHERE hash = ?`, sessionHash); err != nil {
		return fmt.Errorf("store: end app session: %w", err)
	}
	return nil
}

// PruneAppSessions deletes the sessions past a limit, revoking their grants,
// and the sessions whose grant was revoked otherwise. It returns how many
// it deleted.
func (s *Store) PruneAppSessions(ctx context.Context, limits AppSessionLimits) (int64, error) {
	var n int64
	err := s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		n = 0
		now := tx.Now()
		const stale = `FROM app_sessions WHERE used_at <= ? OR created_at <= ?`
		idle, old := now-limits.Idle.Microseconds(), now-limits.Lifetime.Microseconds()
		if _, err := tx.Exec(ctx, `UPDATE oauth_grants SET revoked_at = ? WHERE revoked_at IS NULL AND id IN (SELECT grant_id `+stale+`)`, now, idle, old); err != nil {
			return fmt.Errorf("store: prune app sessions: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE oauth_tokens SET revoked_at = ? WHERE revoked_at IS NULL AND grant_id IN (SELECT grant_id `+stale+`)`, now, idle, old); err != nil {
			return fmt.Errorf("store: prune app sessions: %w", err)
		}
		res, err := tx.Exec(ctx, `DELETE `+stale+` OR grant_id IN (SELECT id FROM oauth_grants WHERE revoked_at IS NOT NULL)`, idle, old)
		if err != nil {
			return fmt.Errorf("store: prune app sessions: %w", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}
