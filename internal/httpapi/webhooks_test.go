package httpapi_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store/storetest"
)

type webhookResp struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	URL         string `json:"url"`
	Type        string `json:"type"`
	Enabled     bool   `json:"enabled"`
	CreatedAt   string `json:"createdAt"`
	UpdatedAt   string `json:"updatedAt"`
	Secret      string `json:"secret"`
}

var secretForm = regexp.MustCompile(`^whsec_[A-Za-z0-9+/]{43}=$`)

// createWebhook posts body and returns the created webhook, failing the test otherwise.
func (f *fixture) createWebhook(t *testing.T, key, body string) webhookResp {
	t.Helper()
	status, h, b := f.do(t, "POST", "/api/public/v1/webhooks", key, body)
	if status != 201 {
		t.Fatalf("create %s: status %d: %s", body, status, b)
	}
	w := decodeInto[struct{ Data webhookResp }](t, b).Data
	if loc := h.Get("Location"); loc != "/api/public/v1/webhooks/"+strconv.FormatInt(w.ID, 10) {
		t.Errorf("Location = %q, want the new webhook's path", loc)
	}
	return w
}

func TestWebhookCreateAndRead(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		minimal := f.createWebhook(t, f.keys["acme"], `{"url":"https://hooks.example.com/in","type":"AccountSMS"}`)
		if minimal.Name != "" || minimal.Description != "" || minimal.Enabled || minimal.Type != "AccountSMS" || minimal.URL != "https://hooks.example.com/in" {
			t.Errorf("minimal webhook = %+v, want empty name and description, enabled false", minimal)
		}
		if !secretForm.MatchString(minimal.Secret) {
			t.Errorf("secret = %q, want whsec_ and base64 of 32 bytes", minimal.Secret)
		}
		full := f.createWebhook(t, f.keys["acme"], `{"name":"CRM","description":"texts to the CRM","url":"https://crm.example.com/h?x=1","type":"AccountEndedCalls","enabled":true}`)
		if full.Name != "CRM" || full.Description != "texts to the CRM" || !full.Enabled || full.Secret == minimal.Secret {
			t.Errorf("full webhook = %+v", full)
		}

		// GET by id has no secret; another account's webhook is not found.
		status, _, b := f.do(t, "GET", "/api/public/v1/webhooks/"+strconv.FormatInt(full.ID, 10), f.keys["acme"], "")
		got := decodeInto[struct{ Data map[string]any }](t, b).Data
		if status != 200 || got["name"] != "CRM" || got["enabled"] != true {
			t.Errorf("GET webhook: %d %s", status, b)
		}
		if _, ok := got["secret"]; ok {
			t.Errorf("GET webhook must not carry the secret: %s", b)
		}
		for _, tc := range []struct{ key, path string }{
			{f.keys["beta"], "/webhooks/" + strconv.FormatInt(full.ID, 10)},
			{f.keys["acme"], "/webhooks/999999"},
			{f.keys["acme"], "/webhooks/abc"},
			{f.keys["beta"], "/webhooks/" + strconv.FormatInt(full.ID, 10) + "/secret"},
		} {
			if status, _, b := f.do(t, "GET", "/api/public/v1"+tc.path, tc.key, ""); status != 404 || decodeInto[errorEnvelope](t, b).Error.Type != "not_found" {
				t.Errorf("GET %s: %d %s, want 404 not_found", tc.path, status, b)
			}
		}

		// The list, with its filters.
		list := func(query string) []webhookResp {
			t.Helper()
			status, _, b := f.do(t, "GET", "/api/public/v1/webhooks"+query, f.keys["acme"], "")
			if status != 200 {
				t.Fatalf("list %s: %d %s", query, status, b)
			}
			return decodeInto[struct{ Data []webhookResp }](t, b).Data
		}
		ids := func(ws []webhookResp) []int64 {
			out := []int64{}
			for _, w := range ws {
				out = append(out, w.ID)
			}
			return out
		}
		for _, tc := range []struct {
			query string
			want  []int64
		}{
			{"", []int64{minimal.ID, full.ID}},
			{"?type=AccountSMS", []int64{minimal.ID}},
			{"?enabled=true", []int64{full.ID}},
			{"?type=AccountSMS&enabled=true", []int64{}},
			{"?type=UserEndedCalls", []int64{}},
		} {
			if got := ids(list(tc.query)); !equalIDs(got, tc.want) {
				t.Errorf("list %q = %v, want %v", tc.query, got, tc.want)
			}
		}
		if n := len(decodeInto[struct{ Data []any }](t, mustBody(t, f, "GET", "/webhooks", f.keys["beta"])).Data); n != 0 {
			t.Errorf("beta sees %d webhooks, want 0", n)
		}
		for _, tc := range []struct{ query, wantType, wantIn string }{
			{"?enabled=false", "unsupported", "enabled"},
			{"?enabled=yes", "invalid_request", "enabled"},
			{"?enabled=true&enabled=true", "invalid_request", "enabled"},
			{"?type=Bogus", "invalid_request", "type"},
			{"?type=", "invalid_request", "type"},
		} {
			status, _, b := f.do(t, "GET", "/api/public/v1/webhooks"+tc.query, f.keys["acme"], "")
			e := decodeInto[errorEnvelope](t, b).Error
			if status != 400 || e.Type != tc.wantType || !strings.Contains(e.Message, tc.wantIn) {
				t.Errorf("list %q: %d %s, want 400 %s naming %s", tc.query, status, b, tc.wantType, tc.wantIn)
			}
		}

		// Types.
		status, _, b = f.do(t, "GET", "/api/public/v1/webhooks/types", f.keys["acme"], "")
		types := decodeInto[struct {
			Data []struct{ Type, Description string }
		}](t, b).Data
		var names []string
		for _, ty := range types {
			names = append(names, ty.Type)
			if ty.Description == "" {
				t.Errorf("type %s has no description", ty.Type)
			}
		}
		// The spec's five in its order, then the shared inbox's (issue 24)
		// and the address book's (issue 33).
		if want := "AccountRealTimeCalls AccountEndedCalls UserEndedCalls AccountSMS AccountAITranscription AccountConversations AccountContacts"; status != 200 || strings.Join(names, " ") != want {
			t.Errorf("types = %d %v, want %s", status, names, want)
		}
	})
}

func equalIDs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func mustBody(t *testing.T, f *fixture, method, path, key string) []byte {
	t.Helper()
	status, _, b := f.do(t, method, "/api/public/v1"+path, key, "")
	if status != 200 {
		t.Fatalf("%s %s: %d %s", method, path, status, b)
	}
	return b
}

func TestWebhookCreateRefusals(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		for _, tc := range []struct {
			name, body, wantIn string
		}{
			{"empty body", ``, "body"},
			{"no url", `{"type":"AccountSMS"}`, "url"},
			{"no type", `{"url":"https://x.example.com"}`, "type"},
			{"unknown type", `{"url":"https://x.example.com","type":"AccountFax"}`, "type"},
			{"unknown field", `{"url":"https://x.example.com","type":"AccountSMS","customerId":1}`, "customerId"},
			{"null name", `{"url":"https://x.example.com","type":"AccountSMS","name":null}`, "name"},
			{"wrong type", `{"url":"https://x.example.com","type":"AccountSMS","enabled":"yes"}`, "enabled"},
			{"plain http", `{"url":"http://x.example.com/h","type":"AccountSMS"}`, "url"},
			{"ftp", `{"url":"ftp://x.example.com/h","type":"AccountSMS"}`, "url"},
			{"relative", `{"url":"/hook","type":"AccountSMS"}`, "url"},
			{"credentials", `{"url":"https://u:p@x.example.com/h","type":"AccountSMS"}`, "url"},
			{"fragment", `{"url":"https://x.example.com/h#f","type":"AccountSMS"}`, "url"},
			{"long name", `{"url":"https://x.example.com","type":"AccountSMS","name":"` + strings.Repeat("n", 201) + `"}`, "name"},
			{"long url", `{"url":"https://x.example.com/` + strings.Repeat("p", 2048) + `","type":"AccountSMS"}`, "url"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				status, _, b := f.do(t, "POST", "/api/public/v1/webhooks", f.keys["acme"], tc.body)
				e := decodeInto[errorEnvelope](t, b).Error
				if status != 400 || e.Type != "invalid_request" || !strings.Contains(e.Message, tc.wantIn) {
					t.Errorf("status %d %s, want 400 invalid_request naming %s", status, b, tc.wantIn)
				}
			})
		}
		// Literal addresses that are not publicly routable, in every form.
		for _, host := range []string{
			"127.0.0.1", "127.1.2.3", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "100.64.0.1",
			"0.0.0.0", "224.0.0.1", "255.255.255.255", "[::1]", "[::]", "[fe80::1]", "[fc00::1]", "[ff02::1]",
			"[::ffff:127.0.0.1]", "[::ffff:10.0.0.1]", "[64:ff9b::7f00:1]", "[64:ff9b::a00:1]", "[64:ff9b:1::1]",
			"localhost", "LOCALHOST.", "api.localhost", "2130706433", "0x7f000001", "127.1", "017700000001",
		} {
			status, _, b := f.do(t, "POST", "/api/public/v1/webhooks", f.keys["acme"], `{"url":"https://`+host+`:8443/h","type":"AccountSMS"}`)
			e := decodeInto[errorEnvelope](t, b).Error
			if status != 400 || e.Type != "invalid_request" || !strings.HasPrefix(e.Message, "url ") {
				t.Errorf("host %s: %d %s, want 400 naming url", host, status, b)
			}
		}
		// Public addresses and names are fine.
		for _, host := range []string{"93.184.215.14", "[2606:2800:21f:cb07:6820:80da:af6b:8b2c]", "hooks.example.com", "1e100.net"} {
			if status, _, b := f.do(t, "POST", "/api/public/v1/webhooks", f.keys["acme"], `{"url":"https://`+host+`/h","type":"AccountSMS"}`); status != 201 {
				t.Errorf("host %s: %d %s, want 201", host, status, b)
			}
		}
	})
}

func TestWebhookUpdateEnableDelete(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		w := f.createWebhook(t, f.keys["acme"], `{"name":"a","url":"https://a.example.com","type":"AccountSMS"}`)
		path := "/api/public/v1/webhooks/" + strconv.FormatInt(w.ID, 10)
		get := func() webhookResp {
			t.Helper()
			_, _, b := f.do(t, "GET", path, f.keys["acme"], "")
			return decodeInto[struct{ Data webhookResp }](t, b).Data
		}
		for _, method := range []string{"PATCH", "PUT"} {
			status, _, b := f.do(t, method, path, f.keys["acme"], `{"description":"`+method+`"}`)
			got := decodeInto[struct{ Data webhookResp }](t, b).Data
			if status != 200 || got.Description != method || got.Name != "a" || got.URL != "https://a.example.com" || got.Type != "AccountSMS" {
				t.Errorf("%s merge: %d %s", method, status, b)
			}
		}
		status, _, b := f.do(t, "PATCH", path, f.keys["acme"], `{"name":"b","url":"https://b.example.com/x","type":"AccountEndedCalls","enabled":true}`)
		got := decodeInto[struct{ Data webhookResp }](t, b).Data
		if status != 200 || got.Name != "b" || got.URL != "https://b.example.com/x" || got.Type != "AccountEndedCalls" || !got.Enabled || got.Description != "PUT" {
			t.Errorf("PATCH all: %d %s", status, b)
		}
		if g := get(); g != got {
			t.Errorf("stored = %+v, want %+v", g, got)
		}
		for _, tc := range []struct{ body, wantIn string }{
			{`{"type":"Nope"}`, "type"},
			{`{"url":"http://b.example.com"}`, "url"},
			{`{"url":""}`, "url"},
			{`{"url":"https://10.1.1.1/"}`, "url"},
			{`{"name":null}`, "name"},
			{`{"id":5}`, "id"},
			{`{"secret":"whsec_x"}`, "secret"},
		} {
			status, _, b := f.do(t, "PATCH", path, f.keys["acme"], tc.body)
			if e := decodeInto[errorEnvelope](t, b).Error; status != 400 || !strings.Contains(e.Message, tc.wantIn) {
				t.Errorf("PATCH %s: %d %s, want 400 naming %s", tc.body, status, b, tc.wantIn)
			}
		}
		if g := get(); g != got {
			t.Errorf("a refused update changed the webhook: %+v, want %+v", g, got)
		}

		// Enablement table: each transition, twice.
		for _, step := range []struct {
			action string
			want   bool
		}{{"disable", false}, {"disable", false}, {"enable", true}, {"enable", true}, {"disable", false}} {
			status, _, b := f.do(t, "POST", path+"/"+step.action, f.keys["acme"], "")
			got := decodeInto[struct{ Data webhookResp }](t, b).Data
			if status != 200 || got.Enabled != step.want || got.ID != w.ID {
				t.Errorf("%s: %d %s, want enabled %v", step.action, status, b, step.want)
			}
			if get().Enabled != step.want {
				t.Errorf("after %s stored enabled != %v", step.action, step.want)
			}
		}
		if status, _, _ := f.do(t, "POST", "/api/public/v1/webhooks/424242/enable", f.keys["acme"], ""); status != 404 {
			t.Errorf("enable unknown: %d, want 404", status)
		}
		if status, _, _ := f.do(t, "PATCH", path, f.keys["beta"], `{"name":"x"}`); status != 404 {
			t.Errorf("beta PATCH: %d, want 404", status)
		}
		if status, _, _ := f.do(t, "DELETE", path, f.keys["beta"], ""); status != 404 {
			t.Errorf("beta DELETE: %d, want 404", status)
		}

		// Secret: read, rotate, read again.
		status, _, b = f.do(t, "GET", path+"/secret", f.keys["acme"], "")
		first := decodeInto[struct{ Data struct{ Secret string } }](t, b).Data.Secret
		if status != 200 || first != w.Secret {
			t.Errorf("GET secret = %d %s, want the create answer's secret", status, b)
		}
		status, _, b = f.do(t, "POST", path+"/secret/rotate", f.keys["acme"], "")
		rotated := decodeInto[struct{ Data struct{ Secret string } }](t, b).Data.Secret
		if status != 200 || !secretForm.MatchString(rotated) || rotated == first {
			t.Errorf("rotate = %d %s", status, b)
		}
		if _, _, b = f.do(t, "GET", path+"/secret", f.keys["acme"], ""); decodeInto[struct{ Data struct{ Secret string } }](t, b).Data.Secret != rotated {
			t.Errorf("after rotation GET secret = %s, want %s", b, rotated)
		}

		status, h, b := f.do(t, "DELETE", path, f.keys["acme"], "")
		if status != 204 || len(b) != 0 || h.Get("Content-Type") != "" {
			t.Errorf("DELETE: %d %q %s", status, h.Get("Content-Type"), b)
		}
		if status, _, _ := f.do(t, "GET", path, f.keys["acme"], ""); status != 404 {
			t.Errorf("GET after DELETE: %d", status)
		}
		if status, _, _ := f.do(t, "DELETE", path, f.keys["acme"], ""); status != 404 {
			t.Errorf("DELETE again: %d, want 404", status)
		}
	})
}

func TestWebhookScopes(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		acme, err := f.st.APIKeys(ctx, f.users["Alice"].AccountID)
		must(t, err)
		_ = acme
		_, readOnly := storetest.Key(t, f.st, f.users["Alice"].AccountID, auth.WebhooksRead)
		_, writeOnly := storetest.Key(t, f.st, f.users["Alice"].AccountID, auth.WebhooksWrite)
		w := f.createWebhook(t, writeOnly, `{"url":"https://a.example.com","type":"AccountSMS"}`)
		id := strconv.FormatInt(w.ID, 10)
		for _, tc := range []struct {
			method, path, key, want string
		}{
			{"GET", "/webhooks", writeOnly, "webhooks:read"},
			{"GET", "/webhooks/types", writeOnly, "webhooks:read"},
			{"GET", "/webhooks/" + id, f.keys["acme-sms"], "webhooks:read"},
			{"GET", "/webhooks/" + id + "/secret", writeOnly, "webhooks:read"},
			{"POST", "/webhooks", readOnly, "webhooks:write"},
			{"PATCH", "/webhooks/" + id, readOnly, "webhooks:write"},
			{"PUT", "/webhooks/" + id, readOnly, "webhooks:write"},
			{"DELETE", "/webhooks/" + id, readOnly, "webhooks:write"},
			{"POST", "/webhooks/" + id + "/enable", readOnly, "webhooks:write"},
			{"POST", "/webhooks/" + id + "/disable", readOnly, "webhooks:write"},
			{"POST", "/webhooks/" + id + "/secret/rotate", readOnly, "webhooks:write"},
		} {
			body := ""
			if tc.method == "POST" || tc.method == "PATCH" || tc.method == "PUT" {
				body = `{}`
			}
			status, _, b := f.do(t, tc.method, "/api/public/v1"+tc.path, tc.key, body)
			if e := decodeInto[errorEnvelope](t, b).Error; status != http.StatusForbidden || e.Type != "insufficient_scope" || e.Scope != tc.want {
				t.Errorf("%s %s: %d %s, want 403 insufficient_scope %s", tc.method, tc.path, status, b, tc.want)
			}
		}
		if status, _, b := f.do(t, "GET", "/api/public/v1/webhooks", readOnly, ""); status != 200 {
			t.Errorf("read-only list: %d %s", status, b)
		}
		var _ = json.Valid
	})
}

func TestWebhookDeliveriesAndRedeliver(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		w := f.createWebhook(t, f.keys["acme"], `{"url":"https://a.example.com","type":"AccountSMS","enabled":true}`)
		account := f.users["Alice"].AccountID
		for range 3 {
			must(t, f.st.AddEvents(ctx, account, []domain.Event{{Type: "AccountSMS", Payload: []byte(`{"event":"message.sent"}`)}}))
		}
		if _, n := storetest.FanOut(t, f.st); n != 3 {
			t.Fatalf("fan out: %d deliveries, want 3", n)
		}
		path := "/api/public/v1/webhooks/" + strconv.FormatInt(w.ID, 10) + "/deliveries"
		type page struct {
			Data []struct {
				ID       int64  `json:"id"`
				EventID  string `json:"eventId"`
				State    string `json:"state"`
				Attempts int    `json:"attempts"`
			}
			Next *int64 `json:"next"`
		}
		status, _, b := f.do(t, "GET", path+"?limit=2", f.keys["acme"], "")
		p := decodeInto[page](t, b)
		if status != 200 || len(p.Data) != 2 || p.Next == nil || p.Data[0].ID < p.Data[1].ID || p.Data[0].State != "pending" || !strings.HasPrefix(p.Data[0].EventID, "evt_") {
			t.Fatalf("first page: %d %s", status, b)
		}
		_, _, b = f.do(t, "GET", path+"?limit=2&before="+strconv.FormatInt(*p.Next, 10), f.keys["acme"], "")
		if p2 := decodeInto[page](t, b); len(p2.Data) != 1 || p2.Next != nil || p2.Data[0].ID >= p.Data[1].ID {
			t.Errorf("second page: %s", b)
		}
		for _, q := range []string{"?limit=0", "?limit=201", "?limit=x", "?before=0", "?before=x"} {
			if status, _, b := f.do(t, "GET", path+q, f.keys["acme"], ""); status != 400 {
				t.Errorf("GET deliveries%s: %d %s, want 400", q, status, b)
			}
		}
		if status, _, _ := f.do(t, "GET", path, f.keys["beta"], ""); status != 404 {
			t.Errorf("beta reads acme's deliveries: %d, want 404", status)
		}

		first := p.Data[0]
		status, _, b = f.do(t, "POST", path+"/"+strconv.FormatInt(first.ID, 10)+"/redeliver", f.keys["acme"], "")
		re := decodeInto[struct {
			Data struct {
				ID      int64  `json:"id"`
				EventID string `json:"eventId"`
				State   string `json:"state"`
			}
		}](t, b).Data
		if status != 202 || re.EventID != first.EventID || re.ID <= first.ID || re.State != "pending" {
			t.Errorf("redeliver: %d %s", status, b)
		}
		for _, tc := range []struct{ key, id string }{{f.keys["beta"], strconv.FormatInt(first.ID, 10)}, {f.keys["acme"], "99999"}, {f.keys["acme"], "x"}} {
			if status, _, _ := f.do(t, "POST", path+"/"+tc.id+"/redeliver", tc.key, ""); status != 404 {
				t.Errorf("redeliver %s: %d, want 404", tc.id, status)
			}
		}
	})
}
