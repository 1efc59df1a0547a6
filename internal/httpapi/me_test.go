package httpapi_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store/storetest"
)

const mePath = "/api/public/v1/me"

// meResult mirrors Me; user and lines stay raw, to be compared byte for
// byte with GET /users and GET /sms/lines.
type meResult struct {
	Kind    string   `json:"kind"`
	Scopes  []string `json:"scopes"`
	Account struct {
		ID                     int64 `json:"id"`
		RecordingsAvailable    bool  `json:"recordingsAvailable"`
		MessageDeletionAllowed bool  `json:"messageDeletionAllowed"`
	} `json:"account"`
	UserID      *int64          `json:"userId"`
	User        json.RawMessage `json:"user"`
	Permissions map[string]any  `json:"permissions"`
	Lines       json.RawMessage `json:"lines"`
}

func (f *fixture) me(t *testing.T, key string) meResult {
	t.Helper()
	status, _, raw := f.do(t, "GET", mePath, key, "")
	if status != 200 {
		t.Fatalf("GET /me: %d %s", status, raw)
	}
	return decodeInto[struct {
		Data meResult `json:"data"`
	}](t, raw).Data
}

// dataOf returns the raw data member of a 200 answer to GET path.
func (f *fixture) dataOf(t *testing.T, path, key string) json.RawMessage {
	t.Helper()
	status, _, raw := f.do(t, "GET", path, key, "")
	if status != 200 {
		t.Fatalf("GET %s: %d %s", path, status, raw)
	}
	return decodeInto[struct {
		Data json.RawMessage `json:"data"`
	}](t, raw).Data
}

// ownUser returns the element of GET /users with id, raw.
func (f *fixture) ownUser(t *testing.T, key string, id int64) json.RawMessage {
	t.Helper()
	var list []json.RawMessage
	must(t, json.Unmarshal(f.dataOf(t, "/api/public/v1/users", key), &list))
	for _, u := range list {
		if decodeInto[struct {
			ID int64 `json:"id"`
		}](t, u).ID == id {
			return u
		}
	}
	t.Fatalf("GET /users has no user %d", id)
	return nil
}

func TestMe(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		acme := f.users["Alice"].AccountID
		beta := f.users["Dave"].AccountID
		bob := f.users["Bob"]

		t.Run("api key", func(t *testing.T) {
			m := f.me(t, f.keys["acme"])
			if m.Kind != "apiKey" || !slices.Equal(m.Scopes, auth.Strings(auth.AllScopes)) || m.Account.ID != acme ||
				!m.Account.RecordingsAvailable || !m.Account.MessageDeletionAllowed {
				t.Errorf("got %+v, want an apiKey of account %d with every scope", m, acme)
			}
			if m.UserID != nil || m.User != nil || m.Permissions != nil {
				t.Errorf("an API key has a userId, user or permissions: %+v", m)
			}
			// sms:read: the lines, exactly as GET /sms/lines lists them (every SMS line).
			want := f.dataOf(t, "/api/public/v1/sms/lines", f.keys["acme"])
			if string(m.Lines) != string(want) || !strings.Contains(string(m.Lines), "14155550101") || !strings.Contains(string(m.Lines), "14155550100") {
				t.Errorf("lines = %s, want GET /sms/lines' %s", m.Lines, want)
			}
			// Another account's key is that account.
			if m := f.me(t, f.keys["beta"]); m.Account.ID != beta || strings.Contains(string(m.Lines), "1415555") {
				t.Errorf("beta: %+v", m)
			}
		})

		t.Run("api key without sms:read", func(t *testing.T) {
			_, k := storetest.Key(t, f.st, acme, auth.WebhooksWrite, auth.WebhooksRead)
			status, _, raw := f.do(t, "GET", mePath, k, "")
			m := decodeInto[struct {
				Data meResult `json:"data"`
			}](t, raw).Data
			// Scopes in the discovery document's order, not the key's.
			if status != 200 || !slices.Equal(m.Scopes, []string{"webhooks:read", "webhooks:write"}) {
				t.Errorf("got %d %s", status, raw)
			}
			if strings.Contains(string(raw), `"lines"`) || strings.Contains(string(raw), `"user"`) {
				t.Errorf("a key without sms:read is shown lines (or a user): %s", raw)
			}
		})

		t.Run("person with every permission", func(t *testing.T) {
			ann := storetest.User(t, f.st, acme, &storetest.UserOpts{FirstName: "Ann", Username: "ann",
				Permissions: &domain.Permissions{Users: domain.UsersAll, Numbers: domain.NumbersAll, CallReports: true, AllowRecordings: true, Webhooks: true}})
			tok, err := userAccessToken(ctx, f.st, ann.ID, auth.AllScopes...)
			must(t, err)
			m := f.me(t, tok)
			if m.Kind != "user" || m.UserID == nil || *m.UserID != ann.ID || m.Account.ID != acme || !slices.Equal(m.Scopes, auth.Strings(auth.AllScopes)) {
				t.Errorf("got %+v, want user %d", m, ann.ID)
			}
			if want := map[string]any{"users": "all", "numbers": "all", "callReports": true, "allowRecordings": true, "webhooks": true}; !maps.Equal(m.Permissions, want) {
				t.Errorf("permissions = %v, want %v", m.Permissions, want)
			}
			if want := f.ownUser(t, tok, ann.ID); string(m.User) != string(want) {
				t.Errorf("user = %s, want GET /users' element %s", m.User, want)
			}
			if want := f.dataOf(t, "/api/public/v1/sms/lines", tok); string(m.Lines) != string(want) || !strings.Contains(string(want), "14155550101") {
				t.Errorf("lines = %s, want %s", m.Lines, want)
			}
		})

		t.Run("person with a narrow role", func(t *testing.T) {
			eve := storetest.User(t, f.st, acme, &storetest.UserOpts{FirstName: "Eve",
				Permissions: &domain.Permissions{Users: domain.UsersSelf, Numbers: domain.NumbersAssigned}})
			tok, err := userAccessToken(ctx, f.st, eve.ID, auth.SMSRead, auth.SMSSend)
			must(t, err)
			status, _, raw := f.do(t, "GET", mePath, tok, "")
			m := decodeInto[struct {
				Data meResult `json:"data"`
			}](t, raw).Data
			if status != 200 || m.Kind != "user" || *m.UserID != eve.ID || !slices.Equal(m.Scopes, []string{"sms:read", "sms:send"}) {
				t.Errorf("got %d %s", status, raw)
			}
			if want := map[string]any{"users": "self", "numbers": "assigned", "callReports": false, "allowRecordings": false, "webhooks": false}; !maps.Equal(m.Permissions, want) {
				t.Errorf("permissions = %v, want %v", m.Permissions, want)
			}
			// No users:read: no user record (it is personal data).
			if strings.Contains(string(raw), `"user":`) {
				t.Errorf("a token without users:read is shown the user record: %s", raw)
			}
			// The unassigned line only, as GET /sms/lines answers.
			if want := f.dataOf(t, "/api/public/v1/sms/lines", tok); string(m.Lines) != string(want) ||
				!strings.Contains(string(m.Lines), "14155550100") || strings.Contains(string(m.Lines), "14155550101") {
				t.Errorf("lines = %s, want %s (the unassigned line only)", m.Lines, want)
			}
		})

		t.Run("person whose role shows no users and no lines", func(t *testing.T) {
			tok, err := userAccessToken(ctx, f.st, bob.ID, auth.UsersRead, auth.SMSRead, auth.ReportsRead)
			must(t, err)
			status, _, raw := f.do(t, "GET", mePath, tok, "")
			m := decodeInto[struct {
				Data meResult `json:"data"`
			}](t, raw).Data
			if status != 200 || *m.UserID != bob.ID {
				t.Fatalf("got %d %s", status, raw)
			}
			if want := map[string]any{"users": "none", "numbers": "none", "callReports": false, "allowRecordings": false, "webhooks": false}; !maps.Equal(m.Permissions, want) {
				t.Errorf("permissions = %v, want %v", m.Permissions, want)
			}
			// GET /users would refuse this person: so does /me's user; and the
			// role grants no line, so lines is empty (GET /sms/lines is 403).
			if strings.Contains(string(raw), `"user":`) || string(m.Lines) != "[]" {
				t.Errorf("user or lines beyond the role: %s", raw)
			}
			if status, _, _ := f.do(t, "GET", "/api/public/v1/users", tok, ""); status != 403 {
				t.Errorf("GET /users for this person: %d, want 403", status)
			}
		})

		t.Run("account settings", func(t *testing.T) {
			strict := storetest.Account(t, f.st, &storetest.AccountOpts{SensitiveReverify: true, RestrictSMSDelete: true})
			_, k := storetest.Key(t, f.st, strict.ID, auth.ReportsRead)
			if m := f.me(t, k); m.Account.ID != strict.ID || m.Account.RecordingsAvailable || m.Account.MessageDeletionAllowed {
				t.Errorf("got %+v, want recordings unavailable and deletion not allowed", m.Account)
			}
		})

		t.Run("refused", func(t *testing.T) {
			for name, key := range map[string]string{"none": "", "revoked key": f.keys["revoked"], "unknown": "sbk_nope"} {
				status, h, raw := f.do(t, "GET", mePath, key, "")
				e := decodeInto[errorEnvelope](t, raw)
				// No scope is wanted, so the challenge names none.
				if status != 401 || e.Error.Type != "unauthenticated" || !strings.Contains(h.Get("WWW-Authenticate"), `error="invalid_token"`) ||
					strings.Contains(h.Get("WWW-Authenticate"), "scope=") {
					t.Errorf("%s: %d %q %s, want 401", name, status, h.Get("WWW-Authenticate"), raw)
				}
			}
			// A revoked grant's token.
			carol := f.users["Carol"]
			tok, err := userAccessToken(ctx, f.st, carol.ID, auth.SMSRead)
			must(t, err)
			f.me(t, tok)
			grants, err := f.st.OAuthGrants(ctx, acme, carol.ID)
			must(t, err)
			for _, g := range grants {
				must(t, f.st.RevokeOAuthGrant(ctx, acme, g.ID))
			}
			if status, _, raw := f.do(t, "GET", mePath, tok, ""); status != 401 {
				t.Errorf("revoked grant: %d %s, want 401", status, raw)
			}
			// The strict query parser and the method table apply.
			if status, _, raw := f.do(t, "GET", mePath+"?verbose=1", f.keys["acme"], ""); status != 400 {
				t.Errorf("query parameter: %d %s, want 400", status, raw)
			}
			if status, h, raw := f.do(t, "POST", mePath, f.keys["acme"], "{}"); status != 405 || h.Get("Allow") == "" {
				t.Errorf("POST: %d %s, want 405", status, raw)
			}
		})
	})
}
