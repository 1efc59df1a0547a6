package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
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
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO oauth_allowed_hosts (host, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING`, h, tx.Now()); err != nil {
			return fmt.Errorf("store: allow host: %w", err)
		}
		return nil
	})
}

// AllowedHosts lists the allowed redirect hosts in order.
func (s *Store) AllowedHosts(ctx context.Context) ([]string, error) {
	rows, err := s.db.Query(ctx, `SELECT host FROM oauth_allowed_hosts ORDER BY host`)
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
	if err := s.db.QueryRow(ctx, `SELECT COUNT(*) FROM oauth_allowed_hosts WHERE host = ?`, h).Scan(&n); err != nil {
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
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `DELETE FROM oauth_allowed_hosts WHERE host = ?`, h)
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
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		id, err := tx.Insert(ctx, `INSERT INTO oauth_clients (client_id, name, redirect_uris, created_at) VALUES (?, ?, ?, ?)`,
			c.ClientID, c.Name, string(uris), tx.Now())
		if sqldb.IsUniqueViolation(err) {
			return domain.Errorf(domain.Conflict, "client %q already exists", c.ClientID)
		}
		if err != nil {
			return fmt.Errorf("store: create oauth client: %w", err)
		}
		c.ID, c.CreatedAt = id, fromMicros(tx.Now())
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

// AppClientID is the client id of the Switchboard app, the first-party
// public client every server registers for itself (EnsureOAuthClient). It
// cannot collide with a dynamically registered id (those are random), and
// the pruner keeps it.
const AppClientID = "switchboard-app"

// EnsureOAuthClient registers c, or brings the registered client of the
// same id up to date (name, redirect URIs): the first-party client is
// declared by configuration at every start, on every node.
func (s *Store) EnsureOAuthClient(ctx context.Context, c *OAuthClient) error {
	if c.ClientID == "" || c.Name == "" || len(c.RedirectURIs) == 0 {
		return domain.Errorf(domain.Invalid, "client id, name and redirect URIs are required")
	}
	uris, err := json.Marshal(c.RedirectURIs)
	if err != nil {
		return err
	}
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO oauth_clients (client_id, name, redirect_uris, created_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (client_id) DO UPDATE SET name = excluded.name, redirect_uris = excluded.redirect_uris`,
			c.ClientID, c.Name, string(uris), tx.Now()); err != nil {
			return fmt.Errorf("store: ensure oauth client: %w", err)
		}
		got, err := scanOAuthClient(tx.QueryRow(ctx, `SELECT `+oauthClientColumns+` FROM oauth_clients WHERE client_id = ?`, c.ClientID))
		if err != nil {
			return fmt.Errorf("store: ensure oauth client: %w", err)
		}
		*c = got
		return nil
	})
}

// OAuthClient returns the client registered as clientID.
func (s *Store) OAuthClient(ctx context.Context, clientID string) (OAuthClient, error) {
	c, err := scanOAuthClient(s.db.QueryRow(ctx, `SELECT `+oauthClientColumns+` FROM oauth_clients WHERE client_id = ?`, clientID))
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
	err := s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `DELETE FROM oauth_clients WHERE created_at < ? AND client_id <> ?
			AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = oauth_clients.client_id)`,
			tx.Now()-OAuthUnusedClientTTL.Microseconds(), AppClientID)
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
	rows, err := s.db.Query(ctx, `SELECT `+oauthClientColumns+` FROM oauth_clients ORDER BY id`)
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
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		exp := tx.Now() + OAuthRequestTTL.Microseconds()
		if !r.ExpiresAt.IsZero() {
			exp = min(exp, micros(r.ExpiresAt))
		}
		if exp <= tx.Now() {
			return domain.Errorf(domain.NotFound, "authorization request expired")
		}
		_, err := tx.Exec(ctx, `INSERT INTO oauth_requests (hash, client_id, redirect_uri, scopes, state, code_challenge, csrf_hash, user_id, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.Hash, r.ClientID, r.RedirectURI, strings.Join(r.Scopes, " "), r.State, r.CodeChallenge, r.CSRFHash, user, tx.Now(), exp)
		if err != nil {
			return fmt.Errorf("store: create oauth request: %w", err)
		}
		r.CreatedAt, r.ExpiresAt = fromMicros(tx.Now()), fromMicros(exp)
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
	r, err := scanOAuthRequest(s.db.QueryRow(ctx, `SELECT `+oauthRequestColumns+` FROM oauth_requests WHERE hash = ? AND expires_at > ?`, hash, micros(s.db.Now())))
	if err != nil {
		return r, fmt.Errorf("store: oauth request: %w", notFound(err, "authorization request"))
	}
	return r, nil
}

// takeOAuthRequest deletes and returns the unexpired, signed-in request: a
// request is decided once.
func (s *Store) takeOAuthRequest(ctx context.Context, tx *Tx, hash []byte) (OAuthRequest, error) {
	r, err := scanOAuthRequest(tx.QueryRow(ctx, `SELECT `+oauthRequestColumns+` FROM oauth_requests WHERE hash = ?`+s.db.ForUpdate(), hash))
	if err != nil {
		return r, fmt.Errorf("store: oauth request: %w", notFound(err, "authorization request"))
	}
	if micros(r.ExpiresAt) <= tx.Now() {
		return r, domain.Errorf(domain.NotFound, "authorization request expired")
	}
	if r.UserID == 0 {
		return r, domain.Errorf(domain.PermissionDenied, "nobody has signed in for this authorization request")
	}
	if _, err := tx.Exec(ctx, `DELETE FROM oauth_requests WHERE hash = ?`, hash); err != nil {
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
	err := s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		var err error
		if r, err = s.takeOAuthRequest(ctx, tx, hash); err != nil {
			return err
		}
		var accountID int64
		// A user disabled or deleted since signing in gets no grant.
		if err := tx.QueryRow(ctx, `SELECT account_id FROM users WHERE id = ? AND disabled_at IS NULL AND deleted_at IS NULL`, r.UserID).Scan(&accountID); err != nil {
			return fmt.Errorf("store: grant user: %w", notFound(err, "user"))
		}
		id, err := tx.Insert(ctx, `INSERT INTO oauth_grants (account_id, user_id, client_id, scopes, created_at) VALUES (?, ?, ?, ?, ?)`,
			accountID, r.UserID, r.ClientID, strings.Join(r.Scopes, " "), tx.Now())
		if err != nil {
			return fmt.Errorf("store: create grant: %w", err)
		}
		g = OAuthGrant{ID: id, AccountID: accountID, UserID: r.UserID, ClientID: r.ClientID, Scopes: r.Scopes, CreatedAt: fromMicros(tx.Now())}
		if _, err := tx.Exec(ctx, `INSERT INTO oauth_codes (hash, grant_id, redirect_uri, code_challenge, expires_at) VALUES (?, ?, ?, ?, ?)`,
			codeHash, id, r.RedirectURI, r.CodeChallenge, tx.Now()+OAuthCodeTTL.Microseconds()); err != nil {
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
	err := s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		var err error
		r, err = s.takeOAuthRequest(ctx, tx, hash)
		return err
	})
	return r, err
}
