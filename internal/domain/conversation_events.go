package domain

import (
	"encoding/json"
	"time"
)

// EventAccountConversations is the shared inbox's event type, an addition
// beside the spec's five (docs/decisions.md, "Inbox changes are events"):
// resolve, reopen, assign, comment, deletions and read-state changes.
const EventAccountConversations = "AccountConversations"

// ConversationEvent names, the payload's "event".
const (
	ConversationResolved  = "conversation.resolved"
	ConversationReopened  = "conversation.reopened"
	ConversationAssigned  = "conversation.assigned"
	ConversationCommented = "conversation.commented"
	ConversationDeleted   = "conversation.deleted"
	MessageDeleted        = "message.deleted"
	ConversationRead      = "conversation.read"
	ConversationUnread    = "conversation.unread"
	// ConversationMentioned is personal: a note (conversation.commented)
	// mentioned the event's audience.
	ConversationMentioned = "conversation.mentioned"
)

// ConversationEvent is the payload of an AccountConversations event: the
// conversation (line, number and, on a group thread, every participant, as
// the inbox's responses name it), who did it (By: the user, nil for an API
// key) and the conversation's state after the change (nil while the payload
// is a template: the write's transaction fills it, see store.ConvEvent). MessageID is the
// message a message.deleted erased, Comment the note a comment (or a resolve
// with a comment) saved, ReadThrough the user's new watermark after a
// conversation.read of the whole thread (every message up to it is read),
// MessageIDs the messages a read or unread of single messages set, Mentions
// the people a note mentions (conversation.commented, and the personal
// conversation.mentioned each of them gets).
type ConversationEvent struct {
	Event             string                  `json:"event"`
	Line              string                  `json:"line"`
	Number            string                  `json:"number"`
	GroupParticipants []string                `json:"groupParticipants,omitempty"`
	By                *int64                  `json:"by"`
	State             *ConversationEventState `json:"state"`
	MessageID         int64                   `json:"messageId,omitempty"`
	Comment           string                  `json:"comment,omitempty"`
	ReadThrough       int64                   `json:"readThrough,omitempty"`
	MessageIDs        []int64                 `json:"messageIds,omitempty"`
	Mentions          []int64                 `json:"mentions,omitempty"`
}

// ConversationEventState is a conversation's state in an event. Unlike the
// API's responses, which leave out what is unset, every field is always
// present (null when unset), so a client can apply it as it stands.
type ConversationEventState struct {
	Resolved   bool    `json:"resolved"`
	ResolvedBy *int64  `json:"resolvedBy"`
	ResolvedAt *string `json:"resolvedAt"` // RFC 3339, UTC, whole seconds (as the API's resolvedAt)
	AssignedTo *int64  `json:"assignedTo"`
}

// NewConversationEventState is c's state as an event carries it.
func NewConversationEventState(c Conversation) ConversationEventState {
	st := ConversationEventState{Resolved: c.Resolved(), ResolvedBy: optionalID(c.ResolvedBy), AssignedTo: optionalID(c.AssignedTo)}
	if c.ResolvedAt != nil {
		at := c.ResolvedAt.UTC().Truncate(time.Second).Format(time.RFC3339)
		st.ResolvedAt = &at
	}
	return st
}

// AppendConversationState appends c's state, encoded as an event carries it.
func AppendConversationState(b []byte, c Conversation) []byte {
	enc, _ := json.Marshal(NewConversationEventState(c)) // ids, a bool and a time: never fails
	return append(b, enc...)
}

func optionalID(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}
