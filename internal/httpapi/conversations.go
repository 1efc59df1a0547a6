package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/inbox"
)

// The shared inbox: conversations, thread reads, read state, unread counts,
// resolve, reopen, assign and comments. Handlers decode, call the inbox
// service once and encode; the rules live in package inbox.

// conversationStateJSON is the public API's conversation state (resolve,
// reopen, assign, comments), with assignedTo beside the spec's fields.
type conversationStateJSON struct {
	Line              string     `json:"line"`
	Number            string     `json:"number"`
	GroupParticipants []string   `json:"groupParticipants,omitempty"`
	Resolved          bool       `json:"resolved"`
	ResolvedBy        int64      `json:"resolvedBy,omitempty"`
	ResolvedAt        *time.Time `json:"resolvedAt,omitempty"`
	AssignedTo        int64      `json:"assignedTo,omitempty"`
}

func toStateJSON(c domain.Conversation) conversationStateJSON {
	out := conversationStateJSON{Line: c.Key.Line.Number, Number: c.Key.Number(), Resolved: c.Resolved(),
		ResolvedBy: c.ResolvedBy, ResolvedAt: utc(c.ResolvedAt), AssignedTo: c.AssignedTo}
	if c.Key.IsGroup() {
		out.GroupParticipants = c.Key.Participants
	}
	return out
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC().Truncate(time.Second)
	return &u
}

// conversationItemJSON is the public API's ConversationListItem.
type conversationItemJSON struct {
	Line              string             `json:"line"`
	Number            string             `json:"number"`
	Contact           *domain.ContactRef `json:"contact,omitempty"`
	GroupParticipants []string           `json:"groupParticipants,omitempty"`
	LastMessage       string             `json:"lastMessage"`
	LastMessageID     int64              `json:"lastMessageId"`
	LastMessageAt     time.Time          `json:"lastMessageAt"`
	Direction         string             `json:"direction"`
	SentBy            *int64             `json:"lastMessageSentBy"`
	HasMedia          bool               `json:"hasMedia"`
	Unread            bool               `json:"unread"`
	UnreadCount       int64              `json:"unreadCount"`
	Resolved          bool               `json:"resolved"`
	ResolvedBy        int64              `json:"resolvedBy,omitempty"`
	ResolvedAt        *time.Time         `json:"resolvedAt,omitempty"`
	AssignedTo        int64              `json:"assignedTo,omitempty"`
}

func toItemJSON(c domain.ConversationSummary) conversationItemJSON {
	st := toStateJSON(c.Conversation)
	item := conversationItemJSON{Line: st.Line, Number: st.Number, GroupParticipants: st.GroupParticipants,
		LastMessage: c.LastMessage, LastMessageID: c.LastMessageID, LastMessageAt: c.LastMessageAt.Truncate(time.Second),
		Direction: c.LastDirection, HasMedia: c.LastHasMedia, Unread: c.UnreadCount > 0, UnreadCount: c.UnreadCount,
		Resolved: st.Resolved, ResolvedBy: st.ResolvedBy, ResolvedAt: st.ResolvedAt, AssignedTo: st.AssignedTo,
		Contact: c.Contact}
	if c.LastSentBy != 0 {
		by := c.LastSentBy
		item.SentBy = &by
	}
	return item
}

// receiptJSON is Message.delivery: the carrier's receipt.
type receiptJSON struct {
	Status string    `json:"status"`
	Error  string    `json:"error"`
	At     time.Time `json:"at"`
}

// messageJSON is the public API's Message in a thread read.
type messageJSON struct {
	ID                int64        `json:"id"`
	Direction         string       `json:"direction"`
	From              string       `json:"from"`
	To                string       `json:"to"`
	Text              string       `json:"text"`
	Media             []string     `json:"media"`
	SentAt            time.Time    `json:"sentAt"`
	Read              bool         `json:"read"`
	ReadBy            []int64      `json:"readBy"`
	SentBy            int64        `json:"sentBy,omitempty"`
	Delivery          *receiptJSON `json:"delivery,omitempty"`
	GroupParticipants []string     `json:"groupParticipants,omitempty"`
	Scheduled         bool         `json:"scheduled"`
	ScheduledAt       *time.Time   `json:"scheduledAt,omitempty"`
	Blocked           bool         `json:"blocked"`
	BlockReason       string       `json:"blockReason,omitempty"`
}

// threadJSON is the thread read response.
type threadJSON struct {
	Line              string             `json:"line"`
	Number            string             `json:"number"`
	Contact           *domain.ContactRef `json:"contact,omitempty"`
	GroupParticipants []string           `json:"groupParticipants,omitempty"`
	// State is beyond the spec: the conversation's resolution and owner,
	// so a client that opens a thread by its address can show them.
	State      conversationStateJSON `json:"state"`
	Messages   []messageJSON         `json:"messages"`
	MarkedRead bool                  `json:"markedRead"`
}

func toThreadJSON(t domain.Thread) threadJSON {
	state := t.State
	state.Key = t.Key
	out := threadJSON{Line: t.Key.Line.Number, Number: t.Key.Number(), Contact: t.Contact, State: toStateJSON(state), Messages: make([]messageJSON, len(t.Messages)), MarkedRead: t.MarkedRead}
	if t.Key.IsGroup() {
		out.GroupParticipants = t.Key.Participants
	}
	for i, m := range t.Messages {
		j := messageJSON{ID: m.ID, Direction: m.Direction, From: m.From, Text: m.Body, Media: nonNil(m.Media),
			SentAt: m.CreatedAt.UTC().Truncate(time.Second), Read: m.Read, ReadBy: nonNil(m.ReadBy), SentBy: m.SentBy,
			GroupParticipants: out.GroupParticipants, Scheduled: m.Scheduled, ScheduledAt: utc(m.ScheduledAt),
			Blocked: m.Blocked, BlockReason: m.BlockReason}
		// to is one number: the line for a text received, the other party
		// for one sent (on a group thread, the number the thread is named by).
		switch {
		case m.Direction == "in":
			j.To = t.Key.Line.Number
		case len(m.To) == 1:
			j.To = m.To[0]
		default:
			j.To = t.Key.Number()
		}
		if m.DeliveryStatus != "" && m.DeliveryAt != nil {
			j.Delivery = &receiptJSON{Status: m.DeliveryStatus, Error: m.DeliveryError, At: m.DeliveryAt.UTC().Truncate(time.Second)}
		}
		out.Messages[i] = j
	}
	return out
}

// address reads a conversation's address from the path and the
// groupParticipants parameter.
func address(r *http.Request, q *queryParams) inbox.Address {
	return inbox.Address{Line: r.PathValue("line"), Number: r.PathValue("number"), GroupParticipants: q.list("groupParticipants")}
}

func (s *Server) listConversations(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(r)
	lp := inbox.ListParams{
		Lines: q.list("lines"), Unread: q.bool("unread"), Unresolved: q.bool("unresolved"),
		Resolved: q.bool("resolved"), AssignedToMe: q.bool("assignedToMe"), Unassigned: q.bool("unassigned"),
		Limit: q.int("limit", inbox.DefaultLimit, 1, inbox.MaxLimit), Offset: q.int("offset", 0, 0, inbox.MaxOffset),
	}
	if err := q.err(); err != nil {
		return err
	}
	// First pages come encoded from memory while the database is unchanged
	// (inbox.ListEncoded).
	body, err := s.inbox.ListEncoded(r.Context(), principal(r), lp, func(page []domain.ConversationSummary) ([]byte, error) {
		out := make([]conversationItemJSON, len(page))
		for i, c := range page {
			out[i] = toItemJSON(c)
		}
		return encodeData(out)
	})
	if err != nil {
		return err
	}
	writeEncoded(w, http.StatusOK, body)
	return nil
}

func (s *Server) readThread(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(r)
	tp := inbox.ThreadParams{Address: address(r, q), MarkRead: q.bool("markRead"),
		Limit: q.int("limit", inbox.DefaultLimit, 1, inbox.MaxLimit), Offset: q.int("offset", 0, 0, inbox.MaxOffset)}
	if err := q.err(); err != nil {
		return err
	}
	t, err := s.inbox.Thread(r.Context(), principal(r), tp)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toThreadJSON(t))
	return nil
}

func (s *Server) readThreadAround(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(r)
	a, limit := address(r, q), q.int("limit", inbox.DefaultLimit, 1, inbox.MaxLimit)
	if err := q.err(); err != nil {
		return err
	}
	id, err := pathID(r, "id", "message")
	if err != nil {
		return err
	}
	t, err := s.inbox.ThreadAround(r.Context(), principal(r), a, id, limit)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toThreadJSON(t))
	return nil
}

func (s *Server) deleteConversation(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(r)
	a := address(r, q)
	if err := q.err(); err != nil {
		return err
	}
	if err := s.inbox.DeleteConversation(r.Context(), principal(r), a); err != nil {
		return err
	}
	writeNoContent(w)
	return nil
}

func (s *Server) deleteMessage(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(r)
	a := address(r, q)
	if err := q.err(); err != nil {
		return err
	}
	id, err := pathID(r, "id", "message")
	if err != nil {
		return err
	}
	if err := s.inbox.DeleteMessage(r.Context(), principal(r), a, id); err != nil {
		return err
	}
	writeNoContent(w)
	return nil
}

// markMessagesRequest is the body of POST …/read.
type markMessagesRequest struct {
	MessageIDs []int64 `json:"messageIds"`
	Read       *bool   `json:"read"`
}

func (s *Server) markMessages(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(r)
	a := address(r, q)
	if err := q.err(); err != nil {
		return err
	}
	var req markMessagesRequest
	if err := decodeJSON(w, r, &req, defaultBodyLimit, false); err != nil {
		return err
	}
	if req.MessageIDs == nil {
		return domain.Errorf(domain.Invalid, "messageIds is required: 1 to %d message ids", inbox.MaxMarkIDs)
	}
	read := req.Read == nil || *req.Read
	if err := s.inbox.MarkMessages(r.Context(), principal(r), a, req.MessageIDs, read); err != nil {
		return err
	}
	writeNoContent(w)
	return nil
}

// lineReadRequest is the body of POST /sms/lines/{line}/read.
type lineReadRequest struct {
	Since *string `json:"since"`
}

func (s *Server) markLineRead(w http.ResponseWriter, r *http.Request) error {
	var req lineReadRequest
	if err := decodeJSON(w, r, &req, defaultBodyLimit, true); err != nil {
		return err
	}
	var since time.Time
	if req.Since != nil {
		t, err := time.Parse(time.RFC3339Nano, *req.Since)
		if err != nil {
			return domain.Errorf(domain.Invalid, "since must be an RFC 3339 time such as 2025-01-31T09:00:00Z; got %q", *req.Since)
		}
		since = t
	}
	if err := s.inbox.MarkLineRead(r.Context(), principal(r), r.PathValue("line"), since); err != nil {
		return err
	}
	writeNoContent(w)
	return nil
}

// unreadJSON is the public API's unread counts.
type unreadJSON struct {
	Total int64            `json:"total"`
	Lines []lineUnreadJSON `json:"lines"`
}

type lineUnreadJSON struct {
	Line  string `json:"line"`
	Count int64  `json:"count"`
}

func (s *Server) unread(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(r)
	lines, since := q.list("lines"), q.time("since")
	if err := q.err(); err != nil {
		return err
	}
	// Kept encoded while the database is unchanged (inbox.UnreadEncoded).
	body, err := s.inbox.UnreadEncoded(r.Context(), principal(r), lines, since, func(counts []domain.LineUnread) ([]byte, error) {
		out := unreadJSON{Lines: make([]lineUnreadJSON, len(counts))}
		for i, c := range counts {
			out.Lines[i] = lineUnreadJSON{Line: c.Line, Count: c.Count}
			out.Total += c.Count
		}
		return encodeData(out)
	})
	if err != nil {
		return err
	}
	writeEncoded(w, http.StatusOK, body)
	return nil
}

// resolveRequest is the optional body of POST …/resolve.
type resolveRequest struct {
	ResolvedBy *int64 `json:"resolvedBy"`
	Comment    string `json:"comment"`
}

func (s *Server) resolveConversation(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(r)
	a := address(r, q)
	if err := q.err(); err != nil {
		return err
	}
	var req resolveRequest
	if err := decodeJSON(w, r, &req, defaultBodyLimit, true); err != nil {
		return err
	}
	c, err := s.inbox.Resolve(r.Context(), principal(r), a, req.ResolvedBy, req.Comment)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toStateJSON(c))
	return nil
}

func (s *Server) reopenConversation(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(r)
	a := address(r, q)
	if err := q.err(); err != nil {
		return err
	}
	// No body is needed; an empty object is accepted, anything in it is not.
	var req struct{}
	if err := decodeJSON(w, r, &req, defaultBodyLimit, true); err != nil {
		return err
	}
	c, err := s.inbox.Reopen(r.Context(), principal(r), a)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toStateJSON(c))
	return nil
}

// nullableID is a JSON integer that may be null, remembering whether the
// field was present at all: assign's {"userId": null} unassigns, {} is a mistake.
type nullableID struct {
	Set   bool
	Value *int64
}

func (n *nullableID) UnmarshalJSON(b []byte) error {
	n.Set = true
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		n.Value = nil
		return nil
	}
	var v int64
	if err := json.Unmarshal(b, &v); err != nil {
		return &json.UnmarshalTypeError{Value: string(bytes.TrimSpace(b)), Type: reflect.TypeOf(v), Field: "userId"}
	}
	n.Value = &v
	return nil
}

// assignRequest is the body of POST …/assign.
type assignRequest struct {
	UserID nullableID `json:"userId"`
}

func (s *Server) assignConversation(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(r)
	a := address(r, q)
	if err := q.err(); err != nil {
		return err
	}
	var req assignRequest
	if err := decodeJSON(w, r, &req, defaultBodyLimit, false); err != nil {
		return err
	}
	if !req.UserID.Set {
		return domain.Errorf(domain.Invalid, "userId is required: a user id, or null to unassign")
	}
	c, err := s.inbox.Assign(r.Context(), principal(r), a, req.UserID.Value)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toStateJSON(c))
	return nil
}

// commentRequest is the body of POST …/comments.
type commentRequest struct {
	Comment *string `json:"comment"`
}

func (s *Server) addComment(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(r)
	a := address(r, q)
	if err := q.err(); err != nil {
		return err
	}
	var req commentRequest
	if err := decodeJSON(w, r, &req, defaultBodyLimit, false); err != nil {
		return err
	}
	if req.Comment == nil {
		return domain.Errorf(domain.Invalid, "comment is required")
	}
	c, mentions, err := s.inbox.Comment(r.Context(), principal(r), a, *req.Comment)
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, commentedJSON{conversationStateJSON: toStateJSON(c), Mentions: nonNil(mentions)})
	return nil
}

// commentedJSON is POST …/comments's answer: the conversation's state and
// whom the note mentions (user ids; empty when nobody).
type commentedJSON struct {
	conversationStateJSON
	Mentions []int64 `json:"mentions"`
}

// commentJSON is an internal note as GET …/comments lists it.
type commentJSON struct {
	ID        int64     `json:"id"`
	Comment   string    `json:"comment"`
	AuthorID  int64     `json:"authorId,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(r)
	a := address(r, q)
	if err := q.err(); err != nil {
		return err
	}
	list, err := s.inbox.Comments(r.Context(), principal(r), a)
	if err != nil {
		return err
	}
	out := make([]commentJSON, len(list))
	for i, c := range list {
		out[i] = commentJSON{ID: c.ID, Comment: c.Body, AuthorID: c.AuthorID, CreatedAt: c.CreatedAt.UTC().Truncate(time.Second)}
	}
	writeData(w, http.StatusOK, out)
	return nil
}
