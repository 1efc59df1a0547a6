package stream

import (
	"encoding/json"
	"slices"
	"strconv"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/webhooks"
)

// Event is one event as the streams receive it, rendered once for all of
// them.
type Event struct {
	Pos            store.EventPos
	AccountID      int64
	AudienceUserID int64
	Type           string
	// Line is the line the event is about (SMS and conversation events);
	// empty for the others.
	Line string
	// test marks a test delivery's own event (POST /webhooks/{id}/test):
	// never streamed (on PostgreSQL it has no xid and is never read; on
	// SQLite nothing else tells it apart).
	test bool
	// keepalive marks the keepalive comment a direct stream's queue may
	// hold: no id, not counted as an event.
	keepalive bool
	// Frame is the SSE message: id, event and data lines.
	Frame []byte
}

// newEvent renders r. The data line is the webhook delivery body of the
// event (webhooks.Body, the one function both use): one line of JSON, as
// encoding/json writes no raw line breaks.
func newEvent(r store.StreamEvent) *Event {
	e := &Event{Pos: r.Pos, AccountID: r.AccountID, AudienceUserID: r.AudienceUserID, Type: r.Type}
	var about struct {
		Event string `json:"event"`
		Line  string `json:"line"`
	}
	_ = json.Unmarshal(r.Payload, &about) // a payload without them is about no line
	e.Line, e.test = about.Line, about.Event == webhooks.TestEvent
	id := domain.EventID(r.Pos.ID)
	body, err := webhooks.Body(id, r.Type, r.CreatedAt, r.Payload)
	if err != nil {
		// Only a payload that is not JSON gets here: the outbox holds none.
		body = []byte(`{"id":` + strconv.Quote(id) + `,"type":` + strconv.Quote(r.Type) + `}`)
	}
	f := make([]byte, 0, len(body)+len(id)+len(r.Type)+24)
	f = append(f, "id: "...)
	f = append(f, id...)
	f = append(f, "\nevent: "...)
	f = append(f, r.Type...)
	f = append(f, "\ndata: "...)
	f = append(f, body...)
	e.Frame = append(f, "\n\n"...)
	return e
}

// Filter is what one stream may see and asked for.
type Filter struct {
	// UserID is the person an OAuth token acts for; 0 for an API key,
	// which sees the team view (every personal event).
	UserID int64
	// Messages: SMS and conversation events, on the lines Lines allows.
	Messages bool
	// Lines are the line numbers the stream may see and asked for; nil
	// means every line of the account.
	Lines map[string]bool
	// OnlyLines: the client narrowed the stream to lines (lines=), so
	// events about no line are left out.
	OnlyLines bool
	// Calls: call events; Transcripts: transcription events.
	Calls, Transcripts bool
	// Contacts: the address book's events, about no line.
	Contacts bool
	// Types are the types asked for; nil means every type.
	Types map[string]bool
}

// The event types by what they are about, for visibility.
var (
	messageTypes    = []string{domain.EventAccountSMS, typeConversations}
	callTypes       = []string{domain.EventRealTimeCalls, domain.EventEndedCalls, domain.EventUserEndedCalls}
	transcriptTypes = []string{domain.EventAITranscription}
	contactTypes    = []string{domain.EventAccountContacts}
)

// category is what an event type is about, for visibility.
func category(typ string) (messages, calls, transcripts bool) {
	return slices.Contains(messageTypes, typ), slices.Contains(callTypes, typ), slices.Contains(transcriptTypes, typ)
}

// typeConversations is the inbox's event type (issue 24).
const typeConversations = "AccountConversations"

// Match reports whether the stream may see e and asked for it. The hub
// hands it only events of the stream's account.
func (f *Filter) Match(e *Event) bool {
	if e.test {
		return false
	}
	if e.AudienceUserID != 0 && f.UserID != 0 && e.AudienceUserID != f.UserID {
		return false // another user's personal event
	}
	if f.Types != nil && !f.Types[e.Type] {
		return false
	}
	if f.OnlyLines && e.Line == "" {
		return false
	}
	messages, calls, transcripts := category(e.Type)
	switch {
	case messages:
		return f.Messages && (f.Lines == nil || f.Lines[e.Line])
	case calls:
		return f.Calls
	case transcripts:
		return f.Transcripts
	case e.Type == domain.EventAccountContacts:
		return f.Contacts
	}
	return false
}

// Select is Match's rule as the store's replay query takes it, so that a
// replay reads only the events the stream may see and asked for (Match
// still checks each one it reads). A test delivery's own event is left to
// Match: nothing but its payload tells it apart on SQLite.
func (f *Filter) Select() store.StreamSelect {
	sel := store.StreamSelect{User: f.UserID}
	add := func(types, lines []string) {
		var asked []string
		for _, t := range types {
			if f.Types == nil || f.Types[t] {
				asked = append(asked, t)
			}
		}
		sel.Any = append(sel.Any, store.StreamClause{Types: asked, Lines: lines, Lined: f.OnlyLines})
	}
	if f.Messages {
		var lines []string
		if f.Lines != nil {
			lines = make([]string, 0, len(f.Lines)) // none granted: no line, not every line
			for n := range f.Lines {
				lines = append(lines, n)
			}
		}
		add(messageTypes, lines)
	}
	var others []string
	if f.Calls {
		others = append(others, callTypes...)
	}
	if f.Transcripts {
		others = append(others, transcriptTypes...)
	}
	if f.Contacts {
		others = append(others, contactTypes...)
	}
	add(others, nil)
	return sel
}
