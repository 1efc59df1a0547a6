package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store/storetest"
)

// Issue 33's team features through the router: teammates by name, mentions,
// notification preferences, shared saved replies, a thread's history and
// the list's last sender. The inbox fixture: Max (users:all, numbers:all),
// Agnes (users:self, numbers:assigned: Main and Desk, not Hidden), an API
// key, and Beta, another account.

type teammate struct {
	ID        int64    `json:"id"`
	Username  string   `json:"username"`
	FirstName string   `json:"firstName"`
	LastName  string   `json:"lastName"`
	Disabled  bool     `json:"disabled"`
	Lines     []string `json:"lines"`
}

func byID(list []teammate) map[int64][]string {
	out := map[int64][]string{}
	for _, m := range list {
		out[m.ID] = m.Lines
	}
	return out
}

func TestTeammatesByName(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		// Agnes may not list users (users:self shows only her) ...
		var users []struct{ ID int64 }
		f.call(t, "GET", "/users", f.agnesTok, "", http.StatusOK, &users)
		if len(users) != 1 || users[0].ID != f.agnes.ID {
			t.Fatalf("GET /users as Agnes: %+v, want only herself", users)
		}
		// ... but sees, by name, who works her lines, with only the lines
		// she sees too (Max's Hidden line is not hers).
		var list []teammate
		f.call(t, "GET", "/sms/teammates", f.agnesTok, "", http.StatusOK, &list)
		got := byID(list)
		want := map[int64][]string{f.max.ID: {inboxMain, inboxDesk}, f.agnes.ID: {inboxMain, inboxDesk}}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("teammates of Agnes: %v, want %v", got, want)
		}
		for _, m := range list {
			if m.ID == f.max.ID && (m.FirstName != "Max" || m.LastName != "Manager") {
				t.Errorf("Max is named %q %q", m.FirstName, m.LastName)
			}
		}
		// Narrowed to one line: who can be assigned a conversation on it.
		f.call(t, "GET", "/sms/teammates?lines="+inboxMain, f.agnesTok, "", http.StatusOK, &list)
		if got := byID(list); len(got) != 2 || !slices.Equal(got[f.max.ID], []string{inboxMain}) {
			t.Errorf("teammates on Main: %v", got)
		}
		// A line she cannot use, and another account's, are not found.
		f.wantError(t, "GET", "/sms/teammates?lines="+inboxHidden, f.agnesTok, "", http.StatusNotFound, "not_found")
		f.wantError(t, "GET", "/sms/teammates?lines="+inboxBeta, f.key, "", http.StatusNotFound, "not_found")
		// Max sees Hidden, and only himself on it.
		f.call(t, "GET", "/sms/teammates?lines="+inboxHidden, f.maxTok, "", http.StatusOK, &list)
		if got := byID(list); len(got) != 1 || got[f.max.ID] == nil {
			t.Errorf("teammates on Hidden: %v, want Max alone", got)
		}
		// The API key sees every line; Beta's key none of Acme's people.
		f.call(t, "GET", "/sms/teammates", f.key, "", http.StatusOK, &list)
		if got := byID(list); !slices.Equal(got[f.max.ID], []string{inboxMain, inboxDesk, inboxHidden}) {
			t.Errorf("teammates for the API key: %v", got)
		}
		f.call(t, "GET", "/sms/teammates", f.betaKey, "", http.StatusOK, &list)
		for _, m := range list {
			if m.ID == f.max.ID || m.ID == f.agnes.ID {
				t.Errorf("Beta's key lists Acme's %d", m.ID)
			}
		}
		// A role without phone numbers works no line: 403.
		none := storetest.User(t, f.st, f.acme.ID, &storetest.UserOpts{FirstName: "Nora"})
		tok, err := userAccessToken(ctx, f.st, none.ID, auth.AllScopes...)
		must(t, err)
		f.wantError(t, "GET", "/sms/teammates", tok, "", http.StatusForbidden, "permission_denied")
		// Without the scope: 403 insufficient_scope.
		tok, err = userAccessToken(ctx, f.st, f.agnes.ID, auth.SMSWrite)
		must(t, err)
		f.wantError(t, "GET", "/sms/teammates", tok, "", http.StatusForbidden, "insufficient_scope")
	})
}

type commented struct {
	Line     string  `json:"line"`
	Mentions []int64 `json:"mentions"`
}

func TestMentions(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		ben := storetest.User(t, f.st, f.acme.ID, &storetest.UserOpts{Username: "ben.c", FirstName: "Ben", LastName: "Carter",
			Permissions: &domain.Permissions{Numbers: domain.NumbersAssigned}})
		// Two people share a first name: it names neither.
		storetest.User(t, f.st, f.acme.ID, &storetest.UserOpts{FirstName: "Ben", LastName: "Other", Permissions: &domain.Permissions{Numbers: domain.NumbersAll}})
		f.receive(t, inboxMain, custA, "hello")
		path := "/sms/conversations/" + inboxMain + "/" + custA + "/comments"
		for _, tc := range []struct {
			note string
			want []int64
		}{
			{"@max please call back", []int64{f.max.ID}},
			{"ask @MAX MANAGER, then @ben.c.", []int64{f.max.ID, ben.ID}},
			{"@Ben Carter's turn; cc @agnes and @max again", []int64{ben.ID, f.agnes.ID, f.max.ID}},
			{"@ben knows", nil},                      // two Bens
			{"mail max@example.com or @maxine", nil}, // an address; another name
			{"@dave", nil},                           // another account's
		} {
			var got commented
			f.call(t, "POST", path, f.agnesTok, fmt.Sprintf(`{"comment":%q}`, tc.note), http.StatusCreated, &got)
			if !slices.Equal(got.Mentions, tc.want) || got.Mentions == nil {
				t.Errorf("%q mentions %v, want %v", tc.note, got.Mentions, tc.want)
			}
		}
		// Agnes cannot work Hidden: a note there does not mention her.
		f.receive(t, inboxHidden, custA, "hi")
		var got commented
		f.call(t, "POST", "/sms/conversations/"+inboxHidden+"/"+custA+"/comments", f.maxTok, `{"comment":"@agnes look"}`, http.StatusCreated, &got)
		if len(got.Mentions) != 0 {
			t.Errorf("a note on Hidden mentions %v; Agnes cannot work it", got.Mentions)
		}

		// The events: conversation.commented carries mentions for everyone;
		// each person mentioned (not the author) gets a personal
		// conversation.mentioned.
		evs, err := f.st.Events(ctx, f.acme.ID, 0, 10000)
		must(t, err)
		type payload struct {
			Event    string  `json:"event"`
			By       *int64  `json:"by"`
			Comment  string  `json:"comment"`
			Mentions []int64 `json:"mentions"`
		}
		personal := map[int64][]string{}
		commentedWith := 0
		for _, e := range evs {
			var p payload
			must(t, json.Unmarshal(e.Payload, &p))
			switch p.Event {
			case domain.ConversationCommented:
				if e.Audience != 0 {
					t.Errorf("conversation.commented for user %d only", e.Audience)
				}
				if len(p.Mentions) > 0 {
					commentedWith++
				}
			case domain.ConversationMentioned:
				if e.Audience == 0 {
					t.Errorf("conversation.mentioned for everyone: %s", e.Payload)
				}
				if !slices.Contains(p.Mentions, e.Audience) || p.By == nil || *p.By != f.agnes.ID {
					t.Errorf("conversation.mentioned %s for %d", e.Payload, e.Audience)
				}
				personal[e.Audience] = append(personal[e.Audience], p.Comment)
			}
		}
		if commentedWith != 3 {
			t.Errorf("%d conversation.commented events carry mentions, want 3", commentedWith)
		}
		if len(personal[f.max.ID]) != 3 || len(personal[ben.ID]) != 2 || len(personal[f.agnes.ID]) != 0 {
			t.Errorf("personal mention events: %v (Agnes wrote them: none for her)", personal)
		}
	})
}

type prefs struct {
	AssignedToMe        bool    `json:"assignedToMe"`
	UnassignedOnMyLines bool    `json:"unassignedOnMyLines"`
	Mentions            bool    `json:"mentions"`
	UpdatedAt           *string `json:"updatedAt"`
}

func TestNotificationPreferences(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		var got prefs
		f.call(t, "GET", "/me/notifications", f.agnesTok, "", http.StatusOK, &got)
		if !got.AssignedToMe || !got.UnassignedOnMyLines || !got.Mentions || got.UpdatedAt != nil {
			t.Errorf("defaults: %+v, want every one on, never saved", got)
		}
		f.call(t, "PUT", "/me/notifications", f.agnesTok, `{"assignedToMe":true,"unassignedOnMyLines":false,"mentions":false}`, http.StatusOK, &got)
		if !got.AssignedToMe || got.UnassignedOnMyLines || got.Mentions || got.UpdatedAt == nil {
			t.Errorf("saved: %+v", got)
		}
		f.call(t, "GET", "/me/notifications", f.agnesTok, "", http.StatusOK, &got)
		if got.UnassignedOnMyLines || got.Mentions || got.UpdatedAt == nil {
			t.Errorf("read back: %+v", got)
		}
		// Per person: Max keeps the defaults.
		f.call(t, "GET", "/me/notifications", f.maxTok, "", http.StatusOK, &got)
		if !got.Mentions || got.UpdatedAt != nil {
			t.Errorf("Max's: %+v, want the defaults", got)
		}
		// A PUT replaces the whole: every field is required.
		f.wantError(t, "PUT", "/me/notifications", f.agnesTok, `{"mentions":true}`, http.StatusBadRequest, "invalid_request")
		f.wantError(t, "PUT", "/me/notifications", f.agnesTok, `{"assignedToMe":true,"unassignedOnMyLines":true,"mentions":true,"sound":true}`, http.StatusBadRequest, "invalid_request")
		// An API key is no person.
		f.wantError(t, "GET", "/me/notifications", f.key, "", http.StatusBadRequest, "invalid_request")
		f.wantError(t, "PUT", "/me/notifications", f.key, `{"assignedToMe":true,"unassignedOnMyLines":true,"mentions":true}`, http.StatusBadRequest, "invalid_request")
		// Writing needs messages:write.
		tok, err := userAccessToken(ctx, f.st, f.agnes.ID, auth.MessagesRead)
		must(t, err)
		f.call(t, "GET", "/me/notifications", tok, "", http.StatusOK, &got)
		f.wantError(t, "PUT", "/me/notifications", tok, `{"assignedToMe":true,"unassignedOnMyLines":true,"mentions":true}`, http.StatusForbidden, "insufficient_scope")
	})
}

type templateOut struct {
	ID     int64  `json:"id"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	Shared bool   `json:"shared"`
}

func TestSharedTemplates(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		shared := `{"title":"Late","body":"Hi {first_name}, we are running late.","shared":true}`
		// Agnes (users:self) may not make a team reply; Max (users:all) may.
		f.wantError(t, "POST", "/sms/templates", f.agnesTok, shared, http.StatusForbidden, "permission_denied")
		var team, own, keys templateOut
		f.call(t, "POST", "/sms/templates", f.maxTok, shared, http.StatusCreated, &team)
		if !team.Shared || team.Body != "Hi {first_name}, we are running late." {
			t.Fatalf("created %+v", team)
		}
		f.call(t, "POST", "/sms/templates", f.agnesTok, `{"title":"Mine","body":"See you soon"}`, http.StatusCreated, &own)
		if own.Shared {
			t.Errorf("a personal reply says shared")
		}
		f.call(t, "POST", "/sms/templates", f.key, `{"title":"Bot","body":"Automated","shared":true}`, http.StatusCreated, &keys)
		ids := func(cred string) []int64 {
			var list []templateOut
			f.call(t, "GET", "/sms/templates", cred, "", http.StatusOK, &list)
			var out []int64
			for _, x := range list {
				out = append(out, x.ID)
			}
			return out
		}
		// Everyone of Acme lists the team's beside their own; Beta nothing of it.
		if got := ids(f.agnesTok); !slices.Equal(got, []int64{team.ID, own.ID, keys.ID}) {
			t.Errorf("Agnes lists %v, want %v", got, []int64{team.ID, own.ID, keys.ID})
		}
		if got := ids(f.maxTok); !slices.Equal(got, []int64{team.ID, keys.ID}) {
			t.Errorf("Max lists %v (Agnes's own is hers)", got)
		}
		if got := ids(f.betaKey); len(got) != 0 {
			t.Errorf("Beta lists %v", got)
		}
		path := fmt.Sprintf("/sms/templates/%d", team.ID)
		// Agnes sees it but may not change it.
		f.wantError(t, "PUT", path, f.agnesTok, `{"title":"Late","body":"x"}`, http.StatusForbidden, "permission_denied")
		f.wantError(t, "DELETE", path, f.agnesTok, "", http.StatusForbidden, "permission_denied")
		f.wantError(t, "PUT", path, f.betaKey, `{"title":"Late","body":"x"}`, http.StatusNotFound, "not_found")
		f.wantError(t, "DELETE", path, f.betaKey, "", http.StatusNotFound, "not_found")
		// Max may, whoever wrote it; shared stays what it is.
		f.wantError(t, "PUT", path, f.maxTok, `{"title":"Late","body":"x","shared":false}`, http.StatusBadRequest, "invalid_request")
		var got templateOut
		f.call(t, "PUT", fmt.Sprintf("/sms/templates/%d", keys.ID), f.maxTok, `{"title":"Bot","body":"Edited by Max"}`, http.StatusOK, &got)
		if !got.Shared || got.Body != "Edited by Max" {
			t.Errorf("Max's edit of the key's shared reply: %+v", got)
		}
		// Max cannot reach Agnes's own.
		f.wantError(t, "PUT", fmt.Sprintf("/sms/templates/%d", own.ID), f.maxTok, `{"title":"x","body":"x"}`, http.StatusNotFound, "not_found")
		f.call(t, "DELETE", path, f.maxTok, "", http.StatusNoContent, nil)
		if got := ids(f.agnesTok); !slices.Equal(got, []int64{own.ID, keys.ID}) {
			t.Errorf("after the delete Agnes lists %v", got)
		}
	})
}

type historyPage struct {
	Data []struct {
		ID      int64  `json:"id"`
		Kind    string `json:"kind"`
		By      *int64 `json:"by"`
		UserID  int64  `json:"userId"`
		Comment string `json:"comment"`
	} `json:"data"`
	Next *int64 `json:"next"`
}

func TestConversationHistory(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		f.receive(t, inboxDesk, custA, "hello")
		base := "/sms/conversations/" + inboxDesk + "/" + custA
		f.call(t, "POST", base+"/assign", f.maxTok, fmt.Sprintf(`{"userId":%d}`, f.agnes.ID), http.StatusOK, nil)
		f.call(t, "POST", base+"/comments", f.agnesTok, `{"comment":"on it"}`, http.StatusCreated, nil)
		f.call(t, "POST", base+"/resolve", f.agnesTok, "", http.StatusOK, nil)
		f.call(t, "POST", base+"/reopen", f.key, "", http.StatusOK, nil)
		f.receive(t, inboxDesk, custA, "one more thing")

		var all []string
		var bys []string
		cursor := ""
		for pages := 0; ; pages++ {
			var p historyPage
			b := f.call(t, "GET", base+"/history?limit=2"+cursor, f.agnesTok, "", http.StatusOK, nil)
			must(t, json.Unmarshal(b, &p))
			for _, e := range p.Data {
				all = append(all, e.Kind)
				by := "api"
				if e.By != nil {
					by = fmt.Sprint(*e.By)
				}
				bys = append(bys, by)
				if e.Kind == "assigned" && e.UserID != f.agnes.ID {
					t.Errorf("assigned to %d, want Agnes", e.UserID)
				}
				if e.Kind == "commented" && e.Comment != "on it" {
					t.Errorf("comment %q", e.Comment)
				}
			}
			if p.Next == nil {
				break
			}
			if pages > 5 {
				t.Fatal("the pages do not end")
			}
			cursor = fmt.Sprintf("&before=%d", *p.Next)
		}
		want := []string{"reopened", "resolved", "commented", "assigned"}
		if !slices.Equal(all, want) {
			t.Errorf("history %v, want %v (newest first)", all, want)
		}
		wantBy := []string{"api", fmt.Sprint(f.agnes.ID), fmt.Sprint(f.agnes.ID), fmt.Sprint(f.max.ID)}
		if !slices.Equal(bys, wantBy) {
			t.Errorf("by %v, want %v", bys, wantBy)
		}
		// A text reopening a resolved thread is in it too, by nobody.
		f.call(t, "POST", base+"/resolve", f.maxTok, "", http.StatusOK, nil)
		f.receive(t, inboxDesk, custA, "and another")
		var p historyPage
		must(t, json.Unmarshal(f.call(t, "GET", base+"/history?limit=1", f.maxTok, "", http.StatusOK, nil), &p))
		if len(p.Data) != 1 || p.Data[0].Kind != "reopenedByText" || p.Data[0].By != nil || p.Next == nil {
			t.Errorf("newest entry %+v, want reopenedByText by nobody, with a next page", p)
		}
		// A pair with no state has none; a line Agnes cannot use and
		// another account's are not found.
		p = historyPage{}
		must(t, json.Unmarshal(f.call(t, "GET", "/sms/conversations/"+inboxMain+"/"+custD+"/history", f.agnesTok, "", http.StatusOK, nil), &p))
		if len(p.Data) != 0 || p.Next != nil {
			t.Errorf("history of a pair with no state: %+v", p)
		}
		f.wantError(t, "GET", "/sms/conversations/"+inboxHidden+"/"+custA+"/history", f.agnesTok, "", http.StatusNotFound, "not_found")
		f.wantError(t, "GET", base+"/history", f.betaKey, "", http.StatusNotFound, "not_found")
		f.wantError(t, "GET", base+"/history?before=0", f.maxTok, "", http.StatusBadRequest, "invalid_request")
	})
}

func TestListSaysWhoSentTheLastText(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		f.receive(t, inboxMain, custA, "hi")
		f.send(t, inboxMain, f.agnes.ID, "hello from Agnes", custB)
		f.send(t, inboxMain, 0, "hello from the API", custC)
		var list []struct {
			Number string `json:"number"`
			SentBy *int64 `json:"lastMessageSentBy"`
		}
		// Twice: the first page is kept encoded, and the second answer comes
		// from there.
		for range 2 {
			f.call(t, "GET", "/sms/conversations?lines="+inboxMain, f.maxTok, "", http.StatusOK, &list)
			got := map[string]string{}
			for _, c := range list {
				got[c.Number] = "null"
				if c.SentBy != nil {
					got[c.Number] = fmt.Sprint(*c.SentBy)
				}
			}
			want := map[string]string{custA: "null", custB: fmt.Sprint(f.agnes.ID), custC: "null"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("lastMessageSentBy %v, want %v", got, want)
			}
		}
	})
}

// A webhook gets the note with its mentions (conversation.commented), never
// the personal conversation.mentioned.
func TestMentionEventNeverAWebhook(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		var hook struct {
			ID int64 `json:"id"`
		}
		f.call(t, "POST", "/webhooks", f.key, `{"url": "https://hooks.example.com/inbox", "type": "AccountConversations", "enabled": true}`, 201, &hook)
		f.receive(t, inboxMain, custA, "hello")
		f.call(t, "POST", "/sms/conversations/"+inboxMain+"/"+custA+"/comments", f.agnesTok, `{"comment": "@max over to you"}`, 201, nil)
		storetest.FanOut(t, f.st)
		var after int64
		byID := map[int64]convEvent{}
		for _, e := range f.newConvEvents(t, &after) {
			byID[e.ID] = e
		}
		list, err := f.st.WebhookDeliveries(ctx, f.acme.ID, hook.ID, 0, 100)
		must(t, err)
		var kinds []string
		for _, d := range list {
			kinds = append(kinds, byID[d.EventID].Event)
		}
		if !slices.Equal(kinds, []string{domain.ConversationCommented}) || len(byID) != 2 {
			t.Errorf("deliveries %v of %d events, want the note only", kinds, len(byID))
		}
	})
}
