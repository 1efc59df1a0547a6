package httpapi_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"switchboard/internal/domain"
	"switchboard/internal/store/storetest"
)

// convEvent is an AccountConversations event as written, with its audience.
type convEvent struct {
	ID       int64
	Audience int64
	domain.ConversationEvent
}

// newConvEvents returns the account's AccountConversations events written
// since the last call (after is the cursor it keeps).
func (f *inboxFixture) newConvEvents(t *testing.T, after *int64) []convEvent {
	t.Helper()
	evs, err := f.st.Events(ctx, f.acme.ID, *after, 1000)
	must(t, err)
	var out []convEvent
	for _, e := range evs {
		*after = e.ID
		if e.Type != domain.EventAccountConversations {
			continue
		}
		c := convEvent{ID: e.ID, Audience: e.Audience}
		must(t, json.Unmarshal(e.Payload, &c.ConversationEvent))
		out = append(out, c)
	}
	return out
}

// wantOne checks that exactly one event was written since the cursor, of
// kind, and returns it.
func (f *inboxFixture) wantOne(t *testing.T, after *int64, what, kind string) convEvent {
	t.Helper()
	evs := f.newConvEvents(t, after)
	if len(evs) != 1 || evs[0].Event != kind {
		t.Fatalf("%s wrote %+v, want one %s", what, evs, kind)
	}
	return evs[0]
}

func (f *inboxFixture) wantNone(t *testing.T, after *int64, what string) {
	t.Helper()
	if evs := f.newConvEvents(t, after); len(evs) != 0 {
		t.Errorf("%s wrote %+v, want no event", what, evs)
	}
}

func id(v int64) *int64 { return &v }

// Each inbox change writes exactly its AccountConversations event, with who
// did it and the state after it; a request that changes nothing writes none.
func TestInboxChangesAreEvents(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		path := "/sms/conversations/" + inboxMain + "/" + custA
		m1 := f.receive(t, inboxMain, custA, "hello")
		var after int64
		f.newConvEvents(t, &after) // the text's own events are AccountSMS

		// Resolve by Max: the state after it, Max as by and resolvedBy.
		var st state
		f.call(t, "POST", path+"/resolve", f.maxTok, `{"comment": " done "}`, 200, &st)
		e := f.wantOne(t, &after, "resolve", domain.ConversationResolved)
		if e.Line != inboxMain || e.Number != custA || e.GroupParticipants != nil || e.By == nil || *e.By != f.max.ID || e.Audience != 0 ||
			!e.State.Resolved || e.State.ResolvedBy == nil || *e.State.ResolvedBy != f.max.ID || e.State.ResolvedAt == nil ||
			*e.State.ResolvedAt != st.ResolvedAt || e.State.AssignedTo != nil || e.Comment != "done" {
			t.Errorf("resolve event = %+v (response %+v)", e, st)
		}
		// Resolving a resolved conversation re-stamps nothing: no event;
		// with a comment, the comment's.
		f.call(t, "POST", path+"/resolve", f.key, fmt.Sprintf(`{"resolvedBy": %d}`, f.agnes.ID), 200, nil)
		f.wantNone(t, &after, "resolving a resolved conversation")
		f.call(t, "POST", path+"/resolve", f.key, `{"comment": "still done"}`, 200, nil)
		e = f.wantOne(t, &after, "resolving a resolved conversation with a comment", domain.ConversationCommented)
		if e.By != nil || e.Comment != "still done" || !e.State.Resolved || *e.State.ResolvedBy != f.max.ID {
			t.Errorf("comment on a resolved conversation = %+v", e)
		}

		// Reopen, then a reopen of an open conversation writes nothing.
		f.call(t, "POST", path+"/reopen", f.agnesTok, "", 200, nil)
		e = f.wantOne(t, &after, "reopen", domain.ConversationReopened)
		if *e.By != f.agnes.ID || e.State.Resolved || e.State.ResolvedBy != nil || e.State.ResolvedAt != nil {
			t.Errorf("reopen event = %+v", e)
		}
		f.call(t, "POST", path+"/reopen", f.agnesTok, "", 200, nil)
		f.wantNone(t, &after, "reopening an open conversation")

		// Assign, to the same user again (nothing), unassign.
		f.call(t, "POST", path+"/assign", f.key, fmt.Sprintf(`{"userId": %d}`, f.agnes.ID), 200, nil)
		e = f.wantOne(t, &after, "assign", domain.ConversationAssigned)
		if e.By != nil || e.State.AssignedTo == nil || *e.State.AssignedTo != f.agnes.ID {
			t.Errorf("assign event = %+v", e)
		}
		f.call(t, "POST", path+"/assign", f.maxTok, fmt.Sprintf(`{"userId": %d}`, f.agnes.ID), 200, nil)
		f.wantNone(t, &after, "assigning to the owner")
		f.call(t, "POST", path+"/assign", f.maxTok, `{"userId": null}`, 200, nil)
		if e = f.wantOne(t, &after, "unassign", domain.ConversationAssigned); e.State.AssignedTo != nil {
			t.Errorf("unassign event = %+v", e)
		}
		f.call(t, "POST", path+"/assign", f.maxTok, `{"userId": null}`, 200, nil)
		f.wantNone(t, &after, "unassigning an unowned conversation")

		// A comment; a refused one writes nothing.
		f.call(t, "POST", path+"/comments", f.agnesTok, `{"comment": "call them"}`, 201, nil)
		if e = f.wantOne(t, &after, "comment", domain.ConversationCommented); e.Comment != "call them" || *e.By != f.agnes.ID {
			t.Errorf("comment event = %+v", e)
		}
		f.wantError(t, "POST", path+"/comments", f.agnesTok, `{"comment": " "}`, 400, "invalid_request")
		f.wantNone(t, &after, "a refused comment")

		// Message deletion, then conversation deletion (the state goes with it).
		f.call(t, "POST", path+"/assign", f.key, fmt.Sprintf(`{"userId": %d}`, f.max.ID), 200, nil)
		f.newConvEvents(t, &after)
		f.receive(t, inboxMain, custA, "again")
		f.newConvEvents(t, &after)
		f.call(t, "DELETE", fmt.Sprintf("%s/messages/%d", path, m1), f.maxTok, "", 204, nil)
		e = f.wantOne(t, &after, "message deletion", domain.MessageDeleted)
		if e.MessageID != m1 || *e.By != f.max.ID || *e.State.AssignedTo != f.max.ID {
			t.Errorf("message.deleted = %+v", e)
		}
		f.wantError(t, "DELETE", fmt.Sprintf("%s/messages/%d", path, m1), f.maxTok, "", 404, "not_found")
		f.wantNone(t, &after, "deleting a deleted message")
		f.call(t, "DELETE", path, f.key, "", 204, nil)
		e = f.wantOne(t, &after, "conversation deletion", domain.ConversationDeleted)
		if e.By != nil || e.State == nil || !reflect.DeepEqual(*e.State, domain.ConversationEventState{}) {
			t.Errorf("conversation.deleted = %+v", e)
		}

		// A group thread names every participant.
		f.receive(t, inboxMain, custB, "group", custB, custC)
		f.newConvEvents(t, &after)
		f.call(t, "POST", "/sms/conversations/"+inboxMain+"/"+custB+"/resolve?groupParticipants="+custC, f.maxTok, "", 200, nil)
		if e = f.wantOne(t, &after, "group resolve", domain.ConversationResolved); e.Number != custB || !reflect.DeepEqual(e.GroupParticipants, []string{custB, custC}) {
			t.Errorf("group resolve = %+v", e)
		}
		// Another account's changes are its own.
		f.call(t, "POST", "/sms/conversations/"+inboxBeta+"/"+custA+"/resolve", f.betaKey, "", 200, nil)
		f.wantNone(t, &after, "another account's resolve")
	})
}

// Read-state changes are personal events (their audience is the user), and
// only when the state moved: reading a read thread with markRead writes
// neither an event nor anything else.
func TestInboxReadStateEvents(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		path := "/sms/conversations/" + inboxMain + "/" + custA
		m1 := f.receive(t, inboxMain, custA, "one")
		m2 := f.receive(t, inboxMain, custA, "two")
		var after int64
		f.newConvEvents(t, &after)

		f.call(t, "GET", path+"?markRead=true", f.agnesTok, "", 200, nil)
		e := f.wantOne(t, &after, "markRead", domain.ConversationRead)
		if e.Audience != f.agnes.ID || *e.By != f.agnes.ID || e.ReadThrough != m2 || e.MessageIDs != nil || e.Line != inboxMain || e.Number != custA {
			t.Errorf("markRead event = %+v", e)
		}
		// The hot read finds the thread read: no write at all.
		writes := f.st.CommitStats().Writes
		f.call(t, "GET", path+"?markRead=true", f.agnesTok, "", 200, nil)
		f.wantNone(t, &after, "markRead of a read thread")
		if n := f.st.CommitStats().Writes - writes; n != 0 {
			t.Errorf("markRead of a read thread made %d writes, want 0", n)
		}
		// An API key moves the team view only: no personal event.
		f.call(t, "GET", path+"?markRead=true", f.key, "", 200, nil)
		f.wantNone(t, &after, "markRead by an API key")

		f.call(t, "POST", path+"/read", f.agnesTok, fmt.Sprintf(`{"messageIds": [%d, %d], "read": false}`, m1, m1), 204, nil)
		e = f.wantOne(t, &after, "mark unread", domain.ConversationUnread)
		if e.Audience != f.agnes.ID || !reflect.DeepEqual(e.MessageIDs, []int64{m1}) || e.ReadThrough != 0 {
			t.Errorf("unread event = %+v", e)
		}
		f.call(t, "POST", path+"/read", f.agnesTok, fmt.Sprintf(`{"messageIds": [%d], "read": false}`, m1), 204, nil)
		f.wantNone(t, &after, "marking an unread message unread")
		f.call(t, "POST", path+"/read", f.agnesTok, fmt.Sprintf(`{"messageIds": [%d, %d]}`, m1, m2), 204, nil)
		if e = f.wantOne(t, &after, "mark read", domain.ConversationRead); !reflect.DeepEqual(e.MessageIDs, []int64{m1, m2}) {
			t.Errorf("read event = %+v", e)
		}
		// Now unread again, so that reading the whole thread moves it.
		f.call(t, "POST", path+"/read", f.agnesTok, fmt.Sprintf(`{"messageIds": [%d], "read": false}`, m2), 204, nil)
		f.newConvEvents(t, &after)
		f.call(t, "GET", path+"?markRead=true", f.agnesTok, "", 200, nil)
		if e = f.wantOne(t, &after, "markRead over a mark", domain.ConversationRead); e.ReadThrough != m2 {
			t.Errorf("markRead event = %+v", e)
		}

		// The line-wide read: one event per conversation that was unread for
		// Max, none for Agnes's already read thread.
		f.receive(t, inboxMain, custB, "b")
		f.newConvEvents(t, &after)
		f.call(t, "POST", "/sms/lines/"+inboxMain+"/read", f.maxTok, "", 204, nil)
		got := map[string]int64{}
		for _, e := range f.newConvEvents(t, &after) {
			if e.Event != domain.ConversationRead || e.Audience != f.max.ID || *e.By != f.max.ID {
				t.Errorf("line read event = %+v", e)
			}
			got[e.Number] = e.ReadThrough
		}
		if len(got) != 2 || got[custA] != m2 || got[custB] == 0 {
			t.Errorf("line read events by number = %v, want %s and %s", got, custA, custB)
		}
		f.call(t, "POST", "/sms/lines/"+inboxMain+"/read", f.maxTok, "", 204, nil)
		f.wantNone(t, &after, "a line read with nothing unread")
	})
}

// A webhook subscribed to AccountConversations (created through the API)
// receives resolve, assign and comment events, never a read-state one.
func TestInboxEventsWebhook(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		var hook struct {
			ID   int64  `json:"id"`
			Type string `json:"type"`
		}
		f.call(t, "POST", "/webhooks", f.key, `{"url": "https://hooks.example.com/inbox", "type": "AccountConversations", "enabled": true}`, 201, &hook)
		if hook.Type != domain.EventAccountConversations {
			t.Fatalf("webhook = %+v", hook)
		}
		path := "/sms/conversations/" + inboxMain + "/" + custA
		m := f.receive(t, inboxMain, custA, "hello")
		f.call(t, "GET", path+"?markRead=true", f.agnesTok, "", 200, nil)
		f.call(t, "POST", path+"/resolve", f.maxTok, "", 200, nil)
		f.call(t, "POST", path+"/read", f.maxTok, fmt.Sprintf(`{"messageIds": [%d]}`, m), 204, nil)
		f.call(t, "POST", path+"/assign", f.maxTok, fmt.Sprintf(`{"userId": %d}`, f.agnes.ID), 200, nil)
		f.call(t, "POST", path+"/comments", f.agnesTok, `{"comment": "on it"}`, 201, nil)
		storetest.FanOut(t, f.st)

		var after int64
		byID := map[int64]convEvent{}
		personal := 0
		for _, e := range f.newConvEvents(t, &after) {
			byID[e.ID] = e
			if e.Audience != 0 {
				personal++
			}
		}
		if personal != 2 || len(byID) != 5 {
			t.Fatalf("%d events, %d personal; want 5, 2", len(byID), personal)
		}
		list, err := f.st.WebhookDeliveries(ctx, f.acme.ID, hook.ID, 0, 100)
		must(t, err)
		var kinds []string
		for i := len(list) - 1; i >= 0; i-- {
			kinds = append(kinds, byID[list[i].EventID].Event)
		}
		want := []string{domain.ConversationResolved, domain.ConversationAssigned, domain.ConversationCommented}
		if !reflect.DeepEqual(kinds, want) {
			t.Errorf("deliveries = %v, want %v", kinds, want)
		}
	})
}

// Concurrent resolves, reopens and assignments of one conversation: every
// change has exactly one event, in the order the changes were made, each
// with the state that change left (the inbox rebuilds an event whose state
// moved under it).
func TestInboxEventsUnderConcurrency(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		path := "/sms/conversations/" + inboxMain + "/" + custA
		f.receive(t, inboxMain, custA, "hello")
		var after int64
		f.newConvEvents(t, &after)
		creds := []string{f.key, f.maxTok, f.agnesTok, f.key}
		var wg sync.WaitGroup
		for i, cred := range creds {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 8 {
					for _, req := range [][2]string{{"/resolve", ""}, {"/assign", fmt.Sprintf(`{"userId": %d}`, []int64{f.max.ID, f.agnes.ID}[(i+j)%2])}, {"/reopen", ""}} {
						if status, _, b := f.do(t, "POST", "/api/public/v1"+path+req[0], cred, req[1]); status != 200 {
							t.Errorf("POST %s: %d %s", req[0], status, b)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		resolved, assigned := false, int64(0)
		evs := f.newConvEvents(t, &after)
		for _, e := range evs {
			switch e.Event {
			case domain.ConversationResolved:
				if resolved {
					t.Fatalf("resolved twice in a row: %+v", e)
				}
				resolved = true
			case domain.ConversationReopened:
				if !resolved {
					t.Fatalf("reopened while open: %+v", e)
				}
				resolved = false
			case domain.ConversationAssigned:
				if e.State.AssignedTo == nil || *e.State.AssignedTo == assigned {
					t.Fatalf("assigned to the owner again: %+v", e)
				}
				assigned = *e.State.AssignedTo
			}
			if e.State.Resolved != resolved || e.State.AssignedTo == nil && assigned != 0 || e.State.AssignedTo != nil && *e.State.AssignedTo != assigned {
				t.Fatalf("event %+v: state does not follow the events before it (resolved %v, assigned %d)", e, resolved, assigned)
			}
		}
		c, _, err := f.st.Conversation(ctx, mustKey(t, f, inboxMain, custA))
		must(t, err)
		acts, err := f.st.ConversationActivity(ctx, c.ID)
		must(t, err)
		if len(acts) != len(evs) || c.Resolved() != resolved || c.AssignedTo != assigned {
			t.Errorf("%d changes recorded, %d events; final state %+v, events say resolved %v assigned %d", len(acts), len(evs), c, resolved, assigned)
		}
	})
}

func mustKey(t *testing.T, f *inboxFixture, line, number string) domain.ConversationKey {
	t.Helper()
	l, err := f.st.LineByNumber(ctx, line)
	must(t, err)
	return domain.ConversationKey{Line: l, Participants: []string{number}}
}
