package httpapi_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
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

// post sends body as contentType.
func (f *contactsFixture) post(t *testing.T, path, cred, contentType, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", f.url+path, strings.NewReader(body))
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+cred)
	req.Header.Set("Content-Type", contentType)
	resp, err := f.client.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, b
}

type importReport struct {
	Created, Updated int
	Skipped          []struct {
		Line   int
		Reason string
	}
}

func (f *contactsFixture) importFile(t *testing.T, cred, contentType, body string) importReport {
	t.Helper()
	status, b := f.post(t, contactsPath+"/import", cred, contentType, body)
	if status != 200 {
		t.Fatalf("import: %d %s", status, b)
	}
	return decodeInto[struct{ Data importReport }](t, b).Data
}

// skippedLines is the report's skipped lines, each with a word of its reason.
func (r importReport) skippedLines(t *testing.T, want map[int]string) {
	t.Helper()
	if len(r.Skipped) != len(want) {
		t.Errorf("skipped %+v, want lines %v", r.Skipped, want)
		return
	}
	for _, s := range r.Skipped {
		if w, ok := want[s.Line]; !ok || !strings.Contains(s.Reason, w) {
			t.Errorf("skipped line %d: %q, want %q", s.Line, s.Reason, w)
		}
	}
}

func sample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../contacts/testdata/" + name)
	must(t, err)
	return string(b)
}

// TestContactsImportFormats imports each sample through the API: Google
// Contacts' and Outlook's CSV exports, the plain columns, vCard 3.0 and
// 4.0; the report counts and names the lines it skipped, and the contacts
// hold what the files said.
func TestContactsImportFormats(t *testing.T) {
	forEachContacts(t, func(t *testing.T, f *contactsFixture) {
		for _, tc := range []struct {
			file, contentType string
			created           int
			skipped           map[int]string
			want              []contactBody
		}{
			{"google.csv", "text/csv", 2, map[int]string{5: "no phone number", 6: "numbers[0].number"}, []contactBody{
				{Name: "María José Pérez", Company: "Sunrise Clinic", Email: "maria@example.com", Notes: "Allergic to latex\nprefers mornings", Tags: []string{"Patients"},
					Numbers: []domain.ContactNumber{{Number: "14155552001", Label: "mobile"}, {Number: "14155552002", Label: "mobile"}, {Number: "14155552003", Label: "work"}}},
				{Name: "Tom Baker", Tags: []string{}, Numbers: []domain.ContactNumber{{Number: "442079460101", Label: "home"}}},
			}},
			{"outlook.csv", "text/csv; charset=utf-8", 3, map[int]string{}, []contactBody{
				{Name: "Sam O'Neill", Company: "O'Neill Roofing", Email: "sam@oneill.example", Notes: "Call before 9", Tags: []string{"Suppliers", "Roofing"},
					Numbers: []domain.ContactNumber{{Number: "14155555001", Label: "home"}, {Number: "14155555002", Label: "mobile"}}},
				{Name: "Lee Wong", Tags: []string{}, Numbers: []domain.ContactNumber{{Number: "14155555003", Label: "mobile"}}},
				{Name: "Acme Widgets", Company: "Acme Widgets", Tags: []string{}, Numbers: []domain.ContactNumber{{Number: "14155555004", Label: "work"}}},
			}},
			{"plain.csv", "application/vnd.ms-excel", 2, map[int]string{4: "empty row", 5: "not a phone number"}, []contactBody{
				{Name: "Ana Ruiz", Company: "Ruiz & Co", Email: "ana@ruiz.example", Notes: "Prefers texts, never calls", Tags: []string{},
					Numbers: []domain.ContactNumber{{Number: "14155556001"}}},
				{Name: "Bo Chen", Tags: []string{}, Numbers: []domain.ContactNumber{{Number: "442079460102"}}},
			}},
			{"v3.vcf", "text/vcard", 1, map[int]string{13: "no phone number", 18: "2.1"}, []contactBody{
				{Name: "Kenji Nakamura", Company: "Nakamura Dental", Email: "kenji@example.jp", Notes: "Line one\nLine two and a long line that is folded because vCard lines are short",
					Tags: []string{"Patients", "VIP"}, Numbers: []domain.ContactNumber{{Number: "14155553001", Label: "mobile"}, {Number: "14155553002", Label: "work"}}},
			}},
			{"v4.vcf", "text/x-vcard", 2, map[int]string{}, []contactBody{
				{Name: "Zoë Ångström", Company: "Ångström AB", Email: "zoe@example.se", Tags: []string{},
					Numbers: []domain.ContactNumber{{Number: "14155554001", Label: "mobile"}, {Number: "442079460103", Label: "home"}}},
				{Name: "Dr. Chidi Okafor", Tags: []string{}, Numbers: []domain.ContactNumber{{Number: "14155554002"}}},
			}},
		} {
			rep := f.importFile(t, f.key, tc.contentType, sample(t, tc.file))
			if rep.Created != tc.created || rep.Updated != 0 {
				t.Errorf("%s: created %d updated %d, want %d and 0", tc.file, rep.Created, rep.Updated, tc.created)
			}
			rep.skippedLines(t, tc.skipped)
			got, _ := f.list(t, f.key, fmt.Sprintf("?limit=%d", len(tc.want)))
			slices.Reverse(got) // newest first: the file's last row first
			for i, w := range tc.want {
				if i >= len(got) || !got[i].same(w) {
					t.Errorf("%s: contact %d is %+v, want %+v", tc.file, i, got, w)
					break
				}
			}
		}
		for _, bad := range []struct{ contentType, body string }{
			{"application/json", `{}`},
			{"text/csv", "Name,Company\nAna,Acme\n"},
			{"text/csv", ""},
		} {
			status, b := f.post(t, contactsPath+"/import", f.key, bad.contentType, bad.body)
			wantContactError(t, "import "+bad.contentType, status, b, 400, "invalid_request")
		}
	})
}

// TestContactsImportRowsWhole: a row is applied whole or not at all. A row
// whose numbers two contacts hold, or with one bad number among good
// ones, changes nothing; a row whose number one contact holds updates that
// contact; rows later in the file see what earlier rows did.
func TestContactsImportRowsWhole(t *testing.T) {
	forEachContacts(t, func(t *testing.T, f *contactsFixture) {
		ana := f.create(t, f.key, `{"name":"Ana Ruiz","tags":["patient"],"numbers":[{"number":"`+custA+`","label":"mobile"}]}`)
		bo := f.create(t, f.key, `{"name":"Bo Chen","company":"Chen Ltd","numbers":[{"number":"`+custB+`"}]}`)
		csv := "Name,Phone,Company,Tags\r\n" +
			"Both,+1 415 555 1001 ::: +1 415 555 1002,,\r\n" + // line 2: two holders
			"Half,+1 415 555 1003 ::: 12345,,\r\n" + // line 3: one bad number
			"Ana R. Ruiz,+1 415 555 1001 ::: +1 415 555 1004,Ruiz Clinic,vip\r\n" + // line 4: updates Ana
			"New One,+1 415 555 1005,,\r\n" + // line 5: created
			",+1 415 555 1005,Again Inc,\r\n" // line 6: updates line 5's contact
		rep := f.importFile(t, f.key, "text/csv", csv)
		if rep.Created != 1 || rep.Updated != 2 {
			t.Errorf("created %d updated %d, want 1 and 2", rep.Created, rep.Updated)
		}
		rep.skippedLines(t, map[int]string{2: fmt.Sprintf("different contacts: %d (Ana Ruiz), %d (Bo Chen)", ana.ID, bo.ID), 3: "numbers[1].number"})
		got := map[string]contactBody{}
		all, _ := f.list(t, f.key, "")
		for _, c := range all {
			got[c.Name] = c
		}
		want := map[string]contactBody{
			"Ana R. Ruiz": {Name: "Ana R. Ruiz", Company: "Ruiz Clinic", Tags: []string{"patient", "vip"},
				Numbers: []domain.ContactNumber{{Number: custA, Label: "mobile"}, {Number: custD}}},
			"Bo Chen": {Name: "Bo Chen", Company: "Chen Ltd", Tags: []string{}, Numbers: []domain.ContactNumber{{Number: custB}}},
			"New One": {Name: "New One", Company: "Again Inc", Tags: []string{}, Numbers: []domain.ContactNumber{{Number: "14155551005"}}},
		}
		if len(got) != len(want) {
			t.Fatalf("contacts %v, want %d", names(all), len(want))
		}
		for name, w := range want {
			if !got[name].same(w) {
				t.Errorf("%s: %+v, want %+v", name, got[name], w)
			}
		}
		// custC, the good number of the half-bad row, was not taken.
		if list, _ := f.list(t, f.key, "?q="+custC); len(list) != 0 {
			t.Errorf("the skipped row's good number is held by %v", names(list))
		}
	})
}

// TestContactsExportRoundTrip: an export imported into another account
// gives the same contacts, in both formats, with text that breaks naive
// writers (quotes, commas, line breaks, a formula, non-Latin letters).
func TestContactsExportRoundTrip(t *testing.T) {
	forEachContacts(t, func(t *testing.T, f *contactsFixture) {
		f.create(t, f.key, `{"name":"=HYPERLINK(\"x\")","company":"Comma, Quote \" Co","email":"a@b.example","notes":"two\nlines; and a ::: too",
			"tags":["a;b","vip"],"numbers":[{"number":"`+custA+`","label":"mobile"},{"number":"+44 20 7946 0958","label":"work"}]}`)
		f.create(t, f.key, `{"name":"山田 太郎","numbers":[{"number":"`+custB+`"}]}`)
		f.create(t, f.key, `{"name":"-Dash","company":"@home","notes":"+1","numbers":[{"number":"`+custC+`","label":"Front desk"}]}`)
		mine, _ := f.list(t, f.key, "")
		for _, format := range []string{"csv", "vcard"} {
			beta := storetest.Account(t, f.st, &storetest.AccountOpts{Name: "Copy " + format})
			_, betaKey := storetest.Key(t, f.st, beta.ID)
			status, h, b := f.do(t, "GET", contactsPath+"/export?format="+format, f.key, "")
			if status != 200 {
				t.Fatalf("export %s: %d %s", format, status, b)
			}
			if format == "csv" && !strings.Contains(string(b), `'=HYPERLINK`) {
				t.Errorf("csv export: the formula is not escaped: %s", b)
			}
			ct := h.Get("Content-Type")
			rep := f.importFile(t, betaKey, ct, string(b))
			if rep.Created != len(mine) || len(rep.Skipped) != 0 {
				t.Fatalf("%s round trip: %+v\n%s", format, rep, b)
			}
			theirs, _ := f.list(t, betaKey, "")
			slices.Reverse(theirs) // the export is newest first, so the import made the oldest last
			for i := range mine {
				w := mine[i]
				if format == "vcard" {
					w.Numbers = slices.Clone(w.Numbers) // "Front desk" is no vCard TYPE
					for j := range w.Numbers {
						if w.Numbers[j].Label == "Front desk" {
							w.Numbers[j].Label = ""
						}
					}
				} else {
					w.Tags = slices.Clone(w.Tags) // ";" separates tags in the CSV
					for j := range w.Tags {
						w.Tags[j] = strings.ReplaceAll(w.Tags[j], ";", ",")
					}
				}
				if !theirs[i].same(w) {
					t.Errorf("%s round trip: %+v, want %+v", format, theirs[i], w)
				}
			}
		}
		status, _, b := f.do(t, "GET", contactsPath+"/export?format=xml", f.key, "")
		wantContactError(t, "export xml", status, b, 400, "invalid_request")
	})
}

type namedItem struct {
	Number  string
	Contact *domain.ContactRef
}

// contactOf returns the contact the conversation list shows beside number
// (nil: none), read with cred.
func (f *contactsFixture) contactOf(t *testing.T, cred, number string) *domain.ContactRef {
	t.Helper()
	status, _, b := f.do(t, "GET", "/api/public/v1/sms/conversations", cred, "")
	if status != 200 {
		t.Fatalf("list: %d %s", status, b)
	}
	for _, c := range decodeInto[struct{ Data []namedItem }](t, b).Data {
		if c.Number == number {
			return c.Contact
		}
	}
	t.Fatalf("no conversation with %s: %s", number, b)
	return nil
}

// TestContactsNameConversations: the conversation list (whose first page
// is kept encoded) and the thread read name the contact that holds the
// other party's number, as soon as the contact is written, renamed or
// deleted; group threads and credentials that may not read contacts get
// none.
func TestContactsNameConversations(t *testing.T) {
	forEachContacts(t, func(t *testing.T, f *contactsFixture) {
		f.receive(t, inboxMain, custA, "hello")
		f.receive(t, inboxMain, custB, "group hi", custC)
		thread := "/api/public/v1/sms/conversations/" + inboxMain + "/" + custA
		if c := f.contactOf(t, f.key, custA); c != nil {
			t.Fatalf("a contact before any: %+v", c)
		}
		ana := f.create(t, f.key, `{"name":"Ana Ruiz","numbers":[{"number":"`+custA+`"},{"number":"`+custB+`"}]}`)
		want := domain.ContactRef{ID: ana.ID, Name: "Ana Ruiz"}
		for _, cred := range []string{f.key, f.maxTok} {
			if c := f.contactOf(t, cred, custA); c == nil || *c != want {
				t.Errorf("after the create: %+v, want %+v", c, want)
			}
		}
		status, _, b := f.do(t, "GET", thread, f.key, "")
		if got := decodeInto[struct{ Data namedItem }](t, b).Data.Contact; status != 200 || got == nil || *got != want {
			t.Errorf("thread: %d %s", status, b)
		}
		// A group thread is no one contact's.
		status, _, b = f.do(t, "GET", "/api/public/v1/sms/conversations", f.key, "")
		for _, c := range decodeInto[struct {
			Data []struct {
				GroupParticipants []string
				Contact           *domain.ContactRef
			}
		}](t, b).Data {
			if len(c.GroupParticipants) > 0 && c.Contact != nil {
				t.Errorf("a group thread names %+v", c.Contact)
			}
		}
		// The kept first page follows a rename at once.
		status, _, b = f.do(t, "PATCH", contactsPath+"/"+strconv.FormatInt(ana.ID, 10), f.key, `{"name":"Ana María Ruiz"}`)
		if status != 200 {
			t.Fatalf("rename: %d %s", status, b)
		}
		want.Name = "Ana María Ruiz"
		if c := f.contactOf(t, f.key, custA); c == nil || *c != want {
			t.Errorf("after the rename: %+v, want %+v", c, want)
		}
		// The other account's contact of the same number is not ours.
		f.create(t, f.betaKey, `{"name":"Beta's","numbers":[{"number":"`+custD+`"}]}`)
		f.receive(t, inboxMain, custD, "hi")
		if c := f.contactOf(t, f.key, custD); c != nil {
			t.Errorf("another account's contact named: %+v", c)
		}
		status, _, b = f.do(t, "DELETE", contactsPath+"/"+strconv.FormatInt(ana.ID, 10), f.key, "")
		if status != 204 {
			t.Fatalf("delete: %d %s", status, b)
		}
		if c := f.contactOf(t, f.key, custA); c != nil {
			t.Errorf("after the delete: %+v", c)
		}
	})
}

// TestContactsNameCalls: call search and detail name the contact of the
// other party (the caller inbound, the called number outbound), for a
// credential that may read contacts.
func TestContactsNameCalls(t *testing.T) {
	forEachCallsEngine(t, func(t *testing.T, f *callsFixture) {
		acme := f.users["Alice"].AccountID
		key := auth.Principal{AccountID: acme, Scopes: auth.AllScopes}
		bob, err := contacts.New(f.st).Create(ctx, key, contacts.Input{Name: ptr("Bob Caller (contact)"), Numbers: &[]domain.ContactNumber{{Number: "+1 415 555 0002"}}})
		must(t, err)
		_, reportsOnly := storetest.Key(t, f.st, acme, auth.ReportsRead)
		want := &domain.ContactRef{ID: bob.ID, Name: "Bob Caller (contact)"}
		search := func(cred string) map[string]*domain.ContactRef {
			status, _, b := f.do(t, "POST", "/api/public/v1/calls/search", cred, fmt.Sprintf(`{"start":%d,"end":%d}`, marchStart, marchEnd))
			if status != 200 {
				t.Fatalf("search: %d %s", status, b)
			}
			out := map[string]*domain.ContactRef{}
			for _, c := range decodeInto[struct {
				Data struct {
					Calls []struct {
						ID      string
						Contact *domain.ContactRef
					}
				}
			}](t, b).Data.Calls {
				out[c.ID] = c.Contact
			}
			return out
		}
		got := search(f.keys["acme"])
		for id, w := range map[string]*domain.ContactRef{c1: nil, c2: want, c3: want, c4: want, c5: nil} {
			if g := got[id]; (g == nil) != (w == nil) || g != nil && *g != *w {
				t.Errorf("search: call %s names %+v, want %+v", id, g, w)
			}
		}
		for id, g := range search(reportsOnly) {
			if g != nil {
				t.Errorf("reports:read alone: call %s names %+v", id, g)
			}
		}
		status, _, b := f.do(t, "GET", "/api/public/v1/calls/"+c3, f.keys["acme"], "")
		if got := decodeInto[struct {
			Data struct{ Contact *domain.ContactRef }
		}](t, b).Data.Contact; status != 200 || got == nil || *got != *want {
			t.Errorf("detail: %d %s", status, b)
		}
	})
}

func ptr[T any](v T) *T { return &v }
