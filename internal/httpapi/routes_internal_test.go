package httpapi

import (
	"slices"
	"testing"

	"switchboard/api"
	"switchboard/internal/auth"
	"switchboard/internal/calls"
	"switchboard/internal/search"
	"switchboard/internal/sms"
	"switchboard/internal/team"
)

// TestRoutesMatchDocument holds the route table and api/openapi.yaml to each
// other: every public route is documented with the scope it enforces, and
// every documented operation is served. A server with every optional
// capability configured registers every route.
func TestRoutesMatchDocument(t *testing.T) {
	doc, err := api.Load()
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{SMS: sms.New(sms.Config{}), Calls: calls.New(calls.Config{}), Search: search.New(search.Config{}), Team: team.New(team.Config{})})
	served := map[string]bool{}
	// The role permissions the table checks itself, and the routes that do.
	tableRoles, roleOf := map[string]bool{}, map[string]string{}
	for _, r := range s.apiRoutes {
		key := r.method + " " + r.path
		served[key] = true
		item := doc.Paths.Find(r.path)
		if item == nil {
			t.Errorf("%s is served but not in the document", key)
			continue
		}
		op := item.GetOperation(r.method)
		if op == nil {
			t.Errorf("%s is served but the document has no %s on the path", key, r.method)
			continue
		}
		// An operation that requires no scope (GET /me) says x-any-credential instead.
		if anyCredential := op.Extensions["x-any-credential"] == true; anyCredential != (r.scope == "") {
			t.Errorf("%s: document says x-any-credential %v, the route enforces scope %q", key, anyCredential, r.scope)
		} else if got := op.Extensions["x-required-scope"]; !anyCredential && got != string(r.scope) {
			t.Errorf("%s: document says x-required-scope %v, the route enforces %s", key, got, r.scope)
		}
		if r.role != "" {
			tableRoles[r.role], roleOf[key] = true, r.role
			if got := op.Extensions["x-role-permission"]; got != r.role {
				t.Errorf("%s: document says x-role-permission %v, the route table enforces %s", key, got, r.role)
			}
		}
	}
	// And the other way: an operation documented as needing a permission
	// the table checks is served with the check.
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			key := method + " " + path
			if want, _ := op.Extensions["x-role-permission"].(string); tableRoles[want] && roleOf[key] != want {
				t.Errorf("%s: document says x-role-permission %s, the route table does not check it", key, want)
			}
		}
	}
	if !tableRoles["Webhooks"] {
		t.Error("no route checks the Webhooks permission")
	}
	for _, path := range doc.Paths.InMatchingOrder() {
		if path == "/openapi.json" {
			continue // served outside the authenticated table
		}
		for method := range doc.Paths.Value(path).Operations() {
			if key := method + " " + path; !served[key] {
				t.Errorf("%s is documented but not served", key)
			}
		}
	}
	if len(served) == 0 || !slices.ContainsFunc(s.apiRoutes, func(r apiRoute) bool { return r.scope == auth.SMSSend }) {
		t.Fatal("no routes recorded")
	}
}
