package auth

import (
	"context"
	"crypto/subtle"
	"fmt"
	"strings"

	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// AccessTokenPrefix starts every OAuth access token.
const AccessTokenPrefix = "sbat_"

// Authenticator resolves bearer credentials to principals.
type Authenticator struct {
	Store *store.Store
}

// errInvalid answers an unknown, revoked or expired credential. A new value
// each time: callers may add to the error they get (the HTTP layer names the
// endpoint's scope), and a shared value would carry one request's additions
// into another's.
func errInvalid() error {
	return domain.Errorf(domain.Unauthenticated, "the access token is invalid, expired or revoked")
}

// Authenticate returns the principal for a bearer credential, or an
// unauthenticated error for a missing, unknown, revoked or expired one.
// API keys and OAuth access tokens produce the same Principal; a token's
// carries the person it acts for and their role's permissions.
func (a *Authenticator) Authenticate(ctx context.Context, bearer string) (Principal, error) {
	switch {
	case strings.HasPrefix(bearer, KeyPrefix):
		return a.apiKey(ctx, bearer)
	case strings.HasPrefix(bearer, AccessTokenPrefix):
		return a.accessToken(ctx, bearer)
	case strings.HasPrefix(bearer, IngestTokenPrefix):
		return Principal{}, errIngestOnly()
	}
	return Principal{}, errInvalid()
}

func (a *Authenticator) apiKey(ctx context.Context, secret string) (Principal, error) {
	hash := HashSecret(secret)
	k, err := a.Store.APIKeyByHash(ctx, hash)
	if domain.IsNotFound(err) {
		return Principal{}, errInvalid()
	}
	if err != nil {
		return Principal{}, err
	}
	// The lookup went through an index on the hash; comparing again in
	// constant time keeps the decision itself free of timing differences.
	if subtle.ConstantTimeCompare(k.Hash, hash) != 1 || k.RevokedAt != nil {
		return Principal{}, errInvalid()
	}
	return Principal{AccountID: k.AccountID, Scopes: toScopes(k.Scopes), Credential: fmt.Sprintf("key:%d", k.ID)}, nil
}

func (a *Authenticator) accessToken(ctx context.Context, secret string) (Principal, error) {
	// The store answers not_found for an unknown, expired or revoked token.
	t, err := a.Store.AccessTokenByHash(ctx, HashSecret(secret))
	if domain.IsNotFound(err) {
		return Principal{}, errInvalid()
	}
	if err != nil {
		return Principal{}, err
	}
	// The person's role is read on every request, so a role change applies
	// at once, without re-authorizing.
	u, err := a.Store.User(ctx, t.AccountID, t.UserID)
	if domain.IsNotFound(err) || err == nil && u.Disabled {
		// Disabling revokes the person's tokens; this holds even so.
		return Principal{}, errInvalid()
	}
	if err != nil {
		return Principal{}, err
	}
	var perms domain.Permissions
	if u.RoleID != 0 {
		r, err := a.Store.Role(ctx, u.AccountID, u.RoleID)
		if err != nil && !domain.IsNotFound(err) {
			return Principal{}, err
		}
		perms = r.Permissions
	}
	return Principal{AccountID: t.AccountID, UserID: u.ID, Scopes: toScopes(t.Scopes), Permissions: perms,
		Credential: fmt.Sprintf("grant:%d", t.GrantID)}, nil
}

func toScopes(ss []string) []Scope {
	out := make([]Scope, len(ss))
	for i, s := range ss {
		out[i] = Scope(s)
	}
	return out
}
