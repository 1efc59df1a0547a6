// Package e2e tests the real switchboard binary: it provisions through the
// CLI, serves over HTTP, and checks what a client and an operator see.
package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"switchboard/internal/apitest"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

const apiPrefix = "/api/public/v1"

// apiUser is the public API's User.
type apiUser struct {
	ID         int64    `json:"id"`
	Username   string   `json:"username"`
	FirstName  string   `json:"firstName"`
	LastName   string   `json:"lastName"`
	Title      string   `json:"title"`
	Email      string   `json:"email"`
	Mobile     string   `json:"mobile"`
	Company    string   `json:"company"`
	TimeZone   string   `json:"timeZone"`
	Extension  string   `json:"extension"`
	Extensions []string `json:"extensions"`
	Lines      []string `json:"lines"`
	Numbers    []string `json:"numbers"`
	Voicemails []string `json:"voicemails"`
}

var userFields = []string{"id", "username", "firstName", "lastName", "title", "email", "mobile", "company",
	"timeZone", "extension", "extensions", "lines", "numbers", "voicemails"}

// apiLine is the public API's SMSLine.
type apiLine struct {
	Number      string  `json:"number"`
	Name        string  `json:"name"`
	UserIDs     []int64 `json:"userIds"`
	BulkEnabled bool    `json:"bulkEnabled"`
}

var lineFields = []string{"number", "name", "userIds", "bulkEnabled"}

// engines runs fn as a parallel subtest per database engine (PostgreSQL only
// when SWITCHBOARD_TEST_POSTGRES is set), each with a fresh empty database.
func engines(t *testing.T, fn func(t *testing.T, db string)) {
	for _, e := range storetest.Engines(t) {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			fn(t, storetest.DSN(t, e))
		})
	}
}

func jsonString(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// ---- provisioning through the CLI ----

func createAccount(t *testing.T, db, name string) int64 {
	t.Helper()
	var out struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	cliJSON(t, db, &out, "account", "create", "--name", name)
	if out.ID <= 0 || out.Name != name {
		t.Fatalf("account create --name %q: got %+v, want a positive id and the name", name, out)
	}
	return out.ID
}

type keyOut struct {
	ID      int64    `json:"id"`
	Account int64    `json:"account"`
	Name    string   `json:"name"`
	Scopes  []string `json:"scopes"`
	Key     string   `json:"key"`
}

func createKey(t *testing.T, db string, account int64, name, scopes string) keyOut {
	t.Helper()
	var k keyOut
	cliJSON(t, db, &k, "key", "create", "--account", fmt.Sprint(account), "--name", name, "--scopes", scopes)
	want := strings.Split(scopes, ",")
	if scopes == "all" {
		want = allScopes
	}
	if k.ID <= 0 || k.Account != account || k.Name != name || k.Key == "" || !reflect.DeepEqual(k.Scopes, want) {
		t.Fatalf("key create --scopes %s: got %+v, want id > 0, account %d, name %q, scopes %q and the key", scopes, k, account, name, want)
	}
	return k
}

var allScopes = []string{"webhooks:read", "webhooks:write", "reports:read", "users:read", "sms:read", "sms:write",
	"sms:send", "recordings:read", "messages:read", "messages:write"}

// createUser runs "user create" with flags and returns the new user's id.
func createUser(t *testing.T, db string, account int64, flags ...string) int64 {
	t.Helper()
	var out struct {
		ID        int64  `json:"id"`
		Account   int64  `json:"account"`
		Username  string `json:"username"`
		FirstName string `json:"firstName"`
		LastName  string `json:"lastName"`
	}
	args := append([]string{"user", "create", "--account", fmt.Sprint(account)}, flags...)
	cliJSON(t, db, &out, args...)
	if out.ID <= 0 || out.Account != account {
		t.Fatalf("user create %v: got %+v, want a positive id in account %d", flags, out, account)
	}
	return out.ID
}

type lineOut struct {
	ID          int64   `json:"id"`
	Account     int64   `json:"account"`
	Number      string  `json:"number"`
	Name        string  `json:"name"`
	UserIDs     []int64 `json:"userIds"`
	BulkEnabled bool    `json:"bulkEnabled"`
	SMSEnabled  bool    `json:"smsEnabled"`
}

func createLine(t *testing.T, db string, account int64, flags ...string) lineOut {
	t.Helper()
	var out lineOut
	args := append([]string{"line", "create", "--account", fmt.Sprint(account)}, flags...)
	cliJSON(t, db, &out, args...)
	if out.ID <= 0 || out.Account != account {
		t.Fatalf("line create %v: got %+v, want a positive id in account %d", flags, out, account)
	}
	return out
}

func ids(list ...int64) string {
	s := make([]string, len(list))
	for i, id := range list {
		s[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(s, ",")
}

// world is two accounts provisioned through the CLI only, and what the API
// must answer for them.
type world struct {
	acme, beta             int64
	keys                   map[string]keyOut
	acmeUsers, betaUsers   []apiUser // in the order GET /users must return
	acmeLines, betaLines   []apiLine // the SMS-capable lines, by number
	acmeNumbers, acmeNames []string  // every acme line number; "lastName":… of acme's users, to look for leaks
}

func provision(t *testing.T, db string) *world {
	t.Helper()
	w := &world{keys: map[string]keyOut{}}
	w.acme = createAccount(t, db, "Acme Corp")
	w.beta = createAccount(t, db, "Beta LLC")
	if w.acme == w.beta {
		t.Fatalf("two accounts got the same id %d", w.acme)
	}

	var role struct {
		ID          int64  `json:"id"`
		Account     int64  `json:"account"`
		Name        string `json:"name"`
		Permissions string `json:"permissions"`
	}
	cliJSON(t, db, &role, "role", "create", "--account", fmt.Sprint(w.acme), "--name", "agent", "--permissions", "users:all,numbers:assigned")
	if role.ID <= 0 || role.Account != w.acme || role.Name != "agent" || role.Permissions != "users:all,numbers:assigned" {
		t.Fatalf("role create: got %+v, want id > 0, account %d, name agent, permissions users:all,numbers:assigned", role, w.acme)
	}

	// Created in an order that is not the listing order: the API must sort by
	// last name, first name, then id.
	alice := apiUser{
		Username: "alice", FirstName: "Alice", LastName: "Smith", Title: "Support Lead",
		Email: "alice@acme.test", Mobile: "14155550199", Company: "Acme Corp", TimeZone: "America/New_York",
		Extension: "101", Extensions: []string{"101", "102"}, Lines: []string{"SIP/101", "SIP/102"},
		Numbers: []string{"14155550101", "442079460958"}, Voicemails: []string{"101", "sales"},
	}
	alice.ID = createUser(t, db, w.acme, "--first", "Alice", "--last", "Smith", "--username", "alice", "--password", "correct horse",
		"--role", "agent", "--title", "Support Lead", "--email", "alice@acme.test", "--mobile", "14155550199",
		"--timezone", "America/New_York", "--extension", "101", "--extensions", "101,102", "--lines", "SIP/101,SIP/102",
		"--numbers", "(415) 555-0101,+44 20 7946 0958", "--voicemails", "101,sales")
	bob := apiUser{Username: "bob", FirstName: "Bob", LastName: "Jones", Company: "Jones Consulting", TimeZone: "America/Chicago"}
	bob.ID = createUser(t, db, w.acme, "--first", "Bob", "--last", "Jones", "--username", "bob", "--company", "Jones Consulting", "--timezone", "America/Chicago")
	carol := apiUser{FirstName: "Carol", LastName: "Adams", Company: "Acme Corp"}
	carol.ID = createUser(t, db, w.acme, "--first", "Carol", "--last", "Adams")
	aaron := apiUser{FirstName: "Aaron", LastName: "Smith", Email: "aaron@acme.test", Company: "Acme Corp"}
	aaron.ID = createUser(t, db, w.acme, "--first", "Aaron", "--last", "Smith", "--email", "aaron@acme.test")
	alice2 := apiUser{FirstName: "Alice", LastName: "Smith", Title: "Intern", Company: "Acme Corp"}
	alice2.ID = createUser(t, db, w.acme, "--first", "Alice", "--last", "Smith", "--title", "Intern")
	w.acmeUsers = []apiUser{carol, bob, aaron, alice, alice2}
	for _, u := range w.acmeUsers {
		w.acmeNames = append(w.acmeNames, `"lastName":"`+u.LastName+`"`)
	}

	dave := apiUser{Username: "dave", FirstName: "Dave", LastName: "Other", Company: "Beta LLC", TimeZone: "Europe/London"}
	dave.ID = createUser(t, db, w.beta, "--first", "Dave", "--last", "Other", "--username", "dave", "--timezone", "Europe/London")
	w.betaUsers = []apiUser{dave}
	for i := range w.acmeUsers {
		fill(&w.acmeUsers[i])
	}
	fill(&w.betaUsers[0])

	// Lines: --users given out of order; formatted numbers are normalized.
	lines := []struct {
		account int64
		flags   []string
		want    lineOut
	}{
		{w.acme, []string{"--number", "(415) 555-0100", "--name", "Main"},
			lineOut{Number: "14155550100", Name: "Main", UserIDs: []int64{}, SMSEnabled: true}},
		{w.acme, []string{"--number", "415.555.0101", "--name", "Bob's line", "--users", ids(alice2.ID, bob.ID), "--bulk"},
			lineOut{Number: "14155550101", Name: "Bob's line", UserIDs: []int64{alice2.ID, bob.ID}, BulkEnabled: true, SMSEnabled: true}},
		{w.acme, []string{"--number", "4155550102", "--name", "Fax", "--users", ids(bob.ID), "--no-sms"},
			lineOut{Number: "14155550102", Name: "Fax", UserIDs: []int64{bob.ID}, SMSEnabled: false}},
		{w.acme, []string{"--number", "+1 415 555 0103"},
			lineOut{Number: "14155550103", UserIDs: []int64{}, SMSEnabled: true}},
		{w.beta, []string{"--number", "212-555-0100", "--name", "Beta main", "--users", ids(dave.ID)},
			lineOut{Number: "12125550100", Name: "Beta main", UserIDs: []int64{dave.ID}, SMSEnabled: true}},
	}
	for _, l := range lines {
		got := createLine(t, db, l.account, l.flags...)
		l.want.ID, l.want.Account = got.ID, l.account
		if !reflect.DeepEqual(got, l.want) {
			t.Fatalf("line create %v --json:\n got %+v\nwant %+v", l.flags, got, l.want)
		}
		if l.account == w.acme {
			w.acmeNumbers = append(w.acmeNumbers, got.Number)
		}
		if !got.SMSEnabled {
			continue
		}
		ids := slices.Clone(got.UserIDs)
		slices.Sort(ids)
		al := apiLine{Number: got.Number, Name: got.Name, UserIDs: ids, BulkEnabled: got.BulkEnabled}
		if l.account == w.acme {
			w.acmeLines = append(w.acmeLines, al)
		} else {
			w.betaLines = append(w.betaLines, al)
		}
	}

	w.keys["acme"] = createKey(t, db, w.acme, "acme reader", "users:read,sms:read")
	w.keys["acme-sms"] = createKey(t, db, w.acme, "acme sms only", "sms:read")
	w.keys["acme-users"] = createKey(t, db, w.acme, "acme users only", "users:read")
	w.keys["beta"] = createKey(t, db, w.beta, "beta all", "all")

	// key list shows the keys, never their secrets.
	stdout, exit := cli(t, db, "key", "list", "--account", fmt.Sprint(w.acme))
	var list struct {
		Keys []struct {
			ID      int64    `json:"id"`
			Name    string   `json:"name"`
			Prefix  string   `json:"prefix"`
			Scopes  []string `json:"scopes"`
			Revoked bool     `json:"revoked"`
		} `json:"keys"`
	}
	if exit != 0 || decodeOne(stdout, &list) != nil {
		t.Fatalf("key list --json: exit %d, stdout %s; want exit 0 and one JSON object", exit, stdout)
	}
	if len(list.Keys) != 3 {
		t.Errorf("key list: got %d keys, want 3 (acme's keys only)\n%s", len(list.Keys), stdout)
	}
	for _, name := range []string{"acme", "acme-sms", "acme-users", "beta"} {
		if secret := w.keys[name].Key; strings.Contains(stdout, secret) {
			t.Errorf("key list prints the secret of key %q; want only its prefix", name)
		}
	}
	for _, k := range list.Keys {
		if k.Revoked || k.Prefix == "" {
			t.Errorf("key list: key %d: got revoked=%t prefix=%q, want not revoked and a prefix", k.ID, k.Revoked, k.Prefix)
		}
	}
	return w
}

// fill makes nil lists empty and a missing time zone UTC, as the API
// returns them.
func fill(u *apiUser) {
	for _, l := range []*[]string{&u.Extensions, &u.Lines, &u.Numbers, &u.Voicemails} {
		if *l == nil {
			*l = []string{}
		}
	}
	if u.TimeZone == "" {
		u.TimeZone = "UTC"
	}
}

// getUsers GETs /users and checks that every element has every field.
func getUsers(t *testing.T, base, key string) []apiUser {
	t.Helper()
	raw := getData[[]json.RawMessage](t, base+apiPrefix+"/users", key)
	return decodeAll[apiUser](t, "GET /users", raw, userFields)
}

// getLines GETs /sms/lines and returns them sorted by number (the contract
// does not fix their order), each with every field.
func getLines(t *testing.T, base, key string) []apiLine {
	t.Helper()
	raw := getData[[]json.RawMessage](t, base+apiPrefix+"/sms/lines", key)
	lines := decodeAll[apiLine](t, "GET /sms/lines", raw, lineFields)
	slices.SortFunc(lines, func(a, b apiLine) int { return strings.Compare(a.Number, b.Number) })
	for i := range lines {
		slices.Sort(lines[i].UserIDs) // a set
	}
	return lines
}

func decodeAll[T any](t *testing.T, what string, raw []json.RawMessage, fields []string) []T {
	t.Helper()
	out := make([]T, len(raw))
	for i, r := range raw {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(r, &m); err != nil {
			t.Fatalf("%s: element %d is not an object: %s", what, i, r)
		}
		for _, f := range fields {
			if v, ok := m[f]; !ok || string(v) == "null" {
				t.Errorf("%s: element %d: field %q got %s, want present and not null\n%s", what, i, f, v, r)
			}
		}
		if err := json.Unmarshal(r, &out[i]); err != nil {
			t.Fatalf("%s: element %d: %v\n%s", what, i, err, r)
		}
	}
	return out
}

// ---- scenario 1: provision through the CLI, read over HTTP ----

func TestProvisionedAccountsOverHTTP(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, db string) {
		w := provision(t, db)
		base := startServer(t, db)

		t.Run("users", func(t *testing.T) {
			got := getUsers(t, base, w.keys["acme"].Key)
			if len(got) != len(w.acmeUsers) {
				t.Fatalf("GET /users: got %d users, want %d\n got %s\nwant %s", len(got), len(w.acmeUsers), jsonString(got), jsonString(w.acmeUsers))
			}
			for i := range got {
				if !reflect.DeepEqual(got[i], w.acmeUsers[i]) {
					t.Errorf("GET /users [%d] (order: last, first, id):\n got %s\nwant %s", i, jsonString(got[i]), jsonString(w.acmeUsers[i]))
				}
			}
		})

		t.Run("lines", func(t *testing.T) {
			got := getLines(t, base, w.keys["acme"].Key)
			if !reflect.DeepEqual(got, w.acmeLines) {
				t.Errorf("GET /sms/lines (SMS-capable lines only, by number):\n got %s\nwant %s", jsonString(got), jsonString(w.acmeLines))
			}
		})

		t.Run("accounts are isolated", func(t *testing.T) {
			beta := w.keys["beta"].Key
			if got := getUsers(t, base, beta); !reflect.DeepEqual(got, w.betaUsers) {
				t.Errorf("GET /users with beta's key:\n got %s\nwant %s", jsonString(got), jsonString(w.betaUsers))
			}
			if got := getLines(t, base, beta); !reflect.DeepEqual(got, w.betaLines) {
				t.Errorf("GET /sms/lines with beta's key:\n got %s\nwant %s", jsonString(got), jsonString(w.betaLines))
			}
			for _, path := range []string{"/users", "/sms/lines"} {
				body := string(request(t, http.MethodGet, base+apiPrefix+path, "Bearer "+beta).body)
				for _, leak := range append(slices.Clone(w.acmeNumbers), w.acmeNames...) {
					if strings.Contains(body, leak) {
						t.Errorf("GET %s with beta's key shows acme's %q:\n%s", path, leak, body)
					}
				}
			}
			for _, u := range getUsers(t, base, w.keys["acme"].Key) {
				if u.ID == w.betaUsers[0].ID {
					t.Errorf("GET /users with acme's key shows beta's user %d", u.ID)
				}
			}
		})
	})
}

// ---- scenario 2: API errors ----

// errorEnvelope checks r is the error envelope with type want.
func errorEnvelope(t *testing.T, what string, r response, wantStatus int, wantType string) (scope string) {
	t.Helper()
	if r.status != wantStatus {
		t.Errorf("%s: status got %d, want %d\nbody: %s", what, r.status, wantStatus, r.body)
	}
	var env struct {
		Error *struct {
			Type    string  `json:"type"`
			Message string  `json:"message"`
			Scope   *string `json:"scope"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil || env.Error == nil {
		t.Errorf("%s: body got %s, want {\"error\": {\"type\", \"message\"}}", what, r.body)
		return ""
	}
	if env.Error.Type != wantType || env.Error.Message == "" {
		t.Errorf("%s: error got type %q message %q, want type %q and a message", what, env.Error.Type, env.Error.Message, wantType)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type got %q, want application/json", what, ct)
	}
	if env.Error.Scope != nil {
		return *env.Error.Scope
	}
	return ""
}

// unauthenticated checks a 401 and its RFC 6750 challenge.
func unauthenticated(t *testing.T, what string, r response, scope string) {
	t.Helper()
	errorEnvelope(t, what, r, http.StatusUnauthorized, "unauthenticated")
	ch := r.header.Get("WWW-Authenticate")
	for _, want := range []string{"Bearer ", "realm=", `error="invalid_token"`, `scope="` + scope + `"`} {
		if !strings.Contains(ch, want) {
			t.Errorf("%s: WWW-Authenticate got %q, want it to contain %s", what, ch, want)
		}
	}
}

func TestAPIErrors(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, db string) {
		acme := createAccount(t, db, "Acme Corp")
		full := createKey(t, db, acme, "full", "users:read,sms:read")
		smsOnly := createKey(t, db, acme, "sms only", "sms:read")
		usersOnly := createKey(t, db, acme, "users only", "users:read")
		victim := createKey(t, db, acme, "to revoke", "users:read,sms:read")
		base := startServer(t, db)
		api := base + apiPrefix

		t.Run("unauthenticated", func(t *testing.T) {
			cases := []struct {
				name, path, authorization, scope string
			}{
				{"no credential", "/users", "", "users:read"},
				{"basic scheme", "/users", "Basic dXNlcjpwYXNz", "users:read"},
				{"valid key under another scheme", "/users", "Token " + full.Key, "users:read"},
				{"empty bearer", "/users", "Bearer ", "users:read"},
				{"unknown key", "/users", "Bearer sbk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "users:read"},
				{"not a key", "/users", "Bearer not-a-key", "users:read"},
				{"no credential on lines", "/sms/lines", "", "sms:read"},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					r := request(t, http.MethodGet, api+c.path, c.authorization)
					unauthenticated(t, "GET "+c.path+" ("+c.name+")", r, c.scope)
				})
			}
		})

		t.Run("insufficient scope", func(t *testing.T) {
			cases := []struct {
				path, key, scope string
			}{
				{"/users", smsOnly.Key, "users:read"},
				{"/sms/lines", usersOnly.Key, "sms:read"},
			}
			for _, c := range cases {
				what := "GET " + c.path + " with a key lacking " + c.scope
				r := request(t, http.MethodGet, api+c.path, "Bearer "+c.key)
				if got := errorEnvelope(t, what, r, http.StatusForbidden, "insufficient_scope"); got != c.scope {
					t.Errorf("%s: error.scope got %q, want %q", what, got, c.scope)
				}
			}
		})

		t.Run("routing", func(t *testing.T) {
			cases := []struct {
				method, url string
				status      int
				typ         string
				allow       string // a method Allow must list, for 405
			}{
				{http.MethodGet, api + "/nope", http.StatusNotFound, "not_found", ""},
				{http.MethodGet, api + "/users/42/nope", http.StatusNotFound, "not_found", ""},
				{http.MethodGet, base + "/nope", http.StatusNotFound, "not_found", ""},
				{http.MethodDelete, api + "/users", http.StatusMethodNotAllowed, "invalid_request", "GET"},
				{http.MethodPost, api + "/sms/lines", http.StatusMethodNotAllowed, "invalid_request", "GET"},
			}
			for _, c := range cases {
				what := c.method + " " + strings.TrimPrefix(c.url, base)
				r := request(t, c.method, c.url, "Bearer "+full.Key)
				errorEnvelope(t, what, r, c.status, c.typ)
				if c.allow != "" {
					allow := strings.Split(strings.ReplaceAll(r.header.Get("Allow"), " ", ""), ",")
					if !slices.Contains(allow, c.allow) || slices.Contains(allow, c.method) {
						t.Errorf("%s: Allow got %q, want it to list %s and not %s", what, r.header.Get("Allow"), c.allow, c.method)
					}
				}
				if r.header.Get("X-Request-Id") == "" {
					t.Errorf("%s: X-Request-Id got none, want one", what)
				}
			}
		})

		t.Run("key revoked while serving", func(t *testing.T) {
			// Use the key first, so that any cache of it is warm.
			for _, path := range []string{"/users", "/sms/lines"} {
				if r := request(t, http.MethodGet, api+path, "Bearer "+victim.Key); r.status != http.StatusOK {
					t.Fatalf("GET %s before revoking: status got %d, want 200\nbody: %s", path, r.status, r.body)
				}
			}
			var out struct {
				ID      int64 `json:"id"`
				Revoked bool  `json:"revoked"`
			}
			cliJSON(t, db, &out, "key", "revoke", "--account", fmt.Sprint(acme), "--id", fmt.Sprint(victim.ID))
			if out.ID != victim.ID || !out.Revoked {
				t.Errorf("key revoke --json: got %+v, want id %d revoked true", out, victim.ID)
			}
			// The very next request must be refused: no retry, no wait. On
			// PostgreSQL the server learns of the CLI's commit from its
			// notification (docs/decisions.md, "The read cache on PostgreSQL
			// listens for changes"), so there the refusal must come within
			// notifyBound; after the first one, every request is refused.
			if !strings.HasPrefix(db, "sqlite") {
				for start := time.Now(); time.Since(start) < notifyBound; time.Sleep(10 * time.Millisecond) {
					if request(t, http.MethodGet, api+"/users", "Bearer "+victim.Key).status == http.StatusUnauthorized {
						break
					}
				}
			}
			unauthenticated(t, "GET /users right after key revoke", request(t, http.MethodGet, api+"/users", "Bearer "+victim.Key), "users:read")
			unauthenticated(t, "GET /sms/lines right after key revoke", request(t, http.MethodGet, api+"/sms/lines", "Bearer "+victim.Key), "sms:read")
			// Other keys of the account are unaffected.
			if r := request(t, http.MethodGet, api+"/users", "Bearer "+full.Key); r.status != http.StatusOK {
				t.Errorf("GET /users with another key after the revoke: status got %d, want 200", r.status)
			}
			stdout, _ := cli(t, db, "key", "list", "--account", fmt.Sprint(acme))
			var list struct {
				Keys []struct {
					ID      int64 `json:"id"`
					Revoked bool  `json:"revoked"`
				} `json:"keys"`
			}
			if err := decodeOne(stdout, &list); err != nil {
				t.Fatalf("key list --json: %v\n%s", err, stdout)
			}
			for _, k := range list.Keys {
				if want := k.ID == victim.ID; k.Revoked != want {
					t.Errorf("key list: key %d revoked got %t, want %t", k.ID, k.Revoked, want)
				}
			}
		})
	})
}

// ---- scenario 3: CLI errors ----

func TestCLIErrors(t *testing.T) {
	t.Parallel()
	// A plain file path (not sqlite://) is a valid --db too.
	db := t.TempDir() + "/cli.db"
	acme := fmt.Sprint(createAccount(t, db, "Acme Corp"))
	beta := createAccount(t, db, "Beta LLC")
	createUser(t, db, beta, "--first", "Dave", "--last", "Other", "--username", "taken")
	daveID := createUser(t, db, beta, "--first", "Eve", "--last", "Other")

	cases := []struct {
		name string
		args []string // --db and --json are added
		exit int      // README: bad arguments 2, failures 1
	}{
		{"unknown command", []string{"frobnicate"}, 2},
		{"unknown flag", []string{"account", "create", "--name", "x", "--colour", "red"}, 2},
		{"stray argument", []string{"account", "list", "extra"}, 2},
		{"missing --name", []string{"account", "create"}, 2},
		{"bad number for --account", []string{"user", "create", "--account", "abc", "--first", "A", "--last", "B"}, 2},
		{"bad number for --users", []string{"line", "create", "--account", acme, "--number", "4155550100", "--users", "1,x"}, 2},
		{"not a phone number", []string{"line", "create", "--account", acme, "--number", "call me"}, 2},
		{"unknown scope", []string{"key", "create", "--account", acme, "--name", "k", "--scopes", "users:read,users:write"}, 2},
		{"unknown permission", []string{"role", "create", "--account", acme, "--name", "r", "--permissions", "users:all,sudo"}, 2},
		{"role set: unknown permission", []string{"role", "set", "--account", acme, "--name", "r", "--permissions", "sudo"}, 2},
		{"role set: nonexistent role", []string{"role", "set", "--account", acme, "--name", "ghost", "--permissions", "webhooks"}, 1},
		{"unknown time zone", []string{"user", "create", "--account", acme, "--first", "A", "--last", "B", "--timezone", "Mars/Olympus"}, 2},
		{"nonexistent account: user", []string{"user", "create", "--account", "999", "--first", "A", "--last", "B"}, 1},
		{"nonexistent account: key", []string{"key", "create", "--account", "999", "--name", "k", "--scopes", "all"}, 1},
		{"nonexistent account: rate list", []string{"rate", "list", "--account", "999"}, 1},
		{"nonexistent account: ledger list", []string{"ledger", "list", "--account", "999"}, 1},
		{"nonexistent account: line list", []string{"line", "list", "--account", "999"}, 1},
		{"rate prefix starting with 0", []string{"rate", "set", "--account", acme, "--prefix", "044", "--sms", "0.01", "--mms", "0.02"}, 2},
		{"rate too large", []string{"rate", "set", "--account", acme, "--prefix", "44", "--sms", "99999999999999", "--mms", "0.02"}, 2},
		{"rate above the cap", []string{"rate", "set", "--account", acme, "--prefix", "44", "--sms", "0.01", "--mms", "1000.000001"}, 2},
		{"nonexistent role", []string{"user", "create", "--account", acme, "--first", "A", "--last", "B", "--role", "ghost"}, 1},
		{"nonexistent key", []string{"key", "revoke", "--account", acme, "--id", "999"}, 1},
		{"username taken in another account", []string{"user", "create", "--account", acme, "--first", "A", "--last", "B", "--username", "taken"}, 1},
		{"line assigned to another account's user", []string{"line", "create", "--account", acme, "--number", "4155550199", "--users", fmt.Sprint(daveID)}, 1},
		{"serve with an unknown log format", []string{"serve", "--listen", "127.0.0.1:0", "--log-format", "yaml"}, 2},
		{"serve with a public URL that is not one", []string{"serve", "--listen", "127.0.0.1:0", "--public-url", "notaurl"}, 2},
		{"serve with an ftp public URL", []string{"serve", "--listen", "127.0.0.1:0", "--public-url", "ftp://sb.example"}, 2},
		{"serve with a public URL with a query", []string{"serve", "--listen", "127.0.0.1:0", "--public-url", "https://sb.example/?q=1"}, 2},
		{"serve with a relative media directory", []string{"serve", "--listen", "127.0.0.1:0", "--media", "file://relative/dir"}, 2},
		{"serve with an unknown media scheme", []string{"serve", "--listen", "127.0.0.1:0", "--media", "http://x/y"}, 2},
		{"serve with a negative reconcile-after", []string{"serve", "--listen", "127.0.0.1:0", "--reconcile-after", "-1s"}, 2},
		{"serve with reconcile-after shorter than the carrier timeout", []string{"serve", "--listen", "127.0.0.1:0", "--reconcile-after", "10s"}, 2},
		{"serve with reconcile-after equal to the carrier timeout", []string{"serve", "--listen", "127.0.0.1:0", "--reconcile-after", "5s", "--carrier-timeout", "5s"}, 2},
		{"serve with a zero carrier timeout", []string{"serve", "--listen", "127.0.0.1:0", "--carrier-timeout", "0s"}, 2},
		{"serve on an address without a port", []string{"serve", "--listen", "bogus"}, 2},
		{"serve on an invalid address", []string{"serve", "--listen", "127.0.0.1:99999"}, 1},
		{"database directory missing", []string{"account", "list", "--db", t.TempDir() + "/no/such/dir/x.db"}, 1},
		{"postgres unreachable", []string{"account", "list", "--db", "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=5"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, exit := run(t, cliArgs(db, c.args)...)
			cmdline := "switchboard " + strings.Join(c.args, " ")
			if exit != c.exit {
				t.Errorf("%s: exit status got %d, want %d\nstderr: %s", cmdline, exit, c.exit, stderr)
			}
			if stdout != "" {
				t.Errorf("%s: stdout got %q, want nothing on failure", cmdline, stdout)
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if stderr == "" || !strings.HasSuffix(stderr, "\n") || len(lines) != 1 || strings.TrimSpace(lines[0]) == "" {
				t.Errorf("%s: stderr got %q, want exactly one non-empty line", cmdline, stderr)
			}
			for _, bad := range []string{"goroutine", "panic"} {
				if strings.Contains(stderr, bad) {
					t.Errorf("%s: stderr got %q, want no %q", cmdline, stderr, bad)
				}
			}
		})
	}

	// Nothing a failed command tried was half-done.
	t.Cleanup(func() {
		stdout, exit := cli(t, db, "account", "list")
		var list struct {
			Accounts []struct {
				ID int64 `json:"id"`
			} `json:"accounts"`
		}
		if exit != 0 || decodeOne(stdout, &list) != nil || len(list.Accounts) != 2 {
			t.Errorf("account list after the failures: exit %d, stdout %s; want exit 0 and the 2 accounts", exit, stdout)
		}
		stdout, _ = cli(t, db, "line", "list", "--account", acme)
		if strings.Contains(stdout, "14155550199") || strings.Contains(stdout, "14155550100") {
			t.Errorf("line list after failed line creates: got %s, want no lines", stdout)
		}
	})
}

// TestCLIConfiguration checks where the CLI takes its common settings from:
// flags before or after the command, and SWITCHBOARD_* variables, which flags
// override.
func TestCLIConfiguration(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	envDB, flagDB := "sqlite://"+dir+"/env.db", dir+"/flag.db"
	createAccount(t, flagDB, "From Flag")
	env := childEnv("SWITCHBOARD_DB="+envDB, "SWITCHBOARD_JSON=true")
	cases := []struct {
		name string
		env  []string
		args []string
		want string // the one account's name
	}{
		{"flags before the command", childEnv(), []string{"--db", flagDB, "--json", "account", "list"}, "From Flag"},
		{"a flag without a value first", childEnv(), []string{"--db-pgbouncer", "--db", flagDB, "--json", "account", "list"}, "From Flag"},
		{"variables", env, []string{"account", "create", "--name", "From Env"}, "From Env"},
		{"variables, listed", env, []string{"account", "list"}, "From Env"},
		{"flag overrides variable", env, []string{"account", "list", "--db", flagDB}, "From Flag"},
	}
	for _, c := range cases {
		stdout, stderr, exit := runEnv(t, c.env, c.args...)
		var out struct {
			Name     string `json:"name"`
			Accounts []struct {
				Name string `json:"name"`
			} `json:"accounts"`
		}
		if exit != 0 || decodeOne(stdout, &out) != nil {
			t.Errorf("%s: switchboard %s: got exit %d stdout %q stderr %q, want exit 0 and one JSON object", c.name, strings.Join(c.args, " "), exit, stdout, stderr)
			continue
		}
		got := out.Name
		if len(out.Accounts) == 1 {
			got = out.Accounts[0].Name
		} else if out.Accounts != nil {
			got = fmt.Sprintf("%d accounts", len(out.Accounts))
		}
		if got != c.want {
			t.Errorf("%s: switchboard %s: got account %q, want %q\nstdout: %s", c.name, strings.Join(c.args, " "), got, c.want, stdout)
		}
	}
	// A variable that does not parse is refused, not replaced by the default.
	for _, bad := range []struct{ env, cmd string }{{"SWITCHBOARD_JSON=yes", "account"}, {"SWITCHBOARD_RECONCILE_AFTER=soon", "serve"}} {
		args := []string{"--db", flagDB, bad.cmd, "list"}
		if bad.cmd == "serve" {
			args = []string{"--db", flagDB, "serve", "--listen", "127.0.0.1:0"}
		}
		_, stderr, exit := runEnv(t, childEnv(bad.env), args...)
		name, _, _ := strings.Cut(bad.env, "=")
		if exit != 2 || !strings.Contains(stderr, name) {
			t.Errorf("%s: got exit %d, stderr %q; want 2 naming the variable", bad.env, exit, stderr)
		}
	}
}

// ---- scenario 4: CLI changes are visible to a running server at once ----

func TestCLIChangesVisibleToRunningServer(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, db string) {
		acme := createAccount(t, db, "Acme Corp")
		key := createKey(t, db, acme, "reader", "users:read,sms:read").Key
		base := startServer(t, db)

		for _, path := range []string{"/users", "/sms/lines"} {
			r := request(t, http.MethodGet, base+apiPrefix+path, "Bearer "+key)
			var env struct {
				Data json.RawMessage `json:"data"`
			}
			if r.status != http.StatusOK || json.Unmarshal(r.body, &env) != nil || string(env.Data) != "[]" {
				t.Errorf("GET %s on an empty account: got %d %s, want 200 with data []", path, r.status, r.body)
			}
		}

		// Each round reads first (warming any cache), changes through the
		// CLI, and requires the very next request to show the change: on
		// SQLite the server checks the file's commit counter on every read;
		// on PostgreSQL the CLI's commit notifies the server, which drops
		// its cache when the notification arrives (within 100 ms, issue 16),
		// so there the change must show within notifyBound.
		seen := func(what string, read func() string, want string) {
			t.Helper()
			start := time.Now()
			for {
				got := read()
				if got == want {
					return
				}
				if strings.HasPrefix(db, "sqlite") || time.Since(start) > notifyBound {
					t.Errorf("%s: got %s, want %s (waited %v)", what, got, want, time.Since(start).Round(time.Millisecond))
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		var wantUsers []int64
		var wantLines []string
		for i := range 2 {
			getUsers(t, base, key)
			getLines(t, base, key)

			id := createUser(t, db, acme, "--first", "New", "--last", fmt.Sprintf("User%d", i))
			wantUsers = append(wantUsers, id)
			seen(fmt.Sprintf("round %d: GET /users right after user create", i), func() string {
				var got []int64
				for _, u := range getUsers(t, base, key) {
					got = append(got, u.ID)
				}
				return fmt.Sprint(got)
			}, fmt.Sprint(wantUsers))

			number := fmt.Sprintf("1415555020%d", i)
			createLine(t, db, acme, "--number", number, "--users", ids(id))
			wantLines = append(wantLines, number)
			seen(fmt.Sprintf("round %d: GET /sms/lines right after line create", i), func() string {
				var got []string
				for _, l := range getLines(t, base, key) {
					got = append(got, l.Number)
				}
				return fmt.Sprint(got)
			}, fmt.Sprint(wantLines))
		}

		// A key and an account made while the server runs work at once.
		fresh := createKey(t, db, acme, "fresh", "users:read").Key
		if got := getUsers(t, base, fresh); len(got) != len(wantUsers) {
			t.Errorf("GET /users with a key created while serving: got %d users, want %d", len(got), len(wantUsers))
		}
		other := createAccount(t, db, "Other Inc")
		otherKey := createKey(t, db, other, "other", "users:read").Key
		createUser(t, db, other, "--first", "Olga", "--last", "Other")
		if got := getUsers(t, base, otherKey); len(got) != 1 || got[0].Company != "Other Inc" {
			t.Errorf("GET /users for an account created while serving: got %s, want Olga of Other Inc", jsonString(got))
		}
	})
}

// TestServerWritesSurviveOtherProcesses runs CLI processes against the
// database of a running server, which has already read through its cache,
// and requires every write the server acknowledged afterwards to be visible
// to the next process. A process that closes a descriptor of the -shm file
// drops every POSIX lock it holds on it, SQLite's included; if the server did
// that, a CLI process would take itself for the database's only user and, on
// closing, checkpoint and delete the WAL the server is still appending to.
func TestServerWritesSurviveOtherProcesses(t *testing.T) {
	t.Parallel()
	db := storetest.DSN(t, store.SQLite)
	path := strings.TrimPrefix(db, "sqlite://")
	acme := createAccount(t, db, "Acme Corp")
	createLine(t, db, acme, "--number", "14155550100")
	if _, exit := cli(t, db, "rate", "set", "--account", fmt.Sprint(acme), "--prefix", "1", "--sms", "0.0079", "--mms", "0.02"); exit != 0 {
		t.Fatalf("rate set: exit %d", exit)
	}
	if _, exit := cli(t, db, "rate", "set", "--account", fmt.Sprint(acme), "--prefix", "7", "--sms", "1000", "--mms", "1000.000000"); exit != 0 {
		t.Fatalf("rate set at the $1,000 cap: exit %d", exit)
	}
	key := createKey(t, db, acme, "sender", "sms:send").Key
	base := startServer(t, db)
	send := func() {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, base+apiPrefix+"/sms/messages",
			strings.NewReader(`{"from":"14155550100","to":["2125550100"],"message":"hello"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		c := apitest.Client(t)
		c.Timeout = httpTimeout
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("send: %d", resp.StatusCode)
		}
	}
	send()
	// SQLite's dead-man switch: every process using the database holds a
	// read lock on byte 128 of the -shm file, and a process that finds no
	// such lock takes itself for the first user and rebuilds the WAL index.
	requireDeadManSwitch(t, path+"-shm")
	for i := range 3 {
		if _, exit := cli(t, db, "account", "list"); exit != 0 {
			t.Fatalf("account list: exit %d", exit)
		}
		send()
		var ledger struct {
			Count int `json:"count"`
		}
		cliJSON(t, db, &ledger, "ledger", "list", "--account", fmt.Sprint(acme))
		if ledger.Count != i+2 {
			t.Fatalf("round %d: another process sees %d charges, want the %d the server acknowledged", i, ledger.Count, i+2)
		}
		if _, err := os.Stat(path + "-wal"); err != nil {
			t.Fatalf("round %d: the server's WAL is gone: %v", i, err)
		}
		requireDeadManSwitch(t, path+"-shm")
	}
}

// requireDeadManSwitch fails unless another process holds SQLite's read lock
// on the dead-man-switch byte of shm.
func requireDeadManSwitch(t *testing.T, shm string) {
	t.Helper()
	f, err := os.OpenFile(shm, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Only F_GETLK here: closing this descriptor drops no lock of ours.
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart, Start: 128, Len: 1}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		t.Fatal(err)
	}
	if lk.Type != syscall.F_RDLCK {
		t.Fatalf("no process holds the dead-man switch of %s (lock type %d): the server has lost its SQLite locks", shm, lk.Type)
	}
}

// ---- scenario 5: demo ----

func TestDemo(t *testing.T) {
	t.Parallel()
	// The demo makes its database under TMPDIR: keep it in the test's directory.
	p := start(t, childEnv("TMPDIR="+t.TempDir()), "demo", "--listen", "127.0.0.1:0", "--json")
	p.startWithin = demoStartTimeout
	line := p.waitLine(p.stdout, "a JSON object on stdout", func(string) bool { return true })
	var out struct {
		BaseURL string `json:"baseUrl"`
		Key     string `json:"key"`
	}
	if err := decodeOne(line, &out); err != nil || !strings.HasPrefix(out.BaseURL, "http://127.0.0.1:") || out.Key == "" {
		t.Fatalf("demo --json: first stdout line got %q (%v), want {\"baseUrl\": \"http://127.0.0.1:…\", \"key\": …}", line, err)
	}
	if !strings.HasSuffix(out.BaseURL, apiPrefix) {
		t.Errorf("demo --json: baseUrl got %q, want it to end in %s", out.BaseURL, apiPrefix)
	}
	for _, path := range []string{"/users", "/sms/lines"} {
		data := getData[[]json.RawMessage](t, out.BaseURL+path, out.Key)
		if len(data) == 0 {
			t.Errorf("demo: GET %s: got no data, want the demo's %s", path, strings.TrimPrefix(path, "/sms/"))
		}
	}
	p.afterStop = func() {
		var v map[string]any
		if err := decodeOne(p.stdout.String(), &v); err != nil {
			t.Errorf("demo --json: stdout got %q, want exactly one JSON object (%v)", p.stdout.String(), err)
		}
	}
}

// The demo's first screen: its webhook receiver prints a tally, not every
// delivery (the seeded inbox alone is over a thousand deliveries at start,
// which scrolled the key and commands out of sight), only once the banner,
// which comes after the start's work, is out with the essentials at its end.
func TestDemoFirstScreen(t *testing.T) {
	t.Parallel()
	p := start(t, childEnv("TMPDIR="+t.TempDir()), "demo", "--listen", "127.0.0.1:0")
	p.startWithin = demoStartTimeout
	p.waitLine(p.stdout, "the banner's last line", func(l string) bool { return l == "Press Ctrl-C to stop." })
	lines := strings.Split(p.stdout.String(), "\n")
	begins := slices.Index(lines, "Switchboard demo is running.")
	if begins < 0 {
		t.Fatalf("demo: no banner in stdout:\n%s", p.stdout.String())
	}
	if before := strings.TrimSpace(strings.Join(lines[:begins], "\n")); before != "" {
		t.Errorf("demo: stdout before the banner got %q, want nothing (the banner comes first)", before)
	}
	for i, l := range lines {
		if strings.HasPrefix(l, "[webhook") && (!strings.HasPrefix(l, "[webhooks] ") || !strings.Contains(l, " deliveries received")) {
			t.Errorf("demo: stdout line %d got %q, want only the receiver's one-line tally", i+1, l)
		}
	}
	tail := strings.Join(lines[max(0, len(lines)-12):], "\n")
	for _, want := range []string{"In short:", "key sbk_", "/app/", "maria / demo-password", "/api/docs"} {
		if !strings.Contains(tail, want) {
			t.Errorf("demo: the banner's end lacks %q:\n%s", want, tail)
		}
	}
}

// ---- scenario 6: operations endpoints ----

func TestOperationsEndpoints(t *testing.T) {
	t.Parallel()
	base, private := startServerAddrs(t, storetest.DSN(t, store.SQLite), "--metrics-addr", "127.0.0.1:0")
	if private == "" {
		t.Fatal(`--metrics-addr 127.0.0.1:0: the "serving" log line names no metrics_addr`)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		r := request(t, http.MethodGet, base+path, "")
		if r.status != http.StatusOK {
			t.Errorf("GET %s: status got %d, want 200\nbody: %s", path, r.status, r.body)
		}
		if r.header.Get("X-Request-Id") == "" {
			t.Errorf("GET %s: X-Request-Id got none, want one", path)
		}
	}
	// A path with a number in it must not become a metric label.
	request(t, http.MethodGet, base+apiPrefix+"/users/8675309", "")
	// Metrics and profiles are on the private listener only.
	for _, path := range []string{"/metrics", "/debug/pprof/"} {
		if r := request(t, http.MethodGet, base+path, ""); r.status != http.StatusNotFound || !strings.Contains(string(r.body), `"not_found"`) {
			t.Errorf("GET %s on the public listener: status got %d, want 404 not_found\nbody: %s", path, r.status, r.body)
		}
	}
	if r := request(t, http.MethodGet, private+"/debug/pprof/", ""); r.status != http.StatusOK {
		t.Errorf("GET /debug/pprof/ on the metrics listener: status got %d, want 200", r.status)
	}
	r := request(t, http.MethodGet, private+"/metrics", "")
	if r.status != http.StatusOK {
		t.Fatalf("GET /metrics on the metrics listener: status got %d, want 200", r.status)
	}
	metrics := string(r.body)
	for _, want := range []string{"switchboard_http_requests_total", `route="GET /healthz"`, "switchboard_http_request_duration_seconds"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("GET /metrics: got no %s, want it\n%s", want, metrics)
		}
	}
	if strings.Contains(metrics, "8675309") {
		t.Errorf("GET /metrics: got the raw path 8675309 in a label, want route patterns only")
	}
}

// A --reconcile-after no longer than the carrier timeout would let a node
// abandon a message another node is still sending (the audit sent and
// charged twice with two nodes and a 9 s carrier): serve refuses it at start
// and says why. Before, it started.
func TestServeRefusesReconcileWithinCarrierTimeout(t *testing.T) {
	t.Parallel()
	db := t.TempDir() + "/sb.db"
	for _, args := range [][]string{
		{"serve", "--listen", "127.0.0.1:0", "--reconcile-after", "10s"},
		{"serve", "--listen", "127.0.0.1:0", "--reconcile-after", "9s", "--carrier-timeout", "9s"},
	} {
		_, stderr, exit := run(t, cliArgs(db, args)...)
		if exit != 2 || !strings.Contains(stderr, "--reconcile-after") || !strings.Contains(stderr, "--carrier-timeout") || !strings.Contains(stderr, "longer") {
			t.Errorf("switchboard %s: exit %d, stderr %q; want 2 and a message naming both flags", strings.Join(args, " "), exit, stderr)
		}
	}
}
