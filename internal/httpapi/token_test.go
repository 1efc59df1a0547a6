package httpapi_test

import (
	"strings"
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store/storetest"
)

// TestAccessTokenGates checks an OAuth access token through the real router:
// the scope gate, then the person's role gate, and 401 once the grant is
// revoked or the token has expired.
func TestAccessTokenGates(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		acme, _ := f.st.Account(ctx, f.users["Bob"].AccountID)
		eve := storetest.User(t, f.st, acme.ID, &storetest.UserOpts{FirstName: "Eve",
			Permissions: &domain.Permissions{Users: domain.UsersSelf, Numbers: domain.NumbersAssigned}})
		token, err := benchAccessToken(ctx, f.st, eve.ID) // sms:read only
		must(t, err)

		// Role gate: Eve sees the unassigned line, not Bob's.
		status, _, body := f.do(t, "GET", "/api/public/v1/sms/lines", token, "")
		if status != 200 || !strings.Contains(string(body), "14155550100") || strings.Contains(string(body), "14155550101") {
			t.Fatalf("lines with Eve's token: %d %s; want only the unassigned line", status, body)
		}
		// Scope gate first: the grant lacks users:read.
		status, _, body = f.do(t, "GET", "/api/public/v1/users", token, "")
		if e := decodeInto[errorEnvelope](t, body); status != 403 || e.Error.Type != "insufficient_scope" || e.Error.Scope != "users:read" {
			t.Errorf("users with a token lacking the scope: %d %s", status, body)
		}
		// A role without the Phone numbers permission: permission_denied.
		nobody := storetest.User(t, f.st, acme.ID, nil)
		noRole, err := benchAccessToken(ctx, f.st, nobody.ID)
		must(t, err)
		status, _, body = f.do(t, "GET", "/api/public/v1/sms/lines", noRole, "")
		if e := decodeInto[errorEnvelope](t, body); status != 403 || e.Error.Type != "permission_denied" {
			t.Errorf("lines for a user without a role: %d %s", status, body)
		}

		// Expired: 401 with the challenge.
		f.st.SetClock(func() time.Time { return time.Now().Add(2 * time.Hour) })
		status, h, _ := f.do(t, "GET", "/api/public/v1/sms/lines", token, "")
		if status != 401 || !strings.Contains(h.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Errorf("expired token: %d %q", status, h.Get("WWW-Authenticate"))
		}
		f.st.SetClock(func() time.Time { return time.Now().UTC() })

		// Revoked: the grant and every token of it.
		grants, err := f.st.OAuthGrants(ctx, acme.ID, eve.ID)
		must(t, err)
		if len(grants) != 1 {
			t.Fatalf("grants = %d, want 1", len(grants))
		}
		must(t, f.st.RevokeOAuthGrant(ctx, acme.ID, grants[0].ID))
		if status, _, body := f.do(t, "GET", "/api/public/v1/sms/lines", token, ""); status != 401 {
			t.Errorf("revoked token: %d %s", status, body)
		}
	})
}
