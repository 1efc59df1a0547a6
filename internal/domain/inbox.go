package domain

import (
	"strings"
	"time"
)

// ConversationKey addresses a conversation: a line and the set of other
// parties. A 1:1 thread has one participant; a group thread several.
type ConversationKey struct {
	Line         Line
	Participants []string // normalized, sorted, distinct; never includes the line
}

// Joined is the participants as the store keys them: sorted, comma-joined.
func (k ConversationKey) Joined() string { return strings.Join(k.Participants, ",") }

// Number is the participant a conversation is named by in paths and
// responses: the only one of a 1:1 thread, the first of a group thread.
func (k ConversationKey) Number() string { return k.Participants[0] }

// IsGroup reports whether the thread has more than one other party.
func (k ConversationKey) IsGroup() bool { return len(k.Participants) > 1 }

// Conversation is a thread's stored state.
type Conversation struct {
	ID         int64
	AccountID  int64
	Key        ConversationKey
	ResolvedAt *time.Time // nil: unresolved
	ResolvedBy int64      // 0: nobody named
	AssignedTo int64      // 0: nobody owns it
}

// Resolved reports whether the conversation is resolved.
func (c Conversation) Resolved() bool { return c.ResolvedAt != nil }

// ConversationSummary is one conversation in a list: its state, its newest
// message and the caller's unread count.
type ConversationSummary struct {
	Conversation
	LastMessageID int64
	LastMessageAt time.Time
	LastMessage   string // the newest message's text, cut to a preview
	LastDirection string // "in" or "out"
	LastSentBy    int64  // the user who sent the newest message; 0 for a text received or sent with an API key
	LastHasMedia  bool
	UnreadCount   int64
	// Contact is the contact that holds a 1:1 conversation's number, where
	// the caller may read contacts.
	Contact *ContactRef
}

// ThreadMessage is a message as a thread read shows it to one caller.
type ThreadMessage struct {
	Message
	Read   bool
	ReadBy []int64 // user ids, ascending
	// Scheduled, ScheduledAt, Blocked and BlockReason are stored with the
	// message by the scheduled-send and blocked-sender work.
	Scheduled   bool
	ScheduledAt *time.Time
	Blocked     bool
	BlockReason string
}

// Thread is one page of a conversation's messages, newest first.
type Thread struct {
	Key ConversationKey
	// State is the conversation's resolution and owner, read with the page.
	State      Conversation
	Messages   []ThreadMessage
	MarkedRead bool
	// Contact: as ConversationSummary's.
	Contact *ContactRef
}

// Comment is an internal note on a conversation, never sent to the other party.
type Comment struct {
	ID        int64
	Body      string
	AuthorID  int64 // 0: written with an API key naming nobody
	CreatedAt time.Time
}

// LineUnread is the unread count of one line.
type LineUnread struct {
	Line  string
	Count int64
}

// Activity kinds recorded for a conversation.
const (
	ActivityResolve       = "resolve"
	ActivityReopen        = "reopen"
	ActivityReopenInbound = "reopen_inbound" // a text arrived on a resolved thread
	ActivityAssign        = "assign"
	ActivityUnassign      = "unassign"
	ActivityComment       = "comment"
)

// LineReaders returns the users of users who may see line, given the
// account's roles: those whose role grants every number, or assigned numbers
// and the line is theirs (or nobody's). An inbound text is unread for each.
func LineReaders(users []User, roles []Role, line Line) []int64 {
	access := make(map[int64]NumberAccess, len(roles))
	for _, r := range roles {
		access[r.ID] = r.Permissions.Numbers
	}
	var out []int64
	for _, u := range users {
		switch access[u.RoleID] {
		case NumbersAll:
			out = append(out, u.ID)
		case NumbersAssigned:
			if line.AvailableTo(u.ID) {
				out = append(out, u.ID)
			}
		}
	}
	return out
}

// NotificationPrefs are what a person wants to be notified of (GET and PUT
// /me/notifications); their clients notify, the server keeps the choice.
type NotificationPrefs struct {
	AssignedToMe      bool // a new inbound text in a conversation assigned to them
	UnassignedOnLines bool // a new inbound text in an unassigned conversation on their lines
	Mentions          bool // a note that mentions them
	UpdatedAt         *time.Time
}
