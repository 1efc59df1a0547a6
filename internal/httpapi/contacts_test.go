package httpapi_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"switchboard/internal/auth"
	"switchboard/internal/calls"
	"switchboard/internal/contacts"
	"switchboard/internal/domain"
	"switchboard/internal/httpapi"
	"switchboard/internal/inbox"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/webhooks"
)

// contactsFixture is the inbox fixture served with the address book, plus
// the credentials the permission rules tell apart.
type contactsFixture struct {
	*inboxFixture
	// readKey has messages:read only; smsReadKey sms:read only; nobodyTok
	// is a person whose role grants no phone numbers.
	readKey, smsReadKey, nobodyTok string
}

func setupContacts(t *testing.T, engine store.Engine) *contactsFixture {
	t.Helper()
	f := &contactsFixture{inboxFixture: setupInbox(t, engine)}
	st := f.st
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Store: st, Auth: &auth.Authenticator{Store: st}, Log: log, SMS: f.sms,
		Inbox: inbox.New(inbox.Config{Store: st, Log: log}), Webhooks: webhooks.New(webhooks.Config{Store: st}),
		Calls: calls.New(calls.Config{Store: st, Log: log}), Contacts: contacts.New(st)}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	_, f.readKey = storetest.Key(t, st, f.acme.ID, auth.MessagesRead)
	_, f.smsReadKey = storetest.Key(t, st, f.acme.ID, auth.SMSRead)
	p, err := domain.ParsePermissions("users:self,reports")
	must(t, err)
	nobody := storetest.User(t, st, f.acme.ID, &storetest.UserOpts{FirstName: "No", LastName: "Numbers", Permissions: &p})
	f.nobodyTok, err = userAccessToken(ctx, st, nobody.ID, auth.AllScopes...)
	must(t, err)
	return f
}

func forEachContacts(t *testing.T, fn func(t *testing.T, f *contactsFixture)) {
	for _, e := range storetest.Engines(t) {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			fn(t, setupContacts(t, e))
		})
	}
}

const contactsPath = "/api/public/v1/contacts"

// contactBody is a Contact as the API answers it.
type contactBody struct {
	ID        int64                  `json:"id"`
	Name      string                 `json:"name"`
	Company   string                 `json:"company"`
	Email     string                 `json:"email"`
	Notes     string                 `json:"notes"`
	Tags      []string               `json:"tags"`
	Numbers   []domain.ContactNumber `json:"numbers"`
	CreatedAt string                 `json:"createdAt"`
	UpdatedAt string                 `json:"updatedAt"`
}

// same reports whether a and b hold the same data, ids and times aside.
func (a contactBody) same(b contactBody) bool {
	return a.Name == b.Name && a.Company == b.Company && a.Email == b.Email && a.Notes == b.Notes &&
		slices.Equal(a.Tags, b.Tags) && slices.Equal(a.Numbers, b.Numbers)
}

func (f *contactsFixture) create(t *testing.T, cred, body string) contactBody {
	t.Helper()
	status, h, b := f.do(t, "POST", contactsPath, cred, body)
	if status != 201 {
		t.Fatalf("create %s: %d %s", body, status, b)
	}
	c := decodeInto[struct{ Data contactBody }](t, b).Data
	if loc := h.Get("Location"); loc != contactsPath+"/"+strconv.FormatInt(c.ID, 10) {
		t.Errorf("Location = %q, want the contact's path", loc)
	}
	return c
}

func (f *contactsFixture) list(t *testing.T, cred, query string) ([]contactBody, *int64) {
	t.Helper()
	status, _, b := f.do(t, "GET", contactsPath+query, cred, "")
	if status != 200 {
		t.Fatalf("GET /contacts%s: %d %s", query, status, b)
	}
	page := decodeInto[struct {
		Data []contactBody
		Next *int64
	}](t, b)
	return page.Data, page.Next
}

func names(list []contactBody) []string {
	out := make([]string, len(list))
	for i, c := range list {
		out[i] = c.Name
	}
	return out
}

func wantContactError(t *testing.T, what string, status int, b []byte, wantStatus int, wantType string, wantIn ...string) {
	t.Helper()
	e := decodeInto[errorEnvelope](t, b)
	if status != wantStatus || e.Error.Type != wantType {
		t.Fatalf("%s: got %d %s (%s), want %d %s", what, status, e.Error.Type, e.Error.Message, wantStatus, wantType)
	}
	for _, w := range wantIn {
		if !strings.Contains(e.Error.Message, w) {
			t.Errorf("%s: message %q does not name %q", what, e.Error.Message, w)
		}
	}
}

func TestContactsCRUD(t *testing.T) {
	forEachContacts(t, func(t *testing.T, f *contactsFixture) {
		c := f.create(t, f.key, `{"name":" José García ","company":"Garcia Plumbing","email":"jose@garcia.example","notes":"Texts after 5","tags":["vip"," plumbing","vip"],
			"numbers":[{"number":"(415) 555-1001","label":"mobile"},{"number":"+44 20 7946 0958"},{"number":"415.555.1001"}]}`)
		want := contactBody{Name: "José García", Company: "Garcia Plumbing", Email: "jose@garcia.example", Notes: "Texts after 5", Tags: []string{"vip", "plumbing"},
			Numbers: []domain.ContactNumber{{Number: custA, Label: "mobile"}, {Number: "442079460958"}}}
		if !c.same(want) {
			t.Fatalf("created %+v, want %+v (numbers normalized as a send's, duplicates and tags folded)", c, want)
		}
		path := contactsPath + "/" + strconv.FormatInt(c.ID, 10)
		status, _, b := f.do(t, "GET", path, f.agnesTok, "")
		if got := decodeInto[struct{ Data contactBody }](t, b).Data; status != 200 || !got.same(want) {
			t.Fatalf("GET: %d %s", status, b)
		}

		status, _, b = f.do(t, "PATCH", path, f.key, `{"company":"García & Sons","numbers":[{"number":"14155551001","label":"cell"}],"notes":null}`)
		got := decodeInto[struct{ Data contactBody }](t, b).Data
		want.Company, want.Numbers = "García & Sons", []domain.ContactNumber{{Number: custA, Label: "cell"}}
		if status != 200 || !got.same(want) {
			t.Fatalf("PATCH: %d %+v, want %+v (fields left out or null unchanged)", status, got, want)
		}

		// Another account's contact does not exist for it.
		for _, m := range []string{"GET", "PATCH", "DELETE"} {
			body := ""
			if m == "PATCH" {
				body = `{"name":"x"}`
			}
			status, _, b := f.do(t, m, path, f.betaKey, body)
			wantContactError(t, m+" another account's contact", status, b, 404, "not_found")
		}
		if list, _ := f.list(t, f.betaKey, ""); len(list) != 0 {
			t.Errorf("the other account lists %v", names(list))
		}

		status, _, b = f.do(t, "DELETE", path, f.key, "")
		if status != 204 {
			t.Fatalf("DELETE: %d %s", status, b)
		}
		status, _, b = f.do(t, "GET", path, f.key, "")
		wantContactError(t, "GET a deleted contact", status, b, 404, "not_found")
		// Its number is free again.
		f.create(t, f.key, `{"name":"Next holder","numbers":[{"number":"14155551001"}]}`)
	})
}

func TestContactsOneContactPerNumber(t *testing.T) {
	forEachContacts(t, func(t *testing.T, f *contactsFixture) {
		ana := f.create(t, f.key, `{"name":"Ana Ruiz","numbers":[{"number":"`+custA+`"}]}`)
		bo := f.create(t, f.key, `{"name":"Bo Chen","numbers":[{"number":"`+custB+`"}]}`)
		holder := []string{strconv.FormatInt(ana.ID, 10), "Ana Ruiz", custA}
		status, _, b := f.do(t, "POST", contactsPath, f.key, `{"name":"Copy","numbers":[{"number":"4155551001"}]}`)
		wantContactError(t, "a second contact for a number", status, b, 409, "conflict", holder...)
		status, _, b = f.do(t, "PATCH", contactsPath+"/"+strconv.FormatInt(bo.ID, 10), f.key, `{"numbers":[{"number":"`+custB+`"},{"number":"+1 415 555 1001"}]}`)
		wantContactError(t, "a number added to another contact", status, b, 409, "conflict", holder...)
		// Nothing of the refused writes was kept.
		if list, _ := f.list(t, f.key, ""); !slices.Equal(names(list), []string{"Bo Chen", "Ana Ruiz"}) || len(list[0].Numbers) != 1 {
			t.Errorf("after the conflicts: %+v", list)
		}
		// Another account may hold the same number.
		f.create(t, f.betaKey, `{"name":"Beta's Ana","numbers":[{"number":"`+custA+`"}]}`)
	})
}

func TestContactsValidation(t *testing.T) {
	forEachContacts(t, func(t *testing.T, f *contactsFixture) {
		long := strings.Repeat("x", 201)
		var tagList []string
		for i := range 21 {
			tagList = append(tagList, fmt.Sprintf(`"t%d"`, i))
		}
		tags := strings.Join(tagList, ",")
		var numbers []string
		for i := range 11 {
			numbers = append(numbers, fmt.Sprintf(`{"number":"+1415555%04d"}`, 2000+i))
		}
		for _, tc := range []struct{ body, field string }{
			{`{"numbers":[{"number":"` + custA + `"}]}`, "name"},
			{`{"name":"   ","numbers":[{"number":"` + custA + `"}]}`, "name"},
			{`{"name":"` + long + `","numbers":[{"number":"` + custA + `"}]}`, "name"},
			{`{"name":"A"}`, "numbers"},
			{`{"name":"A","numbers":[]}`, "numbers"},
			{`{"name":"A","numbers":[` + strings.Join(numbers, ",") + `]}`, "numbers"},
			{`{"name":"A","numbers":[{"number":"555-CALL-NOW"}]}`, "numbers[0].number"},
			{`{"name":"A","numbers":[{"number":"` + custA + `"},{"number":"12345"}]}`, "numbers[1].number"},
			{`{"name":"A","numbers":[{"number":"` + custA + `","label":"` + long + `"}]}`, "numbers[0].label"},
			{`{"name":"A","email":"not an address","numbers":[{"number":"` + custA + `"}]}`, "email"},
			{`{"name":"A","company":"` + long + `","numbers":[{"number":"` + custA + `"}]}`, "company"},
			{`{"name":"A","notes":"` + strings.Repeat("n", 4001) + `","numbers":[{"number":"` + custA + `"}]}`, "notes"},
			{`{"name":"A","tags":[` + tags + `],"numbers":[{"number":"` + custA + `"}]}`, "tags"},
			{`{"name":"A","tags":[""],"numbers":[{"number":"` + custA + `"}]}`, "tags"},
			{`{"name":"A\u0007","numbers":[{"number":"` + custA + `"}]}`, "name"},
			{`{"name":"A","phone":"` + custA + `"}`, "phone"},
		} {
			status, _, b := f.do(t, "POST", contactsPath, f.key, tc.body)
			wantContactError(t, tc.body[:min(len(tc.body), 60)], status, b, 400, "invalid_request", tc.field)
		}
		if list, _ := f.list(t, f.key, ""); len(list) != 0 {
			t.Errorf("invalid contacts were kept: %v", names(list))
		}
		for _, q := range []string{"?limit=0", "?limit=201", "?before=x", "?q=" + strings.Repeat("q", 201), "?sort=name"} {
			status, _, b := f.do(t, "GET", contactsPath+q, f.key, "")
			wantContactError(t, "GET /contacts"+q, status, b, 400, "invalid_request")
		}
	})
}

func TestContactsQuery(t *testing.T) {
	forEachContacts(t, func(t *testing.T, f *contactsFixture) {
		f.create(t, f.key, `{"name":"José García","company":"Garcia Plumbing","numbers":[{"number":"`+custA+`"}]}`)
		f.create(t, f.key, `{"name":"Ann Lee","company":"Acme Ltd","numbers":[{"number":"`+custB+`"},{"number":"+44 20 7946 0958"}]}`)
		f.create(t, f.key, `{"name":"Zoë Ångström","numbers":[{"number":"`+custC+`"}]}`)
		f.create(t, f.betaKey, `{"name":"José Beta","numbers":[{"number":"`+custA+`"}]}`)
		for q, want := range map[string][]string{
			"":                  {"Zoë Ångström", "Ann Lee", "José García"},
			"jose":              {"José García"},
			"GARC":              {"José García"},
			"plumb":             {"José García"},
			"jose plumbing":     {"José García"},
			"jose acme":         {},
			"acme":              {"Ann Lee"},
			"zoe":               {"Zoë Ångström"},
			"angst":             {"Zoë Ångström"},
			"arc":               {}, // a prefix of a word, not any substring
			"1002":              {"Ann Lee"},
			"7946":              {"Ann Lee"},
			"+1 (415) 555-1001": {"José García"},
			"415555":            {"Zoë Ångström", "Ann Lee", "José García"},
			"%":                 {},
			"_":                 {},
		} {
			got, _ := f.list(t, f.key, "?q="+urlQuery(q))
			if !slices.Equal(names(got), want) {
				t.Errorf("q=%q: got %v, want %v", q, names(got), want)
			}
		}
		// Pages: newest first, next is the cursor while there may be more.
		first, next := f.list(t, f.key, "?limit=2")
		if !slices.Equal(names(first), []string{"Zoë Ångström", "Ann Lee"}) || next == nil {
			t.Fatalf("first page: %v next %v", names(first), next)
		}
		rest, next := f.list(t, f.key, "?limit=2&before="+strconv.FormatInt(*next, 10))
		if !slices.Equal(names(rest), []string{"José García"}) || next != nil {
			t.Errorf("second page: %v next %v", names(rest), next)
		}
	})
}

func urlQuery(s string) string {
	r := strings.NewReplacer("%", "%25", "+", "%2B", " ", "%20", "(", "%28", ")", "%29", "&", "%26")
	return r.Replace(s)
}

// TestContactsWhoMay: reading takes messages:read, writing sms:write, and a
// person's role must grant phone numbers; deleting needs every line.
func TestContactsWhoMay(t *testing.T) {
	forEachContacts(t, func(t *testing.T, f *contactsFixture) {
		c := f.create(t, f.key, `{"name":"Ana","numbers":[{"number":"`+custA+`"}]}`)
		path := contactsPath + "/" + strconv.FormatInt(c.ID, 10)
		create := `{"name":"New","numbers":[{"number":"` + custB + `"}]}`
		for _, tc := range []struct {
			name, cred, method, path, body string
			status                         int
			typ                            string
		}{
			{"sms:read only reads nothing", f.smsReadKey, "GET", contactsPath, "", 403, "insufficient_scope"},
			{"messages:read reads", f.readKey, "GET", path, "", 200, ""},
			{"messages:read exports", f.readKey, "GET", contactsPath + "/export", "", 200, ""},
			{"messages:read does not write", f.readKey, "POST", contactsPath, create, 403, "insufficient_scope"},
			{"messages:read does not import", f.readKey, "POST", contactsPath + "/import", "", 403, "insufficient_scope"},
			{"messages:read does not delete", f.readKey, "DELETE", path, "", 403, "insufficient_scope"},
			{"a role without numbers reads nothing", f.nobodyTok, "GET", contactsPath, "", 403, "permission_denied"},
			{"a role without numbers writes nothing", f.nobodyTok, "POST", contactsPath, create, 403, "permission_denied"},
			{"assigned lines read", f.agnesTok, "GET", path, "", 200, ""},
			{"assigned lines write", f.agnesTok, "PATCH", path, `{"company":"Agnes's"}`, 200, ""},
			{"assigned lines do not delete", f.agnesTok, "DELETE", path, "", 403, "permission_denied"},
			{"every line deletes", f.maxTok, "DELETE", path, "", 204, ""},
		} {
			status, _, b := f.do(t, tc.method, tc.path, tc.cred, tc.body)
			if tc.typ != "" {
				wantContactError(t, tc.name, status, b, tc.status, tc.typ)
			} else if status != tc.status {
				t.Errorf("%s: got %d %s, want %d", tc.name, status, b, tc.status)
			}
		}
	})
}
