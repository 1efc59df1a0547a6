package store

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"switchboard/internal/domain"
)

// The lifetimes the OAuth tables enforce. Access and refresh token lifetimes
// are the caller's (see TokenPair).
const (
	// OAuthRequestTTL bounds how long a person has to sign in and consent.
	OAuthRequestTTL = 10 * time.Minute
	// OAuthCodeTTL bounds how long an authorization code can be exchanged.
	OAuthCodeTTL = 60 * time.Second
	// OAuthUnusedClientTTL is how long a registered client that has never
	// obtained a grant is kept (PruneUnusedOAuthClients). Registration is
	// open to anyone, so what nobody ever authorized cannot be kept forever;
	// a client that registers and then waits longer than this before its
	// first authorization registers again.
	OAuthUnusedClientTTL = 24 * time.Hour
	// oauthKeep is how long expired codes and tokens are kept by PruneOAuth,
	// so that a late replay is still recognized as one.
	oauthKeep = 24 * time.Hour
)

// OAuthClient is a public client from dynamic registration.
type OAuthClient struct {
	ID           int64
	ClientID     string
	Name         string
	RedirectURIs []string
	CreatedAt    time.Time
}

// OAuthRequest is an authorization in progress: the client's parameters,
// checked already, while the person signs in and decides.
type OAuthRequest struct {
	Hash          []byte // SHA-256 of the request id
	ClientID      string
	RedirectURI   string
	Scopes        []string
	State         string
	CodeChallenge string // S256
	CSRFHash      []byte // SHA-256 of the CSRF token
	UserID        int64  // 0 until the person has signed in
	CreatedAt     time.Time
	ExpiresAt     time.Time
}

// OAuthGrant is one approval of a client by a person. Every code and token
// belongs to one; revoking it revokes all of them.
type OAuthGrant struct {
	ID        int64
	AccountID int64
	UserID    int64
	ClientID  string
	Scopes    []string
	CreatedAt time.Time
	RevokedAt *time.Time
}

// AccessToken is what a valid OAuth access token authenticates.
type AccessToken struct {
	GrantID   int64
	AccountID int64
	UserID    int64
	Scopes    []string
	ExpiresAt time.Time
}

// TokenPair names a new access token and refresh token by their hashes, with
// their lifetimes from the moment of issue.
type TokenPair struct {
	AccessHash  []byte
	RefreshHash []byte
	AccessTTL   time.Duration
	RefreshTTL  time.Duration
}

// IssuedTokens reports what an exchange or a refresh issued.
type IssuedTokens struct {
	Grant OAuthGrant
	// Scopes of the new access token: the grant's, or fewer after a
	// narrowing refresh. The new refresh token keeps the old one's scopes.
	Scopes           []string
	AccessExpiresAt  time.Time
	RefreshExpiresAt time.Time
}

// The errors of a code or refresh token presented a second time. The write
// that finds one commits the grant's revocation and only then reports it, so
// they are never returned from inside a write function (that would roll the
// revocation back). Both are conflict errors to the rest of the system.
var (
	errCodeReplay    = &domain.Error{Code: domain.Conflict, Message: "the authorization code was already used; the grant is revoked"}
	errRefreshReplay = &domain.Error{Code: domain.Conflict, Message: "the refresh token was already used; the grant is revoked"}
)

// IsOAuthReplay reports whether err is a detected replay of an authorization
// code or a rotated refresh token (whose grant has just been revoked).
func IsOAuthReplay(err error) bool {
	return errors.Is(err, errCodeReplay) || errors.Is(err, errRefreshReplay)
}

// --- allowed redirect hosts -------------------------------------------------

// normalizeHost lower-cases host and refuses anything that is not a bare host name.
func normalizeHost(host string) (string, error) {
	h := strings.ToLower(strings.TrimSpace(host))
	if h == "" || strings.ContainsAny(h, "/:@?#[] \t\\") {
		return "", domain.Errorf(domain.Invalid, "%q is not a host name (give the bare host, without scheme, port or path)", host)
	}
	return h, nil
}

// AllowHost lets registered redirect URIs point at host (exact host match,
// case-insensitive). Allowing a host twice is not an error.
func (s *Store) AllowHost(ctx context.Context, host string) error {
	h, err := normalizeHost(host)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *Tx) error {
		if _, err := tx.exec(ctx, `INSERT INTO oauth_allowed_hosts (host, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, h, tx.now); err != nil {
			return fmt.Errorf("store: allow host: %w", err)
		}
		return nil
	})
}

// AllowedHosts lists the allowed redirect hosts in order.
func (s *Store) AllowedHosts(ctx context.Context) ([]string, error) {
	rows, err := s.query(ctx, `SELECT host FROM oauth_allowed_hosts ORDER BY host`)
	if err != nil {
		return nil, fmt.Errorf("store: allowed hosts: %w", err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			return nil, fmt.Errorf("store: allowed hosts: %w", err)
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// HostAllowed reports whether host is on the allow-list (case-insensitive).
func (s *Store) HostAllowed(ctx context.Context, host string) (bool, error) {
	h, err := normalizeHost(host)
	if err != nil {
		return false, nil
	}
	var n int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM oauth_allowed_hosts WHERE host = ?`, h).Scan(&n); err != nil {
		return false, fmt.Errorf("store: host allowed: %w", err)
	}
	return n > 0, nil
}

// DisallowHost removes host from the allow-list. Clients registered with it
// keep their rows, but new authorizations to it are refused.
func (s *Store) DisallowHost(ctx context.Context, host string) error {
	h, err := normalizeHost(host)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *Tx) error {
		res, err := tx.exec(ctx, `DELETE FROM oauth_allowed_hosts WHERE host = ?`, h)
		if err != nil {
			return fmt.Errorf("store: disallow host: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.Errorf(domain.NotFound, "host %q is not allowed", h)
		}
		return nil
	})
}

// --- clients ----------------------------------------------------------------

// CreateOAuthClient registers c; it sets c.ID and c.CreatedAt. c.ClientID must
// be new (conflict otherwise).
func (s *Store) CreateOAuthClient(ctx context.Context, c *OAuthClient) error {
	if c.ClientID == "" || c.Name == "" || len(c.RedirectURIs) == 0 {
		return domain.Errorf(domain.Invalid, "client id, name and redirect URIs are required")
	}
	uris, err := json.Marshal(c.RedirectURIs)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *Tx) error {
		id, err := tx.insert(ctx, `INSERT INTO oauth_clients (client_id, name, redirect_uris, created_at) VALUES (?, ?, ?, ?)`,
			c.ClientID, c.Name, string(uris), tx.now)
		if isUniqueViolation(err) {
			return domain.Errorf(domain.Conflict, "client %q already exists", c.ClientID)
		}
		if err != nil {
			return fmt.Errorf("store: create oauth client: %w", err)
		}
		c.ID, c.CreatedAt = id, fromMicros(tx.now)
		return nil
	})
}

const oauthClientColumns = `id, client_id, name, redirect_uris, created_at`

func scanOAuthClient(sc interface{ Scan(...any) error }) (OAuthClient, error) {
	var c OAuthClient
	var uris string
	var created int64
	if err := sc.Scan(&c.ID, &c.ClientID, &c.Name, &uris, &created); err != nil {
		return c, err
	}
	if err := json.Unmarshal([]byte(uris), &c.RedirectURIs); err != nil {
		return c, fmt.Errorf("decode client %d redirect URIs: %w", c.ID, err)
	}
	c.CreatedAt = fromMicros(created)
	return c, nil
}

// OAuthClient returns the client registered as clientID.
func (s *Store) OAuthClient(ctx context.Context, clientID string) (OAuthClient, error) {
	c, err := scanOAuthClient(s.queryRow(ctx, `SELECT `+oauthClientColumns+` FROM oauth_clients WHERE client_id = ?`, clientID))
	if err != nil {
		return c, fmt.Errorf("store: oauth client: %w", notFound(err, "oauth client"))
	}
	return c, nil
}

// PruneUnusedOAuthClients deletes the clients registered more than
// OAuthUnusedClientTTL ago that have never obtained a grant (a grant, even a
// revoked one, keeps its client), with any authorization in progress for
// them, and reports how many it deleted.
func (s *Store) PruneUnusedOAuthClients(ctx context.Context) (int64, error) {
	var n int64
	err := s.write(ctx, func(tx *Tx) error {
		res, err := tx.exec(ctx, `DELETE FROM oauth_clients WHERE created_at < ?
			AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = oauth_clients.client_id)`,
			tx.now-OAuthUnusedClientTTL.Microseconds())
		if err != nil {
			return fmt.Errorf("store: prune unused oauth clients: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return n, err
}

// OAuthClients lists every registered client, oldest first.
func (s *Store) OAuthClients(ctx context.Context) ([]OAuthClient, error) {
	rows, err := s.query(ctx, `SELECT `+oauthClientColumns+` FROM oauth_clients ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: oauth clients: %w", err)
	}
	defer rows.Close()
	out := []OAuthClient{}
	for rows.Next() {
		c, err := scanOAuthClient(rows)
		if err != nil {
			return nil, fmt.Errorf("store: oauth clients: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// --- authorization requests ---------------------------------------------------

// CreateOAuthRequest stores r and sets r.CreatedAt and r.ExpiresAt. The
// request expires at r.ExpiresAt when that is set (the server carried the
// request until sign-in and its clock started then), never later than
// OAuthRequestTTL from now; one already expired is not_found. r.UserID is who
// signed in, or 0 for nobody yet.
func (s *Store) CreateOAuthRequest(ctx context.Context, r *OAuthRequest) error {
	if len(r.Hash) == 0 || len(r.CSRFHash) == 0 {
		return domain.Errorf(domain.Invalid, "request and CSRF hashes are required")
	}
	var user sql.NullInt64
	if r.UserID != 0 {
		user = sql.NullInt64{Int64: r.UserID, Valid: true}
	}
	return s.write(ctx, func(tx *Tx) error {
		exp := tx.now + OAuthRequestTTL.Microseconds()
		if !r.ExpiresAt.IsZero() {
			exp = min(exp, micros(r.ExpiresAt))
		}
		if exp <= tx.now {
			return domain.Errorf(domain.NotFound, "authorization request expired")
		}
		_, err := tx.exec(ctx, `INSERT INTO oauth_requests (hash, client_id, redirect_uri, scopes, state, code_challenge, csrf_hash, user_id, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.Hash, r.ClientID, r.RedirectURI, strings.Join(r.Scopes, " "), r.State, r.CodeChallenge, r.CSRFHash, user, tx.now, exp)
		if err != nil {
			return fmt.Errorf("store: create oauth request: %w", err)
		}
		r.CreatedAt, r.ExpiresAt = fromMicros(tx.now), fromMicros(exp)
		return nil
	})
}

const oauthRequestColumns = `hash, client_id, redirect_uri, scopes, state, code_challenge, csrf_hash, user_id, created_at, expires_at`

func scanOAuthRequest(sc interface{ Scan(...any) error }) (OAuthRequest, error) {
	var r OAuthRequest
	var scopes string
	var user sql.NullInt64
	var created, expires int64
	if err := sc.Scan(&r.Hash, &r.ClientID, &r.RedirectURI, &scopes, &r.State, &r.CodeChallenge, &r.CSRFHash, &user, &created, &expires); err != nil {
		return r, err
	}
	r.Scopes = strings.Fields(scopes)
	r.UserID = user.Int64
	r.CreatedAt, r.ExpiresAt = fromMicros(created), fromMicros(expires)
	return r, nil
}

// OAuthRequest returns the unexpired request whose id hashes to hash.
func (s *Store) OAuthRequest(ctx context.Context, hash []byte) (OAuthRequest, error) {
	r, err := scanOAuthRequest(s.queryRow(ctx, `SELECT `+oauthRequestColumns+` FROM oauth_requests WHERE hash = ? AND expires_at > ?`, hash, micros(s.now())))
	if err != nil {
		return r, fmt.Errorf("store: oauth request: %w", notFound(err, "authorization request"))
	}
	return r, nil
}

// takeOAuthRequest deletes and returns the unexpired, signed-in request: a
// request is decided once.
func (s *Store) takeOAuthRequest(ctx context.Context, tx *Tx, hash []byte) (OAuthRequest, error) {
	r, err := scanOAuthRequest(tx.queryRow(ctx, `SELECT `+oauthRequestColumns+` FROM oauth_requests WHERE hash = ?`+s.forUpdate(), hash))
	if err != nil {
		return r, fmt.Errorf("store: oauth request: %w", notFound(err, "authorization request"))
	}
	if micros(r.ExpiresAt) <= tx.now {
		return r, domain.Errorf(domain.NotFound, "authorization request expired")
	}
	if r.UserID == 0 {
		return r, domain.Errorf(domain.PermissionDenied, "nobody has signed in for this authorization request")
	}
	if _, err := tx.exec(ctx, `DELETE FROM oauth_requests WHERE hash = ?`, hash); err != nil {
		return r, fmt.Errorf("store: delete oauth request: %w", err)
	}
	return r, nil
}

// ApproveOAuthRequest consumes the signed-in request and, in the same
// transaction, creates the grant (for the signed-in user and their account)
// and an authorization code stored as codeHash, valid OAuthCodeTTL. It
// returns the consumed request (for its redirect URI and state).
func (s *Store) ApproveOAuthRequest(ctx context.Context, hash, codeHash []byte) (OAuthRequest, OAuthGrant, error) {
	var r OAuthRequest
	var g OAuthGrant
	err := s.write(ctx, func(tx *Tx) error {
		var err error
		if r, err = s.takeOAuthRequest(ctx, tx, hash); err != nil {
			return err
		}
		var accountID int64
		if err := tx.queryRow(ctx, `SELECT account_id FROM users WHERE id = ?`, r.UserID).Scan(&accountID); err != nil {
			return fmt.Errorf("store: grant user: %w", notFound(err, "user"))
		}
		id, err := tx.insert(ctx, `INSERT INTO oauth_grants (account_id, user_id, client_id, scopes, created_at) VALUES (?, ?, ?, ?, ?)`,
			accountID, r.UserID, r.ClientID, strings.Join(r.Scopes, " "), tx.now)
		if err != nil {
			return fmt.Errorf("store: create grant: %w", err)
		}
		g = OAuthGrant{ID: id, AccountID: accountID, UserID: r.UserID, ClientID: r.ClientID, Scopes: r.Scopes, CreatedAt: fromMicros(tx.now)}
		if _, err := tx.exec(ctx, `INSERT INTO oauth_codes (hash, grant_id, redirect_uri, code_challenge, expires_at) VALUES (?, ?, ?, ?, ?)`,
			codeHash, id, r.RedirectURI, r.CodeChallenge, tx.now+OAuthCodeTTL.Microseconds()); err != nil {
			return fmt.Errorf("store: create code: %w", err)
		}
		return nil
	})
	return r, g, err
}

// DenyOAuthRequest consumes the signed-in request without granting anything
// and returns it (for its redirect URI and state).
func (s *Store) DenyOAuthRequest(ctx context.Context, hash []byte) (OAuthRequest, error) {
	var r OAuthRequest
	err := s.write(ctx, func(tx *Tx) error {
		var err error
		r, err = s.takeOAuthRequest(ctx, tx, hash)
		return err
	})
	return r, err
}

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
	err := s.write(ctx, func(tx *Tx) error {
		// SQLite may run this function twice (see commitBatch): start clean.
		out, replay = IssuedTokens{}, false
		// Lock order is grant, then its codes and tokens, everywhere.
		var grantID int64
		err := tx.queryRow(ctx, `SELECT grant_id FROM oauth_codes WHERE hash = ?`, x.CodeHash).Scan(&grantID)
		if err != nil {
			return fmt.Errorf("store: oauth code: %w", notFound(err, "authorization code"))
		}
		g, err := s.lockGrant(ctx, tx, grantID)
		if err != nil {
			return err
		}
		var (
			expires        int64
			used           sql.NullInt64
			redirect, chal string
		)
		err = tx.queryRow(ctx, `SELECT redirect_uri, code_challenge, expires_at, used_at FROM oauth_codes WHERE hash = ?`+s.forUpdate(), x.CodeHash).
			Scan(&redirect, &chal, &expires, &used)
		if err != nil {
			return fmt.Errorf("store: oauth code: %w", notFound(err, "authorization code"))
		}
		switch {
		case used.Valid:
			replay = true
			return revokeGrant(ctx, tx, grantID)
		case g.ClientID != x.ClientID:
			return domain.Errorf(domain.Invalid, "the authorization code was issued to another client")
		case expires <= tx.now:
			return domain.Errorf(domain.NotFound, "the authorization code has expired")
		case g.RevokedAt != nil:
			return domain.Errorf(domain.NotFound, "the grant has been revoked")
		case redirect != x.RedirectURI:
			return domain.Errorf(domain.Invalid, "redirect_uri does not match the authorization request")
		case subtle.ConstantTimeCompare([]byte(chal), []byte(x.Challenge)) != 1:
			return domain.Errorf(domain.Invalid, "code_verifier does not match the code challenge")
		}
		if _, err := tx.exec(ctx, `UPDATE oauth_codes SET used_at = ? WHERE hash = ?`, tx.now, x.CodeHash); err != nil {
			return fmt.Errorf("store: use code: %w", err)
		}
		out, err = issueTokens(ctx, tx, g, g.Scopes, g.Scopes, p)
		return err
	})
	if err == nil && replay {
		return IssuedTokens{}, errCodeReplay
	}
	return out, err
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
	err := s.write(ctx, func(tx *Tx) error {
		out, replay = IssuedTokens{}, false
		var grantID int64
		err := tx.queryRow(ctx, `SELECT grant_id FROM oauth_tokens WHERE hash = ? AND kind = 'refresh'`, x.RefreshHash).Scan(&grantID)
		if err != nil {
			return fmt.Errorf("store: refresh token: %w", notFound(err, "refresh token"))
		}
		g, err := s.lockGrant(ctx, tx, grantID)
		if err != nil {
			return err
		}
		var (
			expires       int64
			scopes        string
			used, revoked sql.NullInt64
		)
		err = tx.queryRow(ctx, `SELECT scopes, expires_at, used_at, revoked_at FROM oauth_tokens WHERE hash = ?`+s.forUpdate(), x.RefreshHash).
			Scan(&scopes, &expires, &used, &revoked)
		if err != nil {
			return fmt.Errorf("store: refresh token: %w", notFound(err, "refresh token"))
		}
		tokenScopes := strings.Fields(scopes)
		switch {
		case used.Valid:
			replay = true
			return revokeGrant(ctx, tx, grantID)
		case g.ClientID != x.ClientID:
			return domain.Errorf(domain.Invalid, "the refresh token was issued to another client")
		case revoked.Valid || g.RevokedAt != nil:
			return domain.Errorf(domain.NotFound, "the refresh token has been revoked")
		case expires <= tx.now:
			return domain.Errorf(domain.NotFound, "the refresh token has expired")
		}
		accessScopes := tokenScopes
		if x.Scopes != nil {
			for _, sc := range x.Scopes {
				if !slices.Contains(tokenScopes, sc) {
					return &domain.Error{Code: domain.InsufficientScope, Message: "scope " + sc + " was not granted", Scope: sc}
				}
			}
			accessScopes = x.Scopes
		}
		if _, err := tx.exec(ctx, `UPDATE oauth_tokens SET used_at = ? WHERE hash = ?`, tx.now, x.RefreshHash); err != nil {
			return fmt.Errorf("store: rotate refresh token: %w", err)
		}
		out, err = issueTokens(ctx, tx, g, accessScopes, tokenScopes, p)
		return err
	})
	if err == nil && replay {
		return IssuedTokens{}, errRefreshReplay
	}
	return out, err
}

// lockGrant reads grant id inside a write, locking its row on PostgreSQL so
// that issuance and revocation of one grant are serialized.
func (s *Store) lockGrant(ctx context.Context, tx *Tx, id int64) (OAuthGrant, error) {
	g, err := scanGrant(tx.queryRow(ctx, `SELECT `+grantColumns+` FROM oauth_grants WHERE id = ?`+s.forUpdate(), id))
	if err != nil {
		return g, fmt.Errorf("store: grant: %w", notFound(err, "grant"))
	}
	return g, nil
}

func issueTokens(ctx context.Context, tx *Tx, g OAuthGrant, accessScopes, refreshScopes []string, p TokenPair) (IssuedTokens, error) {
	if len(p.AccessHash) == 0 || len(p.RefreshHash) == 0 || p.AccessTTL <= 0 || p.RefreshTTL <= 0 {
		return IssuedTokens{}, errors.New("store: issue tokens: hashes and lifetimes are required")
	}
	aExp, rExp := tx.now+p.AccessTTL.Microseconds(), tx.now+p.RefreshTTL.Microseconds()
	const ins = `INSERT INTO oauth_tokens (hash, grant_id, kind, scopes, expires_at, created_at) VALUES (?, ?, ?, ?, ?, ?)`
	if _, err := tx.exec(ctx, ins, p.AccessHash, g.ID, "access", strings.Join(accessScopes, " "), aExp, tx.now); err != nil {
		return IssuedTokens{}, fmt.Errorf("store: issue access token: %w", err)
	}
	if _, err := tx.exec(ctx, ins, p.RefreshHash, g.ID, "refresh", strings.Join(refreshScopes, " "), rExp, tx.now); err != nil {
		return IssuedTokens{}, fmt.Errorf("store: issue refresh token: %w", err)
	}
	return IssuedTokens{Grant: g, Scopes: accessScopes, AccessExpiresAt: fromMicros(aExp), RefreshExpiresAt: fromMicros(rExp)}, nil
}

// revokeGrant revokes the grant and every token of it (an unused code of a
// revoked grant cannot be exchanged either). Times already set are kept.
// The caller holds the grant's row lock.
func revokeGrant(ctx context.Context, tx *Tx, grantID int64) error {
	if _, err := tx.exec(ctx, `UPDATE oauth_grants SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`, tx.now, grantID); err != nil {
		return fmt.Errorf("store: revoke grant: %w", err)
	}
	if _, err := tx.exec(ctx, `UPDATE oauth_tokens SET revoked_at = ? WHERE grant_id = ? AND revoked_at IS NULL`, tx.now, grantID); err != nil {
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
	t, err := cached(ctx, s, "oat:"+string(hash), func() (AccessToken, error) { return s.accessTokenByHash(ctx, hash) })
	if err != nil {
		return AccessToken{}, err
	}
	if !t.ExpiresAt.After(s.now()) {
		return AccessToken{}, domain.Errorf(domain.NotFound, "access token expired")
	}
	return t, nil
}

func (s *Store) accessTokenByHash(ctx context.Context, hash []byte) (AccessToken, error) {
	var t AccessToken
	var scopes string
	var expires int64
	err := s.queryRow(ctx, `SELECT t.grant_id, g.account_id, g.user_id, t.scopes, t.expires_at
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
	return s.write(ctx, func(tx *Tx) error {
		var grantID int64
		var kind, owner string
		err := tx.queryRow(ctx, `SELECT t.grant_id, t.kind, g.client_id FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id WHERE t.hash = ?`, hash).
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
		if _, err := tx.exec(ctx, `UPDATE oauth_tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE hash = ?`, tx.now, hash); err != nil {
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
	rows, err := s.query(ctx, q, args...)
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
	return s.write(ctx, func(tx *Tx) error {
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
	return s.write(ctx, func(tx *Tx) error {
		if _, err := tx.exec(ctx, `DELETE FROM oauth_requests WHERE expires_at <= ?`, tx.now); err != nil {
			return fmt.Errorf("store: prune oauth requests: %w", err)
		}
		old := tx.now - oauthKeep.Microseconds()
		if _, err := tx.exec(ctx, `DELETE FROM oauth_codes WHERE expires_at < ?`, old); err != nil {
			return fmt.Errorf("store: prune oauth codes: %w", err)
		}
		if _, err := tx.exec(ctx, `DELETE FROM oauth_tokens WHERE expires_at < ?`, old); err != nil {
			return fmt.Errorf("store: prune oauth tokens: %w", err)
		}
		return nil
	})
}
