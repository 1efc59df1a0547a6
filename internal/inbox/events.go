package inbox

import (
	"encoding/json"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// The inbox's AccountConversations events (docs/decisions.md, "Inbox changes
// are events"). The inbox builds each write's event ahead of it, with slots
// for what only the write's transaction knows (the conversation's state
// after it; a read's new watermark), and, where the write may change nothing
// (reopening an open conversation, assigning to the owner, resolving a
// resolved one, reading a read thread), what to write then (usually
// nothing): the transaction picks and fills in (store.ConvEvent,
// store.Change). So an event always says what the change did, however
// writes to the same conversation interleave, at no extra read.

// newEvent is the event of kind on conversation key, done by p; its state
// is left for the write to fill.
func newEvent(kind string, p auth.Principal, key domain.ConversationKey) domain.ConversationEvent {
	e := domain.ConversationEvent{Event: kind, Line: key.Line.Number, Number: key.Number()}
	if key.IsGroup() {
		e.GroupParticipants = key.Participants
	}
	if p.IsUser() {
		by := p.UserID
		e.By = &by
	}
	return e
}

// template encodes e (for audience: 0 everyone, or the user of a personal
// event) with its slots.
func template(e domain.ConversationEvent, audience int64) (*store.ConvEvent, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	return store.NewConvEvent(domain.Event{Type: domain.EventAccountConversations, Payload: b, Audience: audience})
}

// changed is the Change of a write that has an event only when it changes
// something.
func changed(e domain.ConversationEvent) (store.Change, error) {
	t, err := template(e, 0)
	return store.Change{Changed: t}, err
}

// readChange is the Change of p's read of the whole of key: a personal
// conversation.read with the user's new watermark, when their state moved.
// None for an API key, whose read moves only the team's view (no one's
// personal state; see decisions.md).
func readChange(p auth.Principal, key domain.ConversationKey) (store.Change, error) {
	if !p.IsUser() {
		return store.Change{}, nil
	}
	e := newEvent(domain.ConversationRead, p, key)
	e.ReadThrough = store.PlaceholderID
	t, err := template(e, p.UserID)
	return store.Change{Changed: t}, err
}
