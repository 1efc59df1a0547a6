package store_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// A conversation event's slots are filled with the state the write left and
// the user's watermark, and nothing else of the payload moves: not even a
// comment that spells out the slots (a JSON string escapes its quotes).
func TestConvEventSlots(t *testing.T) {
	by := int64(7)
	tricky := `"state":null "readThrough":-9223372036854775808 é`
	e := domain.ConversationEvent{Event: domain.ConversationRead, Line: "14155550100", Number: "14155551001", By: &by,
		Comment: tricky, ReadThrough: store.PlaceholderID}
	b, err := json.Marshal(e)
	noErr(t, err)
	tmpl, err := store.NewConvEvent(domain.Event{Type: domain.EventAccountConversations, Payload: b, Audience: by})
	noErr(t, err)
	at := time.Date(2026, 5, 1, 10, 30, 15, 123456000, time.UTC)
	ev := tmpl.With(domain.Conversation{ResolvedAt: &at, ResolvedBy: 3, AssignedTo: 9}, 42)
	if ev.Type != domain.EventAccountConversations || ev.Audience != by {
		t.Errorf("event = %s for %d", ev.Type, ev.Audience)
	}
	var got domain.ConversationEvent
	noErr(t, json.Unmarshal(ev.Payload, &got))
	at2, three, nine := "2026-05-01T10:30:15Z", int64(3), int64(9)
	want := e
	want.ReadThrough = 42
	want.State = &domain.ConversationEventState{Resolved: true, ResolvedBy: &three, ResolvedAt: &at2, AssignedTo: &nine}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("filled = %s", ev.Payload)
	}
	// Without a watermark slot, and for the empty state.
	e.ReadThrough, e.Event = 0, domain.ConversationDeleted
	b, err = json.Marshal(e)
	noErr(t, err)
	tmpl, err = store.NewConvEvent(domain.Event{Type: domain.EventAccountConversations, Payload: b})
	noErr(t, err)
	if got := string(tmpl.With(domain.Conversation{}, 42).Payload); got != `{"event":"conversation.deleted","line":"14155550100","number":"14155551001","by":7,`+
		`"state":{"resolved":false,"resolvedBy":null,"resolvedAt":null,"assignedTo":null},"comment":"\"state\":null \"readThrough\":-9223372036854775808 é"}` {
		t.Errorf("filled = %s", got)
	}
	if _, err := store.NewConvEvent(domain.Event{Type: domain.EventAccountConversations, Payload: []byte(`{"event":"x"}`)}); err == nil {
		t.Error("a payload without a state slot was accepted")
	}
}

// The transaction picks the event that holds: Changed when the write
// changes the conversation, Unchanged (or none) when it does not, each with
// the state as the write left it.
func TestConversationWritePicksItsEvent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		acct := storetest.Account(t, st, nil)
		line := storetest.Line(t, st, acct.ID, nil)
		user := storetest.User(t, st, acct.ID, nil)
		key := domain.ConversationKey{Line: line, Participants: []string{"14155551001"}}
		change := func(changed, unchanged string) store.Change {
			var ch store.Change
			for _, c := range []struct {
				kind string
				to   **store.ConvEvent
			}{{changed, &ch.Changed}, {unchanged, &ch.Unchanged}} {
				if c.kind == "" {
					continue
				}
				b, err := json.Marshal(domain.ConversationEvent{Event: c.kind})
				noErr(t, err)
				*c.to, err = store.NewConvEvent(domain.Event{Type: domain.EventAccountConversations, Payload: b})
				noErr(t, err)
			}
			return ch
		}
		var after int64
		next := func() []domain.ConversationEvent {
			evs, err := st.Events(ctx, acct.ID, after, 10)
			noErr(t, err)
			var out []domain.ConversationEvent
			for _, e := range evs {
				after = e.ID
				var c domain.ConversationEvent
				noErr(t, json.Unmarshal(e.Payload, &c))
				out = append(out, c)
			}
			return out
		}
		resolve := change(domain.ConversationResolved, domain.ConversationCommented)
		_, err := st.Resolve(ctx, store.StateChange{Key: key, Change: resolve}, user.ID, "", user.ID)
		noErr(t, err)
		if evs := next(); len(evs) != 1 || evs[0].Event != domain.ConversationResolved || !evs[0].State.Resolved || *evs[0].State.ResolvedBy != user.ID {
			t.Errorf("resolve wrote %+v", evs)
		}
		_, err = st.Resolve(ctx, store.StateChange{Key: key, Change: resolve}, 0, "again", 0)
		noErr(t, err)
		if evs := next(); len(evs) != 1 || evs[0].Event != domain.ConversationCommented || *evs[0].State.ResolvedBy != user.ID {
			t.Errorf("resolving again wrote %+v", evs)
		}
		assign := change(domain.ConversationAssigned, "")
		for range 2 {
			_, err = st.Assign(ctx, store.StateChange{Key: key, Change: assign}, user.ID)
			noErr(t, err)
		}
		if evs := next(); len(evs) != 1 || *evs[0].State.AssignedTo != user.ID || !evs[0].State.Resolved {
			t.Errorf("assigning twice wrote %+v", evs)
		}
	})
}
