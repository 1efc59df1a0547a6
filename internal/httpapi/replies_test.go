package httpapi_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store/storetest"
)

// agentToken makes Eve, whose role grants users she sees herself and the
// lines assigned to her (so not Bob's), and returns her access token.
func agentToken(t *testing.T, f *fixture, scopes ...auth.Scope) string {
	t.Helper()
	acme := f.users["Alice"].AccountID
	perms, err := domain.ParsePermissions("users:self,numbers:assigned")
	must(t, err)
	eve := storetest.User(t, f.st, acme, &storetest.UserOpts{FirstName: "Eve", LastName: "Agent", Permissions: &perms})
	token, err := userAccessToken(ctx, f.st, eve.ID, scopes...)
	must(t, err)
	return token
}

type templateData struct {
	Data struct {
		ID    int64  `json:"id"`
		Title string `json:"title"`
		Body  string `json:"body"`
	} `json:"data"`
}

type listData struct {
	Data []map[string]any `json:"data"`
}

func TestTemplates(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		key := f.keys["acme"]
		eve := agentToken(t, f, auth.SMSRead, auth.SMSWrite)

		if status, _, body := f.do(t, "GET", "/api/public/v1/sms/templates", key, ""); status != 200 || string(body) != "{\"data\":[]}\n" {
			t.Fatalf("empty list: %d %s", status, body)
		}
		status, _, body := f.do(t, "POST", "/api/public/v1/sms/templates", key, `{"title":"Hours","body":"Open 9 to 5"}`)
		created := decodeInto[templateData](t, body)
		if status != 201 || created.Data.ID == 0 || created.Data.Title != "Hours" || created.Data.Body != "Open 9 to 5" {
			t.Fatalf("create: %d %s", status, body)
		}
		path := fmt.Sprintf("/api/public/v1/sms/templates/%d", created.Data.ID)

		// Eve's own templates are hers; the integration's are not.
		status, _, body = f.do(t, "POST", "/api/public/v1/sms/templates", eve, `{"title":"Mine","body":"Eve's reply"}`)
		eves := decodeInto[templateData](t, body)
		if status != 201 {
			t.Fatalf("Eve creates: %d %s", status, body)
		}
		for _, c := range []struct {
			who, cred string
			want      []string
		}{{"key", key, []string{"Hours"}}, {"Eve", eve, []string{"Mine"}}} {
			_, _, body := f.do(t, "GET", "/api/public/v1/sms/templates", c.cred, "")
			l := decodeInto[listData](t, body)
			var titles []string
			for _, it := range l.Data {
				titles = append(titles, it["title"].(string))
			}
			if fmt.Sprint(titles) != fmt.Sprint(c.want) {
				t.Errorf("%s lists %v, want %v", c.who, titles, c.want)
			}
		}
		for name, cred := range map[string]string{"Eve": eve, "another account": f.keys["beta"]} {
			if status, _, body := f.do(t, "PUT", path, cred, `{"title":"x","body":"y"}`); status != 404 {
				t.Errorf("%s replaces the integration's template: %d %s, want 404", name, status, body)
			}
			if status, _, _ := f.do(t, "DELETE", path, cred, ""); status != 404 {
				t.Errorf("%s deletes the integration's template: %d, want 404", name, status)
			}
		}
		if status, _, _ := f.do(t, "DELETE", fmt.Sprintf("/api/public/v1/sms/templates/%d", eves.Data.ID), key, ""); status != 404 {
			t.Errorf("the key deletes Eve's template: %d, want 404", status)
		}

		status, _, body = f.do(t, "PUT", path, key, `{"title":"Hours (winter)","body":"Open 10 to 4"}`)
		if got := decodeInto[templateData](t, body); status != 200 || got.Data.ID != created.Data.ID || got.Data.Title != "Hours (winter)" || got.Data.Body != "Open 10 to 4" {
			t.Errorf("replace: %d %s", status, body)
		}

		for _, c := range []struct{ method, path, body, want string }{
			{"POST", "/api/public/v1/sms/templates", `{"body":"no title"}`, "title is required"},
			{"POST", "/api/public/v1/sms/templates", `{"title":"no body"}`, "body is required"},
			{"POST", "/api/public/v1/sms/templates", `{"title":"  ","body":"x"}`, "title"},
			{"POST", "/api/public/v1/sms/templates", `{"title":"t","body":"\n"}`, "body"},
			{"POST", "/api/public/v1/sms/templates", `{"title":"` + strings.Repeat("é", 201) + `","body":"x"}`, "title is 201 characters"},
			{"POST", "/api/public/v1/sms/templates", `{"title":"t","body":"` + strings.Repeat("a", 2001) + `"}`, "body is 2001 bytes"},
			{"POST", "/api/public/v1/sms/templates", `{"title":"t","body":"x","id":3}`, "id"},
			{"PUT", path, `{"title":"t"}`, "body is required"},
		} {
			status, _, body := f.do(t, c.method, c.path, key, c.body)
			if e := decodeInto[errorEnvelope](t, body); status != 400 || e.Error.Type != "invalid_request" || !strings.Contains(e.Error.Message, c.want) {
				t.Errorf("%s %s %s: %d %s, want 400 naming %q", c.method, c.path, c.body, status, body, c.want)
			}
		}
		// A malformed id names no template: 404 like any path id that is not
		// a positive integer (docs/decisions.md, "Path ids"), naming the shape.
		for _, c := range []struct{ method, path, body string }{
			{"PUT", "/api/public/v1/sms/templates/abc", `{"title":"t","body":"x"}`},
			{"DELETE", "/api/public/v1/sms/templates/0", ""},
		} {
			status, _, body := f.do(t, c.method, c.path, key, c.body)
			if e := decodeInto[errorEnvelope](t, body); status != 404 || e.Error.Type != "not_found" || !strings.Contains(e.Error.Message, "template ids are positive integers") {
				t.Errorf("%s %s %s: %d %s, want 404 naming the id's shape", c.method, c.path, c.body, status, body)
			}
		}
		if status, _, body := f.do(t, "POST", "/api/public/v1/sms/templates", f.keys["acme-sms"], `{"title":"t","body":"x"}`); status != 403 || decodeInto[errorEnvelope](t, body).Error.Scope != "sms:write" {
			t.Errorf("create without sms:write: %d %s", status, body)
		}

		if status, _, _ := f.do(t, "DELETE", path, key, ""); status != 204 {
			t.Errorf("delete: %d, want 204", status)
		}
		if status, _, _ := f.do(t, "DELETE", path, key, ""); status != 404 {
			t.Errorf("delete again: %d, want 404", status)
		}
	})
}

type draftData struct {
	Data struct {
		DraftID string `json:"draftId"`
		Message string `json:"message"`
	} `json:"data"`
}

func TestDrafts(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		key := f.keys["acme"]
		eve := agentToken(t, f, auth.SMSRead, auth.SMSWrite)
		const path = "/api/public/v1/sms/drafts/ticket%204711"

		if status, _, _ := f.do(t, "GET", path, key, ""); status != 404 {
			t.Errorf("absent draft: %d, want 404", status)
		}
		// An empty message is legal, and PUT is idempotent.
		for range 2 {
			status, _, body := f.do(t, "PUT", path, key, `{"message":""}`)
			if d := decodeInto[draftData](t, body); status != 200 || d.Data.DraftID != "ticket 4711" || d.Data.Message != "" {
				t.Fatalf("put empty draft: %d %s", status, body)
			}
		}
		f.do(t, "PUT", path, key, `{"message":"Thanks, looking into it"}`)
		status, _, body := f.do(t, "GET", path, key, "")
		if d := decodeInto[draftData](t, body); status != 200 || d.Data.Message != "Thanks, looking into it" {
			t.Errorf("get: %d %s", status, body)
		}
		// Eve has her own drafts under the same key.
		if status, _, _ := f.do(t, "GET", path, eve, ""); status != 404 {
			t.Errorf("Eve reads the integration's draft: %d, want 404", status)
		}
		f.do(t, "PUT", path, eve, `{"message":"Eve's"}`)
		if _, _, body := f.do(t, "GET", path, key, ""); decodeInto[draftData](t, body).Data.Message != "Thanks, looking into it" {
			t.Errorf("Eve's draft replaced the integration's: %s", body)
		}
		if status, _, _ := f.do(t, "GET", path, f.keys["beta"], ""); status != 404 {
			t.Errorf("another account reads the draft: %d, want 404", status)
		}

		long := "/api/public/v1/sms/drafts/" + strings.Repeat("k", 129)
		for _, c := range []struct{ method, path, body, want string }{
			{"PUT", path, `{}`, "message is required"},
			{"PUT", path, `{"message":null}`, "message is required"},
			{"PUT", path, `{"message":"` + strings.Repeat("a", 2001) + `"}`, "2001 bytes"},
			{"PUT", long, `{"message":"x"}`, "draftId"},
			{"GET", long, "", "draftId"},
			{"PUT", "/api/public/v1/sms/drafts/a%01b", `{"message":"x"}`, "control"},
		} {
			status, _, body := f.do(t, c.method, c.path, key, c.body)
			if e := decodeInto[errorEnvelope](t, body); status != 400 || !strings.Contains(e.Error.Message, c.want) {
				t.Errorf("%s %s %s: %d %s, want 400 naming %q", c.method, c.path, c.body, status, body, c.want)
			}
		}
		if status, _, _ := f.do(t, "PUT", "/api/public/v1/sms/drafts/"+strings.Repeat("é", 128), key, `{"message":"x"}`); status != 200 {
			t.Errorf("a 128-character key: %d, want 200", status)
		}

		if status, _, _ := f.do(t, "DELETE", path, key, ""); status != 204 {
			t.Errorf("delete: %d, want 204", status)
		}
		if status, _, _ := f.do(t, "GET", path, key, ""); status != 404 {
			t.Errorf("get after delete: %d, want 404", status)
		}
		if status, _, _ := f.do(t, "DELETE", path, key, ""); status != 404 {
			t.Errorf("delete again: %d, want 404", status)
		}
		if status, _, _ := f.do(t, "GET", path, eve, ""); status != 200 {
			t.Errorf("Eve's draft after the integration's was deleted: %d, want 200", status)
		}
	})
}

type blockedData struct {
	Data struct {
		Line      string `json:"line"`
		Number    string `json:"number"`
		Reason    string `json:"reason"`
		BlockedAt string `json:"blockedAt"`
	} `json:"data"`
}

func TestBlockedSenders(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		key := f.keys["acme"]
		const base = "/api/public/v1/sms/lines/14155550100/blocked"
		now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		f.st.SetClock(func() time.Time { return now })

		status, _, body := f.do(t, "POST", base, key, `{"number":"(415) 555-0199","reason":"spam"}`)
		b := decodeInto[blockedData](t, body)
		if status != 201 || b.Data.Line != "14155550100" || b.Data.Number != "14155550199" || b.Data.Reason != "spam" || b.Data.BlockedAt != "2026-11-01T12:00:00Z" {
			t.Fatalf("block: %d %s", status, body)
		}
		now = now.Add(time.Minute)
		// Blocking again answers the stored entry, unchanged.
		status, _, body = f.do(t, "POST", base, key, `{"number":"4155550199","reason":"changed my mind"}`)
		if again := decodeInto[blockedData](t, body); status != 200 || again.Data != b.Data {
			t.Errorf("block again: %d %s, want 200 with %+v", status, body, b.Data)
		}
		status, _, body = f.do(t, "POST", base, key, `{"number":"+44 20 7946 0958"}`)
		if second := decodeInto[blockedData](t, body); status != 201 || second.Data.Number != "442079460958" || second.Data.Reason != "" {
			t.Errorf("block without a reason: %d %s", status, body)
		}

		status, _, body = f.do(t, "GET", base, key, "")
		l := decodeInto[listData](t, body)
		if status != 200 || len(l.Data) != 2 || l.Data[0]["number"] != "442079460958" || l.Data[1]["number"] != "14155550199" {
			t.Errorf("list (newest first): %d %s", status, body)
		}
		if status, _, body := f.do(t, "GET", base+"/14155550199", key, ""); status != 200 || decodeInto[blockedData](t, body).Data != b.Data {
			t.Errorf("get: %d %s", status, body)
		}
		if status, _, _ := f.do(t, "GET", base+"/14155550111", key, ""); status != 404 {
			t.Errorf("get a number not blocked: %d, want 404", status)
		}
		// The block list is per line.
		if status, _, _ := f.do(t, "GET", "/api/public/v1/sms/lines/14155550101/blocked/14155550199", key, ""); status != 404 {
			t.Errorf("get on another line: %d, want 404", status)
		}

		for _, c := range []struct{ body, want string }{
			{`{}`, "number is required"},
			{`{"number":"123"}`, "not a dialable"},
			{`{"number":"14155550199","reason":"` + strings.Repeat("x", 501) + `"}`, "reason is 501 characters"},
			{`{"number":"14155550199","note":"x"}`, "note"},
		} {
			status, _, body := f.do(t, "POST", base, key, c.body)
			if e := decodeInto[errorEnvelope](t, body); status != 400 || !strings.Contains(e.Error.Message, c.want) {
				t.Errorf("block %s: %d %s, want 400 naming %q", c.body, status, body, c.want)
			}
		}
		if status, _, _ := f.do(t, "GET", base+"/not-a-number", key, ""); status != 400 {
			t.Errorf("get a malformed number: %d, want 400", status)
		}

		// Lines the caller cannot use are not_found: another account's, a line
		// without SMS, and for Eve (numbers:assigned) Bob's line.
		eve := agentToken(t, f, auth.SMSRead, auth.SMSWrite)
		for _, c := range []struct{ who, cred, path string }{
			{"another account", f.keys["beta"], base},
			{"a line without SMS", key, "/api/public/v1/sms/lines/14155550102/blocked"},
			{"Eve on Bob's line", eve, "/api/public/v1/sms/lines/14155550101/blocked"},
			{"an unknown line", key, "/api/public/v1/sms/lines/19995550000/blocked"},
		} {
			if status, _, body := f.do(t, "GET", c.path, c.cred, ""); status != 404 {
				t.Errorf("%s: list %d %s, want 404", c.who, status, body)
			}
			if status, _, body := f.do(t, "POST", c.path, c.cred, `{"number":"14155550123"}`); status != 404 {
				t.Errorf("%s: block %d %s, want 404", c.who, status, body)
			}
		}
		if status, _, _ := f.do(t, "GET", base, eve, ""); status != 200 {
			t.Errorf("Eve on the unassigned line: %d, want 200", status)
		}
		if status, _, body := f.do(t, "POST", base, f.keys["acme-sms"], `{"number":"14155550123"}`); status != 403 || decodeInto[errorEnvelope](t, body).Error.Scope != "sms:write" {
			t.Errorf("block without sms:write: %d %s", status, body)
		}

		if status, _, _ := f.do(t, "DELETE", base+"/(415)%20555-0199", key, ""); status != 204 {
			t.Errorf("unblock: %d, want 204", status)
		}
		if status, _, _ := f.do(t, "GET", base+"/14155550199", key, ""); status != 404 {
			t.Errorf("get after unblock: %d, want 404", status)
		}
		if status, _, _ := f.do(t, "DELETE", base+"/14155550199", key, ""); status != 404 {
			t.Errorf("unblock again: %d, want 404", status)
		}
	})
}
