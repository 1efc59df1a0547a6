package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// KeyPrefix starts every API key, so that keys are recognizable in leak scanners
// and told apart from OAuth access tokens.
const KeyPrefix = "sbk_"

// NewAPIKey makes a key for account with 256 random bits, stores only its hash,
// and returns the secret, which is shown once and never again.
func NewAPIKey(ctx context.Context, st *store.Store, accountID int64, name string, scopes []Scope) (string, domain.APIKey, error) {
	if strings.TrimSpace(name) == "" {
		return "", domain.APIKey{}, domain.Errorf(domain.Invalid, "key name is required")
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", domain.APIKey{}, fmt.Errorf("auth: random: %w", err)
	}
	secret := KeyPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	k := domain.APIKey{
		AccountID: accountID,
		Name:      name,
		Prefix:    secret[:len(KeyPrefix)+6],
		Hash:      HashSecret(secret),
		Scopes:    Strings(scopes),
	}
	if err := st.CreateAPIKey(ctx, &k); err != nil {
		return "", domain.APIKey{}, err
	}
	return secret, k, nil
}

// HashSecret is how key and token secrets are stored: SHA-256, which is enough
// for 256-bit random secrets (no dictionary to guess from) and fast to look up.
func HashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}
