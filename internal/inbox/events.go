package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// The inbox's AccountConversations events (docs/decisions.md, "Inbox changes
// are events"). Each write reads the conversation's state first, decides
// from it what the change does (nothing, for a no-op: no event), builds the
// event with the state after it, and hands both to the store, which writes
// the event in the change's transaction if the state is still the one read
// (store.ErrStateMoved otherwise: another write came between, so the inbox
// reads again and rebuilds). State writes are rare, so the extra read is
// cheap; the hot read with markRead already has the state in hand.

// stateAttempts bounds the retries of a write whose conversation keeps
// changing under it.
const stateAttempts = 5

// retryMoved runs write until its conversation holds still.
func retryMoved(write func() error) error {
	var err error
	for range stateAttempts {
		if err = write(); !errors.Is(err, store.ErrStateMoved) {
			return err
		}
	}
	return domain.Errorf(domain.Conflict, "the conversation kept changing while this request updated it; try again")
}

// current returns the stored state of key, the empty state of a pair that
// has none yet (a state write creates it).
func (s *Service) current(ctx context.Context, key domain.ConversationKey) (domain.Conversation, error) {
	c, _, err := s.store.Conversation(ctx, key)
	if domain.IsNotFound(err) {
		return domain.Conversation{Key: key, AccountID: key.Line.AccountID}, nil
	}
	return c, err
}

// convEvent is the event of kind on conversation c (its state after the
// change), done by p.
func convEvent(kind string, p auth.Principal, c domain.Conversation) domain.ConversationEvent {
	e := domain.ConversationEvent{Event: kind, Line: c.Key.Line.Number, Number: c.Key.Number(), State: eventState(c)}
	if c.Key.IsGroup() {
		e.GroupParticipants = c.Key.Participants
	}
	if p.IsUser() {
		by := p.UserID
		e.By = &by
	}
	return e
}

func eventState(c domain.Conversation) domain.ConversationEventState {
	st := domain.ConversationEventState{Resolved: c.Resolved(), ResolvedBy: optionalID(c.ResolvedBy), AssignedTo: optionalID(c.AssignedTo)}
	if c.ResolvedAt != nil {
		at := c.ResolvedAt.UTC().Truncate(time.Second).Format(time.RFC3339)
		st.ResolvedAt = &at
	}
	return st
}

func optionalID(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

// encode makes e an event for everyone who may see the conversation.
func encode(e domain.ConversationEvent) (domain.Event, error) {
	b, err := json.Marshal(e)
	return domain.Event{Type: domain.EventAccountConversations, Payload: b}, err
}

// personal makes e an event for user alone (a change of their read state).
func personal(e domain.ConversationEvent, user int64) (domain.Event, error) {
	ev, err := encode(e)
	ev.Audience = user
	return ev, err
}

// readEvent is the conversation.read event of p's read of the whole of c,
// with the slot for the watermark the store fills: only the transaction
// knows the thread's newest message. None for an API key (no personal
// state moves; see decisions.md).
func readEvent(p auth.Principal, c domain.Conversation) (store.ReadChange, error) {
	rc := store.ReadChange{Expect: &c}
	if !p.IsUser() {
		return rc, nil
	}
	e := convEvent(domain.ConversationRead, p, c)
	e.ReadThrough = store.PlaceholderID
	ev, err := encode(e)
	if err != nil {
		return rc, err
	}
	t, err := store.NewIDTemplate(ev.Payload, `"readThrough":`)
	rc.Event, rc.Audience = store.RowEvent{Type: ev.Type, Payload: t}, p.UserID
	return rc, err
}
