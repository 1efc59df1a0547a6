package httpapi_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store/storetest"
	"switchboard/internal/webhooks"
)

// TestWebhooksNeedTheRolePermission (issue 32): a subscription is a standing
// read of every event of the account, so every /webhooks route (taken from
// the route table: a route added later is covered) answers an OAuth token
// whose person's role lacks the Webhooks permission 403 permission_denied,
// with every scope and a role that grants everything else, and changes
// nothing; the same routes succeed for a person whose role has it, and for
// an API key, which is the account and has no role.
func TestWebhooksNeedTheRolePermission(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		routes := f.serveWebhooks(t, webhooks.New(webhooks.Config{Store: f.st, AllowHosts: webhooks.ParseAllowList("127.0.0.1")}))
		recv := newTestReceiver(t, http.StatusNoContent)
		acme := f.users["Alice"].AccountID
		token := func(perms string) string {
			t.Helper()
			p, err := domain.ParsePermissions(perms)
			must(t, err)
			u := storetest.User(t, f.st, acme, &storetest.UserOpts{FirstName: "U", LastName: perms, Permissions: &p})
			tok, err := userAccessToken(ctx, f.st, u.ID, auth.AllScopes...)
			must(t, err)
			return tok
		}
		key := f.keys["acme"]
		frontDesk := token("users:self,numbers:assigned")
		allButWebhooks := token("users:all,numbers:all,reports,recordings")
		admin := token("all")

		// The administrators' subscription, with a delivery (a test event)
		// and a recover job for the paths to name, made with the API key.
		api := func(method, path, cred, body string) (int, []byte) {
			t.Helper()
			status, _, b := f.do(t, method, "/api/public/v1"+path, cred, body)
			return status, b
		}
		newHook := func() string {
			w := f.createWebhook(t, key, `{"url":"`+recv.srv.URL+`/in","type":"AccountSMS","enabled":true}`)
			return strconv.FormatInt(w.ID, 10)
		}
		hook := newHook()
		status, b := api("POST", "/webhooks/"+hook+"/test", key, "")
		if status != 200 {
			t.Fatalf("test event with the API key: %d %s", status, b)
		}
		<-recv.got
		delivery := strconv.FormatInt(decodeInto[struct{ Data testDelivery }](t, b).Data.ID, 10)
		recoverBody := `{"since":"` + time.Now().Add(-time.Hour).UTC().Format(time.RFC3339) + `"}`
		status, b = api("POST", "/webhooks/"+hook+"/recover", key, recoverBody)
		if status != 202 {
			t.Fatalf("recover with the API key: %d %s", status, b)
		}
		recovery := strconv.FormatInt(decodeInto[struct{ Data struct{ ID int64 } }](t, b).Data.ID, 10)

		// path fills a route's parameters; a parameter this test does not
		// know fails it, so a new route is given one.
		path := func(r string, id string) string {
			p := strings.NewReplacer("{id}", id, "{deliveryId}", delivery, "{recoverId}", recovery).Replace(r)
			if strings.Contains(p, "{") {
				t.Fatalf("%s: a path parameter this test does not fill", r)
			}
			return p
		}
		bodies := map[string]string{
			"POST /webhooks":              `{"url":"` + recv.srv.URL + `/new","type":"AccountEndedCalls"}`,
			"PUT /webhooks/{id}":          `{"name":"renamed"}`,
			"PATCH /webhooks/{id}":        `{"description":"patched"}`,
			"POST /webhooks/{id}/recover": recoverBody,
		}
		var hookRoutes []string
		for _, r := range routes {
			if r.Path == "/webhooks" || strings.HasPrefix(r.Path, "/webhooks/") {
				hookRoutes = append(hookRoutes, r.Method+" "+r.Path)
			}
		}
		if len(hookRoutes) < 17 {
			t.Fatalf("%d webhook routes in the table (%v), want every one", len(hookRoutes), hookRoutes)
		}

		// What the administrators' subscription looks like, to the API key.
		state := func() string {
			t.Helper()
			var out []string
			for _, p := range []string{"/webhooks", "/webhooks/" + hook + "/secret", "/webhooks/" + hook + "/deliveries", "/webhooks/" + hook + "/recover/" + recovery} {
				status, b := api("GET", p, key, "")
				if status != 200 {
					t.Fatalf("GET %s with the API key: %d %s", p, status, b)
				}
				out = append(out, string(b))
			}
			return strings.Join(out, "\n")
		}
		before := state()
		for _, who := range []struct{ name, cred string }{{"front desk", frontDesk}, {"every permission but webhooks", allButWebhooks}} {
			for _, rt := range hookRoutes {
				method, p, _ := strings.Cut(rt, " ")
				status, b := api(method, path(p, hook), who.cred, bodies[rt])
				if e := decodeInto[errorEnvelope](t, b); status != 403 || e.Error.Type != "permission_denied" || !strings.Contains(e.Error.Message, "webhooks") {
					t.Errorf("%s: %s: %d %s, want 403 permission_denied", who.name, rt, status, b)
				}
			}
		}
		if after := state(); after != before {
			t.Errorf("refused requests changed the subscription:\nbefore %s\nafter  %s", before, after)
		}
		select {
		case r := <-recv.got:
			t.Errorf("a refused request sent %s to the subscription", r.URL)
		default:
		}

		// With the permission, and with the API key, every route answers.
		// The recover and the delete each take a subscription of their own:
		// the first's job is running, and the delete must come last.
		for _, who := range []struct{ name, cred string }{{"administrator", admin}, {"API key", key}} {
			own := map[string]string{"POST /webhooks/{id}/recover": newHook(), "DELETE /webhooks/{id}": newHook()}
			for _, rt := range hookRoutes {
				method, p, _ := strings.Cut(rt, " ")
				id := hook
				if o, ok := own[rt]; ok {
					id = o
				}
				status, b := api(method, path(p, id), who.cred, bodies[rt])
				if status/100 != 2 {
					t.Errorf("%s: %s: %d %s, want success", who.name, rt, status, b)
				}
			}
		}
	})
}
