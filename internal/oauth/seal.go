package oauth

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// An authorization request waiting for the person to sign in is not stored:
// authorize seals it (AES-256-GCM under a key every node shares) into the
// sign-in form, and only a correct password turns it into a row. So the one
// page anyone can open without a credential costs no database write, and
// any node can take the form back, since the key lives in the database.

// sealedPrefix marks a sealed request, told apart from a request id.
const sealedPrefix = "sbpr_"

// sealKeyName names the key in the store's server_keys.
const sealKeyName = "oauth-pending-request-v1"

// sealAD binds a sealed value to its purpose: nothing else this server might
// seal under the same key would open as a pending request.
var sealAD = []byte("switchboard oauth pending request v1")

// pendingAuth is what authorize checked, carried to the sign-in form.
type pendingAuth struct {
	ClientID    string   `json:"c"`
	RedirectURI string   `json:"r"`
	Scopes      []string `json:"s"`
	State       string   `json:"st,omitempty"`
	Challenge   string   `json:"cc"`
	CSRFHash    []byte   `json:"x"` // SHA-256 of the browser's CSRF token
	Expires     int64    `json:"e"` // unix seconds
}

// sealer holds the AEAD, loaded from the store at first use.
type sealer struct {
	mu   sync.Mutex
	aead cipher.AEAD
}

func (s *Server) aead(ctx context.Context) (cipher.AEAD, error) {
	s.seal.mu.Lock()
	defer s.seal.mu.Unlock()
	if s.seal.aead != nil {
		return s.seal.aead, nil
	}
	key, err := s.store.ServerKey(ctx, sealKeyName, func() []byte {
		k := make([]byte, 32)
		rand.Read(k)
		return k
	})
	if err != nil {
		return nil, err
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("oauth: seal key %s has %d bytes, want 32", sealKeyName, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	s.seal.aead = a
	return a, nil
}

// sealPending returns p sealed, as the form's request field.
func (s *Server) sealPending(ctx context.Context, p pendingAuth) (string, error) {
	a, err := s.aead(ctx)
	if err != nil {
		return "", err
	}
	plain, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(plain)+a.Overhead())
	rand.Read(nonce)
	return sealedPrefix + base64.RawURLEncoding.EncodeToString(a.Seal(nonce, nonce, plain, sealAD)), nil
}

// errNotPending is a request field that is not a sealed request this server
// made, or one that has expired: the person starts again.
var errNotPending = errors.New("oauth: not a live sealed request")

// openPending opens a sealed request that has not expired.
func (s *Server) openPending(ctx context.Context, v string, now time.Time) (pendingAuth, error) {
	var p pendingAuth
	if !strings.HasPrefix(v, sealedPrefix) || len(v) > formBodyLimit {
		return p, errNotPending
	}
	raw, err := base64.RawURLEncoding.DecodeString(v[len(sealedPrefix):])
	if err != nil {
		return p, errNotPending
	}
	a, err := s.aead(ctx)
	if err != nil {
		return p, err
	}
	if len(raw) < a.NonceSize()+a.Overhead() {
		return p, errNotPending
	}
	plain, err := a.Open(nil, raw[:a.NonceSize()], raw[a.NonceSize():], sealAD)
	if err != nil {
		return p, errNotPending
	}
	if err := json.Unmarshal(plain, &p); err != nil || now.Unix() >= p.Expires {
		return pendingAuth{}, errNotPending
	}
	return p, nil
}
