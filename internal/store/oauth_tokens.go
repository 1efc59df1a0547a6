package store

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// --- codes and tokens -------------------------------------------------------

// CodeExchange is an authorization-code token request, checked against the code.
type CodeExchange struct {
	CodeHash    []byte
	ClientID    string
	RedirectURI string
	// Challenge is base64url(SHA-256(code_verifier)), to equal the stored S256 challenge.
	Challenge string
}

// ExchangeOAuthCode redeems an authorization code for tokens in one
// transaction. It fails with not_found for an unknown or expired code and
// invalid_request for one bound to another client, redirect URI or
// challenge (the code stays usable: only its holder with the verifier can
// redeem it). A code presented a second time revokes its grant and every
// token the first exchange issued, and fails with an error IsOAuthReplay
// recognizes.
func (s *Store) ExchangeOAuthCode(ctx context.Context, x CodeExchange, p TokenPair) (IssuedTokens, error) {
	var out IssuedTokens
	var replay bool
	err := s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) (err error) {
		// SQLite may run this function twice (see commitBatch): start clean.
		out, replay, err = s.exchangeCode(ctx, tx, x, p)
		return err
	})
	if err == nil && replay {
		return IssuedTokens{}, errCodeReplay
	}
	return out, err
}

// exchangeCode is ExchangeOAuthCode inside tx. A replayed code revokes the
// grant and reports replay with a nil error, so that the revocation commits.
func (s *Store) exchangeCode(ctx context.Context, tx *Tx, x CodeExchange, p TokenPair) (IssuedTokens, bool, error) {
	// Lock order is grant, then its codes and tokens, everywhere.
	var grantID int64
	err := tx.QueryRow(ctx, `SELECT grant_id FROM oauth_codes WHERE hash = ?`, x.CodeHash).Scan(&grantID)
	if err != nil {
		return IssuedTokens{}, false, fmt.Errorf("store: oauth code: %w", notFound(err, "authorization code"))
	}
	g, err := s.lockGrant(ctx, tx, grantID)
	if err != nil {
		return IssuedTokens{}, false, err
	}
	var (
		expires        int64
		used           sql.NullInt64
		redirect, chal string
	)
	err = tx.QueryRow(ctx, `SELECT redirect_uri, code_challenge, expires_at, used_at FROM oauth_codes WHERE hash = ?`+s.db.ForUpdate(), x.CodeHash).
		Scan(&redirect, &chal, &expires, &used)
	if err != nil {
		return IssuedTokens{}, false, fmt.Errorf("store: oauth code: %w", notFound(err, "authorization code"))
	}
	switch {
	case used.Valid:
		return IssuedTokens{}, true, revokeGrant(ctx, tx, grantID)
	case g.ClientID != x.ClientID:
		return IssuedTokens{}, false, domain.Errorf(domain.Invalid, "the authorization code was issued to another client")
	case expires <= tx.Now():
		return IssuedTokens{}, false, domain.Errorf(domain.NotFound, "the authorization code has expired")
	case g.RevokedAt != nil:
		return IssuedTokens{}, false, domain.Errorf(domain.NotFound, "the grant has been revoked")
	case redirect != x.RedirectURI:
		return IssuedTokens{}, false, domain.Errorf(domain.Invalid, "redirect_uri does not match the authorization request")
	case subtle.ConstantTimeCompare([]byte(chal), []byte(x.Challenge)) != 1:
		return IssuedTokens{}, false, domain.Errorf(domain.Invalid, "code_verifier does not match the code challenge")
	}
	if _, err := tx.Exec(ctx, `UPDATE oauth_codes SET used_at = ? WHERE hash = ?`, tx.Now(), x.CodeHash); err != nil {
		return IssuedTokens{}, false, fmt.Errorf("store: use code: %w", err)
	}
	out, err := issueTokens(ctx, tx, g, g.Scopes, g.Scopes, p)
	return out, false, err
}

// RefreshExchange is a refresh-token request.
type RefreshExchange struct {
	RefreshHash []byte
	ClientID    string
	// Scopes, when not nil, narrows the new access token; each must be in
	// the refresh token's scope.
	Scopes []string
}

// RotateRefreshToken spends a refresh token and issues a new access and
// refresh token for the same grant, in one transaction. The old refresh token
// is marked used; presenting it again revokes the whole grant and fails with
// an error IsOAuthReplay recognizes (so of two concurrent uses exactly one
// succeeds, and the other kills the grant). Unknown, expired or revoked tokens
// are not_found, another client's invalid_request, and asking for a scope
// the token lacks insufficient_scope.
func (s *Store) RotateRefreshToken(ctx context.Context, x RefreshExchange, p TokenPair) (IssuedTokens, error) {
	var out IssuedTokens
	var replay bool
	err := s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) (err error) {
		out, replay, err = s.rotateRefresh(ctx, tx, x, p)
		return err
	})
	if err == nil && replay {
		return IssuedTokens{}, errRefreshReplay
	}
	return out, err
}

// rotateRefresh is RotateRefreshToken inside tx. A replayed token revokes
// the grant and reports replay with a nil error, so that the revocation
// commits.
func (s *Store) rotateRefresh(ctx context.Context, tx *Tx, x RefreshExchange, p TokenPair) (IssuedTokens, bool, error) {
	var grantID int64
	err := tx.QueryRow(ctx, `SELECT grant_id FROM oauth_tokens WHERE hash = ? AND kind = 'refresh'`, x.RefreshHash).Scan(&grantID)
	if err != nil {
		return IssuedTokens{}, false, fmt.Errorf("store: refresh token: %w", notFound(err, "refresh token"))
	}
	g, err := s.lockGrant(ctx, tx, grantID)
	if err != nil {
		return IssuedTokens{}, false, err
	}
	var (
		expires       int64
		scopes        string
		used, revoked sql.NullInt64
	)
	err = tx.QueryRow(ctx, `SELECT scopes, expires_at, used_at, revoked_at FROM oauth_tokens WHERE hash = ?`+s.db.ForUpdate(), x.RefreshHash).
		Scan(&scopes, &expires, &used, &revoked)
	if err != nil {
		return IssuedTokens{}, false, fmt.Errorf("store: refresh token: %w", notFound(err, "refresh token"))
	}
	tokenScopes := strings.Fields(scopes)
	switch {
	case used.Valid:
		return IssuedTokens{}, true, revokeGrant(ctx, tx, grantID)
	case g.ClientID != x.ClientID:
		return IssuedTokens{}, false, domain.Errorf(domain.Invalid, "the refresh token was issued to another client")
	case revoked.Valid || g.RevokedAt != nil:
		return IssuedTokens{}, false, domain.Errorf(domain.NotFound, "the refresh token has been revoked")
	case expires <= tx.Now():
		return IssuedTokens{}, false, domain.Errorf(domain.NotFound, "the refresh token has expired")
	}
	accessScopes := tokenScopes
	if x.Scopes != nil {
		for _, sc := range x.Scopes {
			if !slices.Contains(tokenScopes, sc) {
				return IssuedTokens{}, false, &domain.Error{Code: domain.InsufficientScope, Message: "scope " + sc + " was not granted", Scope: sc}
			}
		}
		accessScopes = x.Scopes
	}
	if _, err := tx.Exec(ctx, `UPDATE oauth_tokens SET used_at = ? WHERE hash = ?`, tx.Now(), x.RefreshHash); err != nil {
		return IssuedTokens{}, false, fmt.Errorf("store: rotate refresh token: %w", err)
	}
	out, err := issueTokens(ctx, tx, g, accessScopes, tokenScopes, p)
	return out, false, err
}

// lockGrant reads grant id inside a write, locking its row on PostgreSQL so
// that issuance and revocation of one grant are serialized.
func (s *Store) lockGrant(ctx context.Context, tx *Tx, id int64) (OAuthGrant, error) {
	g, err := scanGrant(tx.QueryRow(ctx, `SELECT `+grantColumns+` FROM oauth_grants WHERE id = ?`+s.db.ForUpdate(), id))
	if err != nil {
		return g, fmt.Errorf("store: grant: %w", notFound(err, "grant"))
	}
	return g, nil
}

func issueTokens(ctx context.Context, tx *Tx, g OAuthGrant, accessScopes, refreshScopes []string, p TokenPair) (IssuedTokens, error) {
	// No access hash issues the refresh token alone (the app's session,
	// whose first access token is asked for separately).
	if len(p.RefreshHash) == 0 || (len(p.AccessHash) > 0 && p.AccessTTL <= 0) || p.RefreshTTL <= 0 {
		return IssuedTokens{}, errors.New("store: issue tokens: hashes and lifetimes are required")
	}
	aExp, rExp := tx.Now()+p.AccessTTL.Microseconds(), tx.Now()+p.RefreshTTL.Microseconds()
	const ins = `INSERT INTO oauth_tokens (hash, grant_id, kind, scopes, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?)`
	if len(p.AccessHash) > 0 {
		if _, err := tx.Exec(ctx, ins, p.AccessHash, g.ID, "access", strings.Join(accessScopes, " "), aExp, tx.Now()); err != nil {
			return IssuedTokens{}, fmt.Errorf("store: issue access token: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, ins, p.RefreshHash, g.ID, "refresh", strings.Join(refreshScopes, " "), rExp, tx.Now()); err != nil {
		return IssuedTokens{}, fmt.Errorf("store: issue refresh token: %w", err)
	}
	return IssuedTokens{Grant: g, Scopes: accessScopes, AccessExpiresAt: fromMicros(aExp), RefreshExpiresAt: fromMicros(rExp)}, nil
}

// revokeGrant revokes the grant and every token of it (an unused code of a
// revoked grant cannot be exchanged either). Times already set are kept.
// The caller holds the grant's row lock.
func revokeGrant(ctx context.Context, tx *Tx, grantID int64) error {
	if _, err := tx.Exec(ctx, `UPDATE oauth_grants SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`, tx.Now(), grantID); err != nil {
		return fmt.Errorf("store: revoke grant: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE oauth_tokens SET revoked_at = ? WHERE grant_id = ? AND revoked_at IS NULL`, tx.Now(), grantID); err != nil {
		return fmt.Errorf("store: revoke grant tokens: %w", err)
	}
	return nil
}

// AccessTokenByHash returns what the access token hashing to hash
// authenticates: not_found unless it exists, is an access token, has not
// expired and neither it nor its grant is revoked. It is one indexed read and
// never writes.
func (s *Store) AccessTokenByHash(ctx context.Context, hash []byte) (AccessToken, error) {
	// Cached until the database changes (a revocation is a write), so only
	// expiry needs checking against the clock here.
	t, err := sqldb.Cached(ctx, s.db, "oat:"+string(hash), func() (AccessToken, error) { return s.accessTokenByHash(ctx, hash) })
	if err != nil {
		return AccessToken{}, err
	}
	if !t.ExpiresAt.After(s.db.Now()) {
		return AccessToken{}, domain.Errorf(domain.NotFound, "access token expired")
	}
	return t, nil
}

func (s *Store) accessTokenByHash(ctx context.Context, hash []byte) (AccessToken, error) {
	var t AccessToken
	var scopes string
	var expires int64
	err := s.db.QueryRow(ctx, `SELECT t.grant_id, g.account_id, g.user_id, t.scopes, t.expires_at
		FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id
		WHERE t.hash = ? AND t.kind = 'access' AND t.revoked_at IS NULL AND g.revoked_at IS NULL`, hash).
		Scan(&t.GrantID, &t.AccountID, &t.UserID, &scopes, &expires)
	if err != nil {
		return t, fmt.Errorf("store: access token: %w", notFound(err, "access token"))
	}
	t.Scopes, t.ExpiresAt = strings.Fields(scopes), fromMicros(expires)
	return t, nil
}

// RevokeOAuthToken revokes a token by hash (RFC 7009): a refresh token
// revokes its whole grant, an access token only itself. An unknown token, or
// one of another client when clientID is not empty, is silently ignored.
func (s *Store) RevokeOAuthToken(ctx context.Context, hash []byte, clientID string) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		var grantID int64
		var kind, owner string
		err := tx.QueryRow(ctx, `SELECT t.grant_id, t.kind, g.client_id FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id WHERE t.hash = ?`, hash).
			Scan(&grantID, &kind, &owner)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("store: revoke token: %w", err)
		}
		if clientID != "" && clientID != owner {
			return nil
		}
		if kind == "refresh" {
			if _, err := s.lockGrant(ctx, tx, grantID); err != nil {
				return err
			}
			return revokeGrant(ctx, tx, grantID)
		}
		if _, err := tx.Exec(ctx, `UPDATE oauth_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE hash = ?`, tx.Now(), hash); err != nil {
			return fmt.Errorf("store: revoke token: %w", err)
		}
		return nil
	})
}

// --- grants -----------------------------------------------------------------

const grantColumns = `id, account_id, user_id, client_id, scopes, created_at, revoked_at`

func scanGrant(sc interface{ Scan(...any) error }) (OAuthGrant, error) {
	var g OAuthGrant
	var scopes string
	var created int64
	var revoked sql.NullInt64
	if err := sc.Scan(&g.ID, &g.AccountID, &g.UserID, &g.ClientID, &scopes, &created, &revoked); err != nil {
		return g, err
	}
	g.Scopes, g.CreatedAt = strings.Fields(scopes), fromMicros(created)
	if revoked.Valid {
		t := fromMicros(revoked.Int64)
		g.RevokedAt = &t
	}
	return g, nil
}

// OAuthGrants lists the account's grants (only userID's when userID is not
// 0), revoked ones included, oldest first.
func (s *Store) OAuthGrants(ctx context.Context, accountID, userID int64) ([]OAuthGrant, error) {
	q, args := `SELECT `+grantColumns+` FROM oauth_grants WHERE account_id = ? ORDER BY id`, []any{accountID}
	if userID != 0 {
		q, args = `SELECT `+grantColumns+` FROM oauth_grants WHERE account_id = ? AND user_id = ? ORDER BY id`, []any{accountID, userID}
	}
	rows, err := s.db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: oauth grants: %w", err)
	}
	defer rows.Close()
	out := []OAuthGrant{}
	for rows.Next() {
		g, err := scanGrant(rows)
		if err != nil {
			return nil, fmt.Errorf("store: oauth grants: %w", err)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// RevokeOAuthGrant revokes the account's grant and every token of it.
// Revoking twice keeps the first time.
func (s *Store) RevokeOAuthGrant(ctx context.Context, accountID, grantID int64) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		g, err := s.lockGrant(ctx, tx, grantID)
		if err == nil && g.AccountID != accountID {
			err = domain.Errorf(domain.NotFound, "grant not found")
		}
		if err != nil {
			return fmt.Errorf("store: revoke grant %d of account %d: %w", grantID, accountID, err)
		}
		return revokeGrant(ctx, tx, grantID)
	})
}

// PruneOAuth deletes expired authorization requests, and codes and tokens
// that expired more than a day ago (kept that long so that a late replay is
// still recognized and punished). Grants are kept as a record.
func (s *Store) PruneOAuth(ctx context.Context) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM oauth_requests WHERE expires_at <= ?`, tx.Now()); err != nil {
			return fmt.Errorf("store: prune oauth requests: %w", err)
		}
		old := tx.Now() - oauthKeep.Microseconds()
		if _, err := tx.Exec(ctx, `DELETE FROM oauth_codes WHERE expires_at < ?`, old); err != nil {
			return fmt.Errorf("store: prune oauth codes: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM oauth_tokens WHERE expires_at < ?`, old); err != nil {
			return fmt.Errorf("store: prune oauth tokens: %w", err)
		}
		return nil
	})
}
