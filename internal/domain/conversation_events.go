package domain

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
)

// ConversationEvent is the payload of an AccountConversations event: the
// conversation (line, number and, on a group thread, every participant, as
// the inbox's responses name it), who did it (By: the user, nil for an API
// key) and the conversation's state after the change. MessageID is the
// message a message.deleted erased, Comment the note a comment (or a resolve
// with a comment) saved, ReadThrough the user's new watermark after a
// conversation.read of the whole thread (every message up to it is read),
// MessageIDs the messages a read or unread of single messages set.
type ConversationEvent struct {
	Event             string                 `json:"event"`
	Line              string                 `json:"line"`
	Number            string                 `json:"number"`
	GroupParticipants []string               `json:"groupParticipants,omitempty"`
	By                *int64                 `json:"by"`
	State             ConversationEventState `json:"state"`
	MessageID         int64                  `json:"messageId,omitempty"`
	Comment           string                 `json:"comment,omitempty"`
	ReadThrough       int64                  `json:"readThrough,omitempty"`
	MessageIDs        []int64                `json:"messageIds,omitempty"`
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
