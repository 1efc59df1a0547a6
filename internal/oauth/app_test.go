package oauth_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/oauth"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestRegisterAppRefusesPlainHTTP: the app's code would cross the network in
// clear, so plain http is allowed only on a loopback host, and a refused
// app leaves no client behind.
func TestRegisterAppRefusesPlainHTTP(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		for _, tc := range []struct {
			issuer, redirect string
		}{
			{"https://sb.example.com", "https://sb.example.com/app/callback"},
			{"https://sb.example.com/switchboard/", "https://sb.example.com/switchboard/app/callback"},
			{"http://127.0.0.1:8080", "http://127.0.0.1:8080/app/callback"},
			{"http://[::1]:8080", "http://[::1]:8080/app/callback"},
			{"http://localhost:8080", "http://localhost:8080/app/callback"},
			{"http://sb.example.com", ""},
			{"http://10.0.0.5:8080", ""},
		} {
			got, refused, err := oauth.New(oauth.Config{Store: st, Issuer: tc.issuer}).RegisterApp(ctx)
			if err != nil {
				t.Fatalf("%s: %v", tc.issuer, err)
			}
			if got != tc.redirect || (refused == "") != (tc.redirect != "") {
				t.Errorf("%s: redirect %q (refused %q), want %q", tc.issuer, got, refused, tc.redirect)
			}
			c, err := st.OAuthClient(ctx, store.AppClientID)
			if tc.redirect == "" {
				continue
			}
			// Registered again at every start: the last issuer wins.
			if err != nil || len(c.RedirectURIs) != 1 || c.RedirectURIs[0] != tc.redirect || c.Name != "Switchboard" {
				t.Errorf("%s: client %+v, %v; want only %s", tc.issuer, c, err, tc.redirect)
			}
		}
	})
}

// TestAppConsentImplied: the first-party app goes from the password straight
// back to its callback with a code (no consent page) and needs no
// allow-list entry for its host; the code is redeemed by the app's session
// only (session_test.go).
func TestAppConsentImplied(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		e := setup(t, st)
		redirectURI, refused, err := oauth.New(oauth.Config{Store: st, Issuer: e.url}).RegisterApp(ctx)
		if err != nil || refused != "" {
			t.Fatalf("RegisterApp: %q, %v", refused, err)
		}
		b := browser(t)
		resp, page := e.get(t, b, e.authorizePath(map[string]string{"client_id": store.AppClientID, "redirect_uri": redirectURI}))
		wantStatus(t, resp, page, http.StatusOK)
		form := hidden(t, page)
		form.Set("username", "amy")
		form.Set("password", password)
		resp, body := e.postForm(t, b, "/oauth/login", form)
		wantStatus(t, resp, body, http.StatusSeeOther)
		loc, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || !strings.HasPrefix(loc.String(), redirectURI+"?") || loc.Query().Get("state") != "st-123" || loc.Query().Get("code") == "" {
			t.Fatalf("after sign-in: Location %q, want %s?code=…&state=st-123", resp.Header.Get("Location"), redirectURI)
		}
		if resp.Header.Get("Referrer-Policy") != "no-referrer" || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("redirect with the code: Referrer-Policy %q, Cache-Control %q", resp.Header.Get("Referrer-Policy"), resp.Header.Get("Cache-Control"))
		}
		// The code is the server's own to redeem (session.go): the public
		// token endpoint never hands the app's tokens to a script.
		status, tok := e.token(t, url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")}, "code_verifier": {verifier},
			"client_id": {store.AppClientID}, "redirect_uri": {redirectURI}})
		if status != http.StatusBadRequest || tok.AccessToken != "" || tok.Error != "unauthorized_client" {
			t.Fatalf("the app's code at the public token endpoint: %d %+v, want 400 unauthorized_client", status, tok)
		}

		// Another client still gets the consent page.
		form = e.signIn(t, browser(t), nil)
		if form.Get("request") == "" {
			t.Fatal("a third-party client skipped consent")
		}
	})
}

// TestPrunerKeepsTheApp: the app's client is declared, not registered, so
// it is never pruned for lack of grants.
func TestPrunerKeepsTheApp(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		srv := oauth.New(oauth.Config{Store: st, Issuer: "https://sb.example"})
		if _, _, err := srv.RegisterApp(ctx); err != nil {
			t.Fatal(err)
		}
		stale := store.OAuthClient{ClientID: "stale-client", Name: "Stale", RedirectURIs: []string{"https://app.example/cb"}}
		if err := st.CreateOAuthClient(ctx, &stale); err != nil {
			t.Fatal(err)
		}
		later := time.Now().Add(store.OAuthUnusedClientTTL + time.Hour)
		st.SetClock(func() time.Time { return later })
		n, err := st.PruneUnusedOAuthClients(ctx)
		if err != nil || n != 1 {
			t.Fatalf("pruned %d, %v; want 1 (the stale client)", n, err)
		}
		if _, err := st.OAuthClient(ctx, store.AppClientID); err != nil {
			t.Fatalf("the app's client after pruning: %v", err)
		}
		if _, err := st.OAuthClient(ctx, stale.ClientID); !domain.IsNotFound(err) {
			t.Fatalf("stale client after pruning: %v", err)
		}
	})
}
