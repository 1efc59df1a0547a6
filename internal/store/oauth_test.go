package store_test

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// h is a stand-in for auth.HashSecret: the store only ever sees hashes.
func h(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

var secretN atomic.Int64

// newSecret returns a distinct secret per call.
func newSecret(kind string) string { return fmt.Sprintf("%s-%d", kind, secretN.Add(1)) }

type oauthFixture struct {
	s       *store.Store
	account domain.Account
	user    domain.User
	client  store.OAuthClient
}

func setupOAuth(t *testing.T, s *store.Store) oauthFixture {
	t.Helper()
	a := mustAccount(t, s, "Acme")
	u := storetest.User(t, s, a.ID, &storetest.UserOpts{Username: "amy", FirstName: "Amy"})
	c := store.OAuthClient{ClientID: newSecret("client"), Name: "CRM", RedirectURIs: []string{"https://app.example/cb"}}
	if err := s.CreateOAuthClient(ctx, &c); err != nil {
		t.Fatal(err)
	}
	return oauthFixture{s: s, account: a, user: u, client: c}
}

// approve runs an authorization request through sign-in and approval and
// returns the code's secret and the grant.
func (f oauthFixture) approve(t *testing.T, scopes ...string) (string, store.OAuthGrant) {
	t.Helper()
	reqID := newSecret("req")
	r := store.OAuthRequest{Hash: h(reqID), ClientID: f.client.ClientID, RedirectURI: f.client.RedirectURIs[0],
		Scopes: scopes, State: "st", CodeChallenge: "challenge", CSRFHash: h("csrf"), UserID: f.user.ID}
	if err := f.s.CreateOAuthRequest(ctx, &r); err != nil {
		t.Fatal(err)
	}
	code := newSecret("code")
	got, g, err := f.s.ApproveOAuthRequest(ctx, h(reqID), h(code))
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "st" || g.UserID != f.user.ID || g.AccountID != f.account.ID || !slices.Equal(g.Scopes, scopes) {
		t.Fatalf("approve = %+v, %+v; want the request back and a grant for the user", got, g)
	}
	return code, g
}

func (f oauthFixture) exchange(code string) (store.IssuedTokens, string, string, error) {
	access, refresh := newSecret("at"), newSecret("rt")
	out, err := f.s.ExchangeOAuthCode(ctx, store.CodeExchange{CodeHash: h(code), ClientID: f.client.ClientID,
		RedirectURI: f.client.RedirectURIs[0], Challenge: "challenge"}, pair(access, refresh))
	return out, access, refresh, err
}

func (f oauthFixture) rotate(refresh string, scopes []string) (store.IssuedTokens, string, string, error) {
	access, next := newSecret("at"), newSecret("rt")
	out, err := f.s.RotateRefreshToken(ctx, store.RefreshExchange{RefreshHash: h(refresh), ClientID: f.client.ClientID, Scopes: scopes}, pair(access, next))
	return out, access, next, err
}

func pair(access, refresh string) store.TokenPair {
	return store.TokenPair{AccessHash: h(access), RefreshHash: h(refresh), AccessTTL: time.Hour, RefreshTTL: 30 * 24 * time.Hour}
}

func wantToken(t *testing.T, s *store.Store, access string, live bool) {
	t.Helper()
	tok, err := s.AccessTokenByHash(ctx, h(access))
	if live && err != nil {
		t.Fatalf("AccessTokenByHash = %v, want a live token", err)
	}
	if !live && !domain.IsNotFound(err) {
		t.Fatalf("AccessTokenByHash = %+v, %v; want not_found", tok, err)
	}
}

func TestOAuthAllowedHosts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		for _, host := range []string{"App.Example", "app.example", "b.example"} {
			if err := s.AllowHost(ctx, host); err != nil {
				t.Fatalf("AllowHost(%q) = %v", host, err)
			}
		}
		got, err := s.AllowedHosts(ctx)
		if err != nil || !slices.Equal(got, []string{"app.example", "b.example"}) {
			t.Fatalf("AllowedHosts = %v, %v; want [app.example b.example]", got, err)
		}
		if ok, err := s.HostAllowed(ctx, "APP.example"); !ok || err != nil {
			t.Fatalf("HostAllowed = %v, %v; want true", ok, err)
		}
		for _, bad := range []string{"", "https://x.example", "x.example:443", "x.example/cb"} {
			wantCode(t, s.AllowHost(ctx, bad), domain.Invalid)
		}
		if err := s.DisallowHost(ctx, "B.EXAMPLE"); err != nil {
			t.Fatal(err)
		}
		wantCode(t, s.DisallowHost(ctx, "b.example"), domain.NotFound)
		if ok, _ := s.HostAllowed(ctx, "b.example"); ok {
			t.Fatal("b.example still allowed after DisallowHost")
		}
	})
}

func TestOAuthClients(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		c := store.OAuthClient{ClientID: "c1", Name: "CRM", RedirectURIs: []string{"https://a.example/cb", "https://a.example/cb2"}}
		if err := s.CreateOAuthClient(ctx, &c); err != nil {
			t.Fatal(err)
		}
		if c.ID == 0 || c.CreatedAt.IsZero() {
			t.Fatalf("created client = %+v, want an id and a time", c)
		}
		dup := store.OAuthClient{ClientID: "c1", Name: "x", RedirectURIs: []string{"https://a.example/"}}
		wantCode(t, s.CreateOAuthClient(ctx, &dup), domain.Conflict)
		got, err := s.OAuthClient(ctx, "c1")
		if err != nil || got.Name != "CRM" || !slices.Equal(got.RedirectURIs, c.RedirectURIs) {
			t.Fatalf("OAuthClient = %+v, %v; want %+v", got, err, c)
		}
		_, err = s.OAuthClient(ctx, "nope")
		wantCode(t, err, domain.NotFound)
		all, err := s.OAuthClients(ctx)
		if err != nil || len(all) != 1 || all[0].ClientID != "c1" {
			t.Fatalf("OAuthClients = %+v, %v", all, err)
		}
	})
}

func TestOAuthRequestLifecycle(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := setupOAuth(t, s)
		r := store.OAuthRequest{Hash: h("r1"), ClientID: f.client.ClientID, RedirectURI: "https://app.example/cb",
			Scopes: []string{"sms:read", "sms:send"}, State: "xyz", CodeChallenge: "c", CSRFHash: h("csrf")}
		if err := s.CreateOAuthRequest(ctx, &r); err != nil {
			t.Fatal(err)
		}
		got, err := s.OAuthRequest(ctx, h("r1"))
		if err != nil || got.State != "xyz" || got.UserID != 0 || !slices.Equal(got.Scopes, r.Scopes) || string(got.CSRFHash) != string(h("csrf")) {
			t.Fatalf("OAuthRequest = %+v, %v", got, err)
		}
		// Nobody signed in: cannot be decided.
		_, _, err = s.ApproveOAuthRequest(ctx, h("r1"), h("code"))
		wantCode(t, err, domain.PermissionDenied)
		_, err = s.DenyOAuthRequest(ctx, h("r1"))
		wantCode(t, err, domain.PermissionDenied)

		// Signed in: stored with its user and the expiry it was given.
		signed := r
		signed.Hash, signed.UserID, signed.ExpiresAt = h("r1s"), f.user.ID, time.Now().Add(time.Minute).Truncate(time.Second)
		if err := s.CreateOAuthRequest(ctx, &signed); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.OAuthRequest(ctx, h("r1s")); got.UserID != f.user.ID || !got.ExpiresAt.Equal(signed.ExpiresAt) {
			t.Fatalf("signed-in request = %+v, want user %d expiring %v", got, f.user.ID, signed.ExpiresAt)
		}
		// Never later than the TTL, and never already expired.
		late := r
		late.Hash, late.ExpiresAt = h("late"), time.Now().Add(time.Hour)
		if err := s.CreateOAuthRequest(ctx, &late); err != nil || late.ExpiresAt.After(time.Now().Add(store.OAuthRequestTTL)) {
			t.Fatalf("request asking for an hour: expires %v, %v; want within %v", late.ExpiresAt, err, store.OAuthRequestTTL)
		}
		gone := r
		gone.Hash, gone.ExpiresAt = h("gone"), time.Now().Add(-time.Second)
		wantCode(t, s.CreateOAuthRequest(ctx, &gone), domain.NotFound)

		denied, err := s.DenyOAuthRequest(ctx, h("r1s"))
		if err != nil || denied.RedirectURI != "https://app.example/cb" || denied.State != "xyz" {
			t.Fatalf("Deny = %+v, %v", denied, err)
		}
		// Single use.
		_, _, err = s.ApproveOAuthRequest(ctx, h("r1s"), h("code"))
		wantCode(t, err, domain.NotFound)
		_, err = s.OAuthRequest(ctx, h("r1s"))
		wantCode(t, err, domain.NotFound)

		// Expiry.
		r2 := r
		r2.Hash = h("r2")
		if err := s.CreateOAuthRequest(ctx, &r2); err != nil {
			t.Fatal(err)
		}
		later := time.Now().Add(store.OAuthRequestTTL + time.Second)
		s.SetClock(func() time.Time { return later })
		_, err = s.OAuthRequest(ctx, h("r2"))
		wantCode(t, err, domain.NotFound)
		_, _, err = s.ApproveOAuthRequest(ctx, h("r2"), h("code2"))
		wantCode(t, err, domain.NotFound)
		if err := s.PruneOAuth(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestOAuthCodeExchange(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := setupOAuth(t, s)
		code, g := f.approve(t, "sms:read", "users:read")

		base := store.CodeExchange{CodeHash: h(code), ClientID: f.client.ClientID, RedirectURI: "https://app.example/cb", Challenge: "challenge"}
		for name, tc := range map[string]struct {
			mut  func(*store.CodeExchange)
			want domain.Code
		}{
			"unknown code":   {func(x *store.CodeExchange) { x.CodeHash = h("nope") }, domain.NotFound},
			"other client":   {func(x *store.CodeExchange) { x.ClientID = "other" }, domain.Invalid},
			"other redirect": {func(x *store.CodeExchange) { x.RedirectURI = "https://app.example/cb2" }, domain.Invalid},
			"bad verifier":   {func(x *store.CodeExchange) { x.Challenge = "different" }, domain.Invalid},
		} {
			x := base
			tc.mut(&x)
			_, err := s.ExchangeOAuthCode(ctx, x, pair(newSecret("at"), newSecret("rt")))
			if domain.ErrorCode(err) != tc.want {
				t.Fatalf("%s: got %v, want %s", name, err, tc.want)
			}
		}

		// The failed attempts did not spend the code.
		out, access, refresh, err := f.exchange(code)
		if err != nil {
			t.Fatal(err)
		}
		if out.Grant.ID != g.ID || !slices.Equal(out.Scopes, []string{"sms:read", "users:read"}) || out.AccessExpiresAt.IsZero() {
			t.Fatalf("exchange = %+v", out)
		}
		tok, err := s.AccessTokenByHash(ctx, h(access))
		if err != nil || tok.UserID != f.user.ID || tok.AccountID != f.account.ID || tok.GrantID != g.ID || !slices.Equal(tok.Scopes, out.Scopes) {
			t.Fatalf("AccessTokenByHash = %+v, %v", tok, err)
		}
		// A refresh token is not an access token.
		wantToken(t, s, refresh, false)

		// Replay: refused, and everything the first exchange issued dies.
		_, _, _, err = f.exchange(code)
		if !store.IsOAuthReplay(err) {
			t.Fatalf("replayed code: got %v, want a replay error", err)
		}
		wantToken(t, s, access, false)
		if _, _, _, err := f.rotate(refresh, nil); !domain.IsNotFound(err) {
			t.Fatalf("refresh after code replay: got %v, want not_found", err)
		}
		grants, err := s.OAuthGrants(ctx, f.account.ID, 0)
		if err != nil || len(grants) != 1 || grants[0].RevokedAt == nil {
			t.Fatalf("grants = %+v, %v; want one revoked grant", grants, err)
		}
	})
}

func TestOAuthCodeExpires(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := setupOAuth(t, s)
		code, _ := f.approve(t, "sms:read")
		later := time.Now().Add(store.OAuthCodeTTL + time.Second)
		s.SetClock(func() time.Time { return later })
		_, _, _, err := f.exchange(code)
		wantCode(t, err, domain.NotFound)
	})
}

func TestOAuthRefreshRotation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := setupOAuth(t, s)
		code, _ := f.approve(t, "sms:read", "sms:send")
		_, access1, refresh1, err := f.exchange(code)
		if err != nil {
			t.Fatal(err)
		}

		// Another client's refresh, or a wider scope: refused, token not spent.
		_, err = s.RotateRefreshToken(ctx, store.RefreshExchange{RefreshHash: h(refresh1), ClientID: "other"}, pair(newSecret("at"), newSecret("rt")))
		wantCode(t, err, domain.Invalid)
		_, _, _, err = f.rotate(refresh1, []string{"sms:read", "users:read"})
		wantCode(t, err, domain.InsufficientScope)
		// An access token cannot be used as a refresh token.
		_, _, _, err = f.rotate(access1, nil)
		wantCode(t, err, domain.NotFound)

		// Narrowing: the access token gets less, the refresh token keeps all.
		out, access2, refresh2, err := f.rotate(refresh1, []string{"sms:read"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(out.Scopes, []string{"sms:read"}) {
			t.Fatalf("narrowed scopes = %v, want [sms:read]", out.Scopes)
		}
		if tok, _ := s.AccessTokenByHash(ctx, h(access2)); !slices.Equal(tok.Scopes, []string{"sms:read"}) {
			t.Fatalf("narrowed token scopes = %v", tok.Scopes)
		}
		out, access3, refresh3, err := f.rotate(refresh2, nil)
		if err != nil || !slices.Equal(out.Scopes, []string{"sms:read", "sms:send"}) {
			t.Fatalf("rotate after narrowing = %+v, %v; want both scopes back", out, err)
		}
		wantToken(t, s, access1, true)
		wantToken(t, s, access3, true)

		// Reusing a rotated refresh token revokes the whole grant.
		_, _, _, err = f.rotate(refresh1, nil)
		if !store.IsOAuthReplay(err) {
			t.Fatalf("reused refresh token: got %v, want a replay error", err)
		}
		for _, a := range []string{access1, access2, access3} {
			wantToken(t, s, a, false)
		}
		_, _, _, err = f.rotate(refresh3, nil)
		wantCode(t, err, domain.NotFound)
	})
}

func TestOAuthRefreshConcurrentUse(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := setupOAuth(t, s)
		code, _ := f.approve(t, "sms:read")
		_, _, refresh, err := f.exchange(code)
		if err != nil {
			t.Fatal(err)
		}
		const n = 8
		var wg sync.WaitGroup
		var ok, replays atomic.Int32
		errs := make(chan error, n)
		for range n {
			wg.Go(func() {
				_, _, _, err := f.rotate(refresh, nil)
				switch {
				case err == nil:
					ok.Add(1)
				case store.IsOAuthReplay(err):
					replays.Add(1)
				default:
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("unexpected error: %v", err)
		}
		if ok.Load() != 1 || replays.Load() != n-1 {
			t.Fatalf("%d succeeded and %d were replays, want 1 and %d", ok.Load(), replays.Load(), n-1)
		}
	})
}

func TestOAuthTokenExpiry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := setupOAuth(t, s)
		code, _ := f.approve(t, "sms:read")
		_, access, refresh, err := f.exchange(code)
		if err != nil {
			t.Fatal(err)
		}
		wantToken(t, s, access, true)
		later := time.Now().Add(time.Hour + time.Second)
		s.SetClock(func() time.Time { return later })
		wantToken(t, s, access, false)
		if _, _, _, err := f.rotate(refresh, nil); err != nil {
			t.Fatalf("refresh after the access token expired: %v", err)
		}
		muchLater := later.Add(31 * 24 * time.Hour)
		s.SetClock(func() time.Time { return muchLater })
		if err := s.PruneOAuth(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestOAuthRevocation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := setupOAuth(t, s)
		code, _ := f.approve(t, "sms:read")
		_, access, refresh, err := f.exchange(code)
		if err != nil {
			t.Fatal(err)
		}
		// Unknown tokens and other clients' tokens are ignored.
		if err := s.RevokeOAuthToken(ctx, h("unknown"), ""); err != nil {
			t.Fatal(err)
		}
		if err := s.RevokeOAuthToken(ctx, h(access), "other-client"); err != nil {
			t.Fatal(err)
		}
		wantToken(t, s, access, true)
		// An access token revokes only itself.
		if err := s.RevokeOAuthToken(ctx, h(access), f.client.ClientID); err != nil {
			t.Fatal(err)
		}
		wantToken(t, s, access, false)
		_, access2, refresh2, err := f.rotate(refresh, nil)
		if err != nil {
			t.Fatalf("refresh after revoking an access token: %v", err)
		}
		// A refresh token revokes the grant.
		if err := s.RevokeOAuthToken(ctx, h(refresh2), ""); err != nil {
			t.Fatal(err)
		}
		wantToken(t, s, access2, false)
		_, _, _, err = f.rotate(refresh2, nil)
		wantCode(t, err, domain.NotFound)

		// Grants by account and user; revoking another account's grant is not_found.
		code, g := f.approve(t, "users:read")
		_, access3, _, err := f.exchange(code)
		if err != nil {
			t.Fatal(err)
		}
		other := mustAccount(t, s, "Other")
		wantCode(t, s.RevokeOAuthGrant(ctx, other.ID, g.ID), domain.NotFound)
		wantToken(t, s, access3, true)
		if grants, err := s.OAuthGrants(ctx, f.account.ID, f.user.ID); err != nil || len(grants) != 2 {
			t.Fatalf("OAuthGrants(user) = %+v, %v; want 2", grants, err)
		}
		if grants, err := s.OAuthGrants(ctx, f.account.ID, f.user.ID+1000); err != nil || len(grants) != 0 {
			t.Fatalf("OAuthGrants(other user) = %+v, %v; want none", grants, err)
		}
		if err := s.RevokeOAuthGrant(ctx, f.account.ID, g.ID); err != nil {
			t.Fatal(err)
		}
		wantToken(t, s, access3, false)
		grants, _ := s.OAuthGrants(ctx, f.account.ID, 0)
		if len(grants) != 2 || grants[1].ID != g.ID || grants[1].RevokedAt == nil {
			t.Fatalf("grants = %+v, want the second revoked", grants)
		}
	})
}

func TestPruneUnusedOAuthClients(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := setupOAuth(t, s) // f.client will hold a grant
		f.approve(t, "sms:read")
		register := func(id string) {
			t.Helper()
			c := store.OAuthClient{ClientID: id, Name: id, RedirectURIs: []string{"https://app.example/cb"}}
			if err := s.CreateOAuthClient(ctx, &c); err != nil {
				t.Fatal(err)
			}
		}
		register("never-used")
		// A pending authorization of an unused client goes with it.
		pending := store.OAuthRequest{Hash: h("pending"), ClientID: "never-used", RedirectURI: "https://app.example/cb",
			Scopes: []string{"sms:read"}, State: "s", CodeChallenge: "c", CSRFHash: h("csrf")}
		if err := s.CreateOAuthRequest(ctx, &pending); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		s.SetClock(func() time.Time { return start.Add(store.OAuthUnusedClientTTL - time.Minute) })
		register("recent")
		clients := func() []string {
			t.Helper()
			all, err := s.OAuthClients(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, c := range all {
				ids = append(ids, c.ClientID)
			}
			return ids
		}

		// Not yet a day old: everything stays.
		if n, err := s.PruneUnusedOAuthClients(ctx); n != 0 || err != nil {
			t.Fatalf("PruneUnusedOAuthClients before the TTL = %d, %v; want 0", n, err)
		}
		s.SetClock(func() time.Time { return start.Add(store.OAuthUnusedClientTTL + time.Minute) })
		if n, err := s.PruneUnusedOAuthClients(ctx); n != 1 || err != nil {
			t.Fatalf("PruneUnusedOAuthClients after the TTL = %d, %v; want 1 (never-used)", n, err)
		}
		if got, want := clients(), []string{f.client.ClientID, "recent"}; !slices.Equal(got, want) {
			t.Fatalf("clients after pruning = %v, want %v (the granted one and the recent one)", got, want)
		}
		// A revoked grant still keeps its client: it is the record of who was authorized.
		grants, err := s.OAuthGrants(ctx, f.account.ID, 0)
		if err != nil || len(grants) != 1 {
			t.Fatalf("grants = %+v, %v", grants, err)
		}
		if err := s.RevokeOAuthGrant(ctx, f.account.ID, grants[0].ID); err != nil {
			t.Fatal(err)
		}
		s.SetClock(func() time.Time { return start.Add(3 * store.OAuthUnusedClientTTL) })
		if n, err := s.PruneUnusedOAuthClients(ctx); n != 1 || err != nil {
			t.Fatalf("PruneUnusedOAuthClients two days later = %d, %v; want 1 (recent)", n, err)
		}
		if got, want := clients(), []string{f.client.ClientID}; !slices.Equal(got, want) {
			t.Fatalf("clients = %v, want %v", got, want)
		}
	})
}

func TestServerKey(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		var made atomic.Int32
		gen := func() []byte { made.Add(1); return []byte(newSecret("key")) }
		// Racing first uses agree on one key.
		keys := make([][]byte, 8)
		var wg sync.WaitGroup
		for i := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				k, err := s.ServerKey(ctx, "seal", gen)
				if err != nil {
					t.Error(err)
				}
				keys[i] = k
			}()
		}
		wg.Wait()
		for _, k := range keys {
			if len(k) == 0 || string(k) != string(keys[0]) {
				t.Fatalf("keys = %q, want one shared key", keys)
			}
		}
		again, err := s.ServerKey(ctx, "seal", func() []byte { t.Fatal("a second key was made"); return nil })
		if err != nil || string(again) != string(keys[0]) {
			t.Fatalf("ServerKey again = %q, %v; want %q", again, err, keys[0])
		}
		other, err := s.ServerKey(ctx, "other", gen)
		if err != nil || string(other) == string(keys[0]) {
			t.Fatalf("another name's key = %q, %v; want a different key", other, err)
		}
	})
}
