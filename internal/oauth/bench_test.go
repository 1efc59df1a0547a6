package oauth_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"switchboard/internal/auth"
	"switchboard/internal/oauth"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// benchSecret is prefix followed by 256 random bits in base64url, the shape
// the server's own secrets have (so the handler accepts ours).
func benchSecret(prefix string) string {
	var b [32]byte
	rand.Read(b[:])
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// benchGrant creates one grant of userID to clientID through the store (no
// password check, no pages) and redeems its code through the token endpoint,
// returning the first refresh token.
func benchGrant(ctx context.Context, st *store.Store, h http.Handler, clientID, redirectURI string, userID int64) (string, error) {
	reqID, verifier := benchSecret(""), benchSecret("")
	sum := sha256.Sum256([]byte(verifier))
	req := store.OAuthRequest{
		Hash:          auth.HashSecret(reqID),
		ClientID:      clientID,
		RedirectURI:   redirectURI,
		Scopes:        []string{string(auth.SMSRead)},
		CodeChallenge: base64.RawURLEncoding.EncodeToString(sum[:]),
		CSRFHash:      auth.HashSecret(benchSecret("")),
		UserID:        userID,
	}
	if err := st.CreateOAuthRequest(ctx, &req); err != nil {
		return "", err
	}
	code := benchSecret(oauth.CodePrefix)
	if _, _, err := st.ApproveOAuthRequest(ctx, req.Hash, auth.HashSecret(code)); err != nil {
		return "", err
	}
	status, tok, body := benchToken(h, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
		"client_id": {clientID}, "redirect_uri": {redirectURI}})
	if status != http.StatusOK {
		return "", &benchError{status, body}
	}
	return tok.RefreshToken, nil
}

type benchError struct {
	status int
	body   string
}

func (e *benchError) Error() string { return http.StatusText(e.status) + ": " + e.body }

type benchTokens struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
}

// benchToken POSTs form to the token endpoint in process.
func benchToken(h http.Handler, form url.Values) (int, benchTokens, string) {
	r := httptest.NewRequest(http.MethodPost, "/api/v1/oauth/token", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var tok benchTokens
	if w.Code == http.StatusOK {
		json.Unmarshal(w.Body.Bytes(), &tok)
	}
	return w.Code, tok, w.Body.String()
}

// BenchmarkRefreshGrant measures refresh_token grants through the token
// endpoint's handler over a real SQLite store (no network): about 64
// goroutines, each rotating its own grant's refresh token, as distinct
// clients of one application would. One op is one grant.
func BenchmarkRefreshGrant(b *testing.B) {
	ctx := context.Background()
	st := storetest.Open(b, store.SQLite)
	a := storetest.Account(b, st, nil)
	u := storetest.User(b, st, a.ID, nil)
	const redirectURI = "https://app.example.test/callback"
	c := store.OAuthClient{ClientID: benchSecret(""), Name: "Bench client", RedirectURIs: []string{redirectURI}}
	if err := st.CreateOAuthClient(ctx, &c); err != nil {
		b.Fatal(err)
	}
	h := oauth.New(oauth.Config{Store: st, Issuer: "http://bench.example.test"}).Handler()

	// About 64 goroutines whatever GOMAXPROCS is.
	procs := max(1, 64/runtime.GOMAXPROCS(0))
	b.SetParallelism(procs)
	n := procs * runtime.GOMAXPROCS(0)

	// One grant per goroutine, obtained concurrently (so the store groups the
	// commits) and before the timer starts.
	refresh := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			tok, err := benchGrant(ctx, st, h, c.ClientID, redirectURI, u.ID)
			refresh[i] = tok
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}

	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		tok := refresh[next.Add(1)-1]
		form := url.Values{"grant_type": {"refresh_token"}, "client_id": {c.ClientID}, "refresh_token": {""}}
		for pb.Next() {
			form.Set("refresh_token", tok)
			status, out, body := benchToken(h, form)
			if status != http.StatusOK || out.RefreshToken == "" {
				b.Errorf("refresh: status %d: %s", status, body)
				return
			}
			tok = out.RefreshToken
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "grants/s")
}
