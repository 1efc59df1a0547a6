package httpapi_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/httpapi"
	"switchboard/internal/sms"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/users"
	"switchboard/internal/webhooks"
)

// BenchmarkAuthenticatedRequest measures GET /sms/lines (three lines) through
// the router, authentication and a real SQLite store (no network), once with
// an API key and once with an OAuth access token of a user whose role has
// numbers:all, over the same server and store. The token's extra work is the
// user and role lookups; the response is the same.
func BenchmarkAuthenticatedRequest(b *testing.B) {
	ctx := context.Background()
	st := storetest.Open(b, store.SQLite)
	a := storetest.Account(b, st, nil)
	u := storetest.User(b, st, a.ID, &storetest.UserOpts{Permissions: &domain.Permissions{Numbers: domain.NumbersAll, Users: domain.UsersAll}})
	for i := range 3 {
		storetest.Line(b, st, a.ID, &storetest.LineOpts{Number: fmt.Sprint(14155550100 + i), Name: fmt.Sprint("Line ", i)})
	}
	_, key := storetest.Key(b, st, a.ID, auth.SMSRead)
	token, err := benchAccessToken(ctx, st, u.ID)
	if err != nil {
		b.Fatal(err)
	}
	h := httpapi.New(httpapi.Config{Store: st, Auth: &auth.Authenticator{Store: st}, SMS: sms.New(sms.Config{Store: st}), Users: users.New(users.Config{Store: st}), Webhooks: webhooks.New(webhooks.Config{Store: st}), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})

	// Both credentials must see the same answer, or the comparison is moot.
	var bodies [2]string
	for i, cred := range []string{key, token} {
		w := benchGet(h, cred)
		if w.Code != http.StatusOK {
			b.Fatalf("credential %d: status %d: %s", i, w.Code, w.Body)
		}
		bodies[i] = w.Body.String()
	}
	if bodies[0] != bodies[1] {
		b.Fatalf("key and token see different lines:\n%s\n%s", bodies[0], bodies[1])
	}

	for _, bc := range []struct{ name, cred string }{{"key", key}, {"token", token}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if w := benchGet(h, bc.cred); w.Code != http.StatusOK {
						b.Errorf("status %d: %s", w.Code, w.Body)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}

func benchGet(h http.Handler, cred string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/api/public/v1/sms/lines", nil)
	req.Header.Set("Authorization", "Bearer "+cred)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// benchAccessToken grants the sms:read scope to a new client for userID
// through the store's authorization steps (what the sign-in and consent pages
// call) and returns the access token the code exchange issues.
func benchAccessToken(ctx context.Context, st *store.Store, userID int64) (string, error) {
	return userAccessToken(ctx, st, userID, auth.SMSRead)
}

// userAccessToken issues an access token for userID with scopes through the
// store's real authorization-code flow.
func userAccessToken(ctx context.Context, st *store.Store, userID int64, scopes ...auth.Scope) (string, error) {
	secret := func(prefix string) string {
		var b [32]byte
		rand.Read(b[:])
		return prefix + base64.RawURLEncoding.EncodeToString(b[:])
	}
	const redirectURI = "https://app.example.test/callback"
	c := store.OAuthClient{ClientID: secret(""), Name: "Bench client", RedirectURIs: []string{redirectURI}}
	if err := st.CreateOAuthClient(ctx, &c); err != nil {
		return "", err
	}
	verifier := secret("")
	sum := sha256.Sum256([]byte(verifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	req := store.OAuthRequest{Hash: auth.HashSecret(secret("")), ClientID: c.ClientID, RedirectURI: redirectURI,
		Scopes: scopeNames(scopes), CodeChallenge: challenge, CSRFHash: auth.HashSecret(secret("")), UserID: userID}
	if err := st.CreateOAuthRequest(ctx, &req); err != nil {
		return "", err
	}
	code := secret("sbac_")
	if _, _, err := st.ApproveOAuthRequest(ctx, req.Hash, auth.HashSecret(code)); err != nil {
		return "", err
	}
	access := secret(auth.AccessTokenPrefix)
	_, err := st.ExchangeOAuthCode(ctx, store.CodeExchange{CodeHash: auth.HashSecret(code), ClientID: c.ClientID, RedirectURI: redirectURI, Challenge: challenge},
		store.TokenPair{AccessHash: auth.HashSecret(access), RefreshHash: auth.HashSecret(secret("sbrt_")), AccessTTL: time.Hour, RefreshTTL: time.Hour})
	return access, err
}

func scopeNames(scopes []auth.Scope) []string {
	out := make([]string, len(scopes))
	for i, sc := range scopes {
		out[i] = string(sc)
	}
	return out
}
