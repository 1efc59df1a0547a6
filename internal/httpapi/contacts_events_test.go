package httpapi_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"switchboard/internal/domain"
)

// TestContactsEvents: a contact created, updated and deleted is an
// AccountContacts event on the streams of those who may read contacts
// (an API key with messages:read, a person whose role grants numbers), in
// the outbox for webhooks, and a subscription may name the type; a stream
// without messages:read, or narrowed to lines, does not get them.
func TestContactsEvents(t *testing.T) {
	forEachEvents(t, eventsOpts{}, func(t *testing.T, f *eventsFixture) {
		key := f.openStream(t, f.key, "", "")
		agnes := f.openStream(t, f.agnesTok, "", "")
		smsOnly := f.openStream(t, f.smsKey, "", "")
		lined := f.openStream(t, f.key, "?lines="+lineMain, "")
		for _, s := range []*sseClient{key, agnes, smsOnly, lined} {
			s.joinedAt(t)
		}
		status, _, b := f.do(t, "POST", "/api/public/v1/contacts", f.maxTok, `{"name":"Ana","numbers":[{"number":"+1 415 555 1001"}]}`)
		if status != 201 {
			t.Fatalf("create: %d %s", status, b)
		}
		id := decodeInto[struct{ Data struct{ ID int64 } }](t, b).Data.ID
		path := "/api/public/v1/contacts/" + strconv.FormatInt(id, 10)
		if status, _, b = f.do(t, "PATCH", path, f.key, `{"company":"Acme"}`); status != 200 {
			t.Fatalf("patch: %d %s", status, b)
		}
		if status, _, b = f.do(t, "DELETE", path, f.maxTok, ""); status != 204 {
			t.Fatalf("delete: %d %s", status, b)
		}
		maxID := f.max.ID
		want := []struct {
			event   string
			by      *int64
			company string
		}{{domain.ContactCreated, &maxID, ""}, {domain.ContactUpdated, nil, "Acme"}, {domain.ContactDeleted, &maxID, "Acme"}}
		for _, s := range []*sseClient{key, agnes} {
			for i, m := range s.collect(t, len(want)) {
				var body struct {
					Type string
					Data struct {
						Event   string
						By      *int64
						Contact struct {
							ID      int64
							Name    string
							Company string
							Numbers []domain.ContactNumber
						}
					}
				}
				if err := json.Unmarshal([]byte(m.data), &body); err != nil {
					t.Fatal(err)
				}
				w, d := want[i], body.Data
				if m.event != domain.EventAccountContacts || body.Type != m.event || d.Event != w.event || (d.By == nil) != (w.by == nil) ||
					d.By != nil && *d.By != *w.by || d.Contact.ID != id || d.Contact.Name != "Ana" || d.Contact.Company != w.company ||
					len(d.Contact.Numbers) != 1 || d.Contact.Numbers[0].Number != "14155551001" {
					t.Errorf("event %d: %s %s, want %s by %v", i, m.event, m.data, w.event, w.by)
				}
			}
		}
		// The streams that may not see them get the next SMS event first.
		f.addEvent(t, f.acme, lineMain)
		for name, s := range map[string]*sseClient{"sms:read": smsOnly, "lines=": lined} {
			if m := s.next(t, eventWait); m.event != domain.EventAccountSMS {
				t.Errorf("%s stream got %s %s first, want the SMS event", name, m.event, m.data)
			}
		}
		// In the outbox for webhooks, which may subscribe to the type.
		evs, err := f.st.Events(ctx, f.acme, 0, 1000)
		must(t, err)
		n := 0
		for _, e := range evs {
			if e.Type == domain.EventAccountContacts {
				n++
				if e.Audience != 0 {
					t.Errorf("a contact event is personal: %+v", e)
				}
			}
		}
		if n != 3 {
			t.Errorf("%d AccountContacts events in the outbox, want 3", n)
		}
		if status, _, b := f.do(t, "POST", "/api/public/v1/webhooks", f.key, `{"url":"https://hooks.example/contacts","type":"AccountContacts"}`); status != 201 {
			t.Errorf("subscribe to AccountContacts: %d %s", status, b)
		}
	})
}
