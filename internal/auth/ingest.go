package auth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"strings"

	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// IngestTokenPrefix starts every ingest token: the credential a phone system
// pushes calls with. It is not a public API credential, and public API
// credentials are not ingest tokens.
const IngestTokenPrefix = "sbit_"

// NewIngestToken creates an ingest token for accountID and returns its
// secret, which is shown once: only its hash is stored.
func NewIngestToken(ctx context.Context, st *store.Store, accountID int64, name string) (string, store.IngestToken, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", store.IngestToken{}, err
	}
	secret := IngestTokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	t, err := st.CreateIngestToken(ctx, accountID, name, secret[:len(IngestTokenPrefix)+6], HashSecret(secret))
	return secret, t, err
}

// errIngestOnly is a new value each time, as errInvalid is.
func errIngestOnly() error {
	return domain.Errorf(domain.Unauthenticated, "an ingest token is not a public API credential")
}

// IngestAccount returns the account a bearer ingest token belongs to, or an
// unauthenticated error: for an unknown or revoked token, and for an API key
// or access token, which are refused here.
func (a *Authenticator) IngestAccount(ctx context.Context, bearer string) (int64, error) {
	if !strings.HasPrefix(bearer, IngestTokenPrefix) {
		if strings.HasPrefix(bearer, KeyPrefix) || strings.HasPrefix(bearer, AccessTokenPrefix) {
			return 0, domain.Errorf(domain.Unauthenticated, "a public API credential is not accepted for ingest; use an ingest token")
		}
		return 0, domain.Errorf(domain.Unauthenticated, "the ingest token is invalid or revoked")
	}
	account, err := a.Store.IngestTokenAccount(ctx, HashSecret(bearer))
	if domain.IsNotFound(err) {
		return 0, domain.Errorf(domain.Unauthenticated, "the ingest token is invalid or revoked")
	}
	return account, err
}
