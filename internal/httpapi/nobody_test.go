package httpapi_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"switchboard/internal/contacts"
	"testing"

	"switchboard/api"
	"switchboard/internal/auth"
	"switchboard/internal/httpapi"
	"switchboard/internal/inbox"
	"switchboard/internal/sms"
	"switchboard/internal/users"
	"switchboard/internal/webhooks"
)

// noBodyOperations lists every operation the OpenAPI document gives no
// request body, other than reads, with its path filled in: ids that name
// nothing, and numbers that are well formed.
func noBodyOperations(t *testing.T) []string {
	t.Helper()
	doc, err := api.Load()
	must(t, err)
	fill := strings.NewReplacer("{id}", "999999", "{line}", "14155550100", "{number}", "14155550199",
		"{draftId}", "no-such-draft", "{deliveryId}", "999999")
	var ops []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if method == http.MethodGet || method == http.MethodHead || op.RequestBody != nil {
				continue
			}
			ops = append(ops, method+" "+fill.Replace(path))
		}
	}
	slices.Sort(ops)
	// The operations issue 22 names must stay among them.
	for _, want := range []string{
		"POST /webhooks/999999/enable", "POST /webhooks/999999/disable", "POST /webhooks/999999/test",
		"POST /webhooks/999999/secret/rotate", "POST /webhooks/999999/deliveries/999999/redeliver",
		"DELETE /webhooks/999999", "DELETE /sms/templates/999999", "DELETE /sms/drafts/no-such-draft",
		"DELETE /sms/lines/14155550100/blocked/14155550199", "DELETE /sms/lines/14155550100/scheduled/999999",
		"DELETE /sms/conversations/14155550100/14155550199", "DELETE /sms/conversations/14155550100/14155550199/messages/999999",
		"POST /sms/conversations/14155550100/14155550199/reopen",
	} {
		if !slices.Contains(ops, want) {
			t.Errorf("%s is not among the operations without a request body: %v", want, ops)
		}
	}
	return ops
}

// TestNoBodyOperationsRefuseBodies sends every operation that takes no body
// a body with content: each is 400 invalid_request as an unknown field is
// anywhere else (before it, POST /webhooks/{id}/enable with {"bogus":1}
// answered 200), while an empty body, whitespace and {} are answered as no
// body at all.
func TestNoBodyOperationsRefuseBodies(t *testing.T) {
	ops := noBodyOperations(t)
	forEachEngine(t, func(t *testing.T, f *fixture) {
		// Every service, the inbox's too, so each operation answers for itself.
		log := slog.New(slog.DiscardHandler)
		srv := httptest.NewServer(httpapi.New(httpapi.Config{Store: f.st, Auth: &auth.Authenticator{Store: f.st}, Log: log,
			SMS: sms.New(sms.Config{Store: f.st, Log: log}), Users: users.New(users.Config{Store: f.st}),
			Webhooks: webhooks.New(webhooks.Config{Store: f.st}), Inbox: inbox.New(inbox.Config{Store: f.st, Log: log}),
			Contacts: contacts.New(f.st)}))
		t.Cleanup(srv.Close)
		f.url = srv.URL
		for _, op := range ops {
			method, path, _ := strings.Cut(op, " ")
			path = "/api/public/v1" + path
			for _, tc := range []struct{ body, wantIn string }{
				{`{"bogus":1}`, `unknown field "bogus"`},
				{`{"id":5}`, `unknown field "id"`},
				{`{} {}`, "after the JSON value"},
				{`[]`, "object"},
				{`"x"`, "object"},
				{`null`, "{}"},
				{`{`, "not valid JSON"},
				{`{"a":1,"a":1}`, `"a"`},
			} {
				status, _, b := f.do(t, method, path, f.keys["acme"], tc.body)
				e := decodeInto[errorEnvelope](t, b).Error
				if status != 400 || e.Type != "invalid_request" || !strings.Contains(e.Message, tc.wantIn) {
					t.Errorf("%s with %s: %d %s, want 400 invalid_request saying %q", op, tc.body, status, b, tc.wantIn)
				}
			}
			if status, _, b := f.do(t, method, path, f.keys["acme"], `{`+strings.Repeat(" ", 2000)+`}`); status != 400 || !strings.Contains(string(b), "empty or {}") {
				t.Errorf("%s with a 2 kB body: %d %s, want 400", op, status, b)
			}
			// No body, whitespace and {} are all no body: the same answer
			// (these paths name nothing: mostly 404), never the body's 400.
			want, _, wantBody := f.do(t, method, path, f.keys["acme"], "")
			if want == 400 || want >= 500 {
				t.Errorf("%s with no body: %d %s", op, want, wantBody)
			}
			for _, body := range []string{"{}", " \r\n\t", " { } \n"} {
				if status, _, b := f.do(t, method, path, f.keys["acme"], body); status != want {
					t.Errorf("%s with %q: %d %s; with no body %d %s", op, body, status, b, want, wantBody)
				}
			}
		}
	})
}

// TestWebhookOperationsWithoutBody: the webhook operations that take no body
// do their work with none and with {}, and a body with content changes
// nothing.
func TestWebhookOperationsWithoutBody(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		w := f.createWebhook(t, f.keys["acme"], `{"url":"https://hooks.example.com/in","type":"AccountSMS"}`)
		base := "/api/public/v1/webhooks/" + strconv.FormatInt(w.ID, 10)
		enabled := func() bool {
			t.Helper()
			return decodeInto[struct{ Data webhookResp }](t, mustBody(t, f, "GET", "/webhooks/"+strconv.FormatInt(w.ID, 10), f.keys["acme"])).Data.Enabled
		}
		secret := func() string {
			t.Helper()
			return decodeInto[struct{ Data struct{ Secret string } }](t, mustBody(t, f, "GET", "/webhooks/"+strconv.FormatInt(w.ID, 10)+"/secret", f.keys["acme"])).Data.Secret
		}

		if status, _, b := f.do(t, "POST", base+"/enable", f.keys["acme"], `{"bogus":1}`); status != 400 || enabled() {
			t.Errorf("enable with {\"bogus\":1}: %d %s, enabled %v; want 400 and still disabled", status, b, enabled())
		}
		if status, _, b := f.do(t, "POST", base+"/enable", f.keys["acme"], `{}`); status != 200 || !enabled() {
			t.Errorf("enable with {}: %d %s", status, b)
		}
		if status, _, b := f.do(t, "POST", base+"/disable", f.keys["acme"], `{"enabled":true}`); status != 400 || !enabled() {
			t.Errorf("disable with a field: %d %s, want 400 and still enabled", status, b)
		}
		if status, _, b := f.do(t, "POST", base+"/disable", f.keys["acme"], ""); status != 200 || enabled() {
			t.Errorf("disable with no body: %d %s", status, b)
		}
		before := secret()
		if status, _, b := f.do(t, "POST", base+"/secret/rotate", f.keys["acme"], `{"secret":"whsec_mine"}`); status != 400 || secret() != before {
			t.Errorf("rotate with a body: %d %s, want 400 and the secret unchanged", status, b)
		}
		if status, _, b := f.do(t, "POST", base+"/secret/rotate", f.keys["acme"], `{}`); status != 200 || secret() == before {
			t.Errorf("rotate with {}: %d %s", status, b)
		}
		if status, _, b := f.do(t, "DELETE", base, f.keys["acme"], `{"force":true}`); status != 400 {
			t.Errorf("delete with a body: %d %s, want 400", status, b)
		}
		mustBody(t, f, "GET", "/webhooks/"+strconv.FormatInt(w.ID, 10), f.keys["acme"]) // still there
		if status, _, b := f.do(t, "DELETE", base, f.keys["acme"], `{}`); status != 204 {
			t.Errorf("delete with {}: %d %s, want 204", status, b)
		}
	})
}
