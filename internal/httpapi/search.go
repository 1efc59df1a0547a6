package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/search"
)

// GET /search: contacts by name, company or number, conversations by their
// numbers, messages by their words, grouped; the rules are package search's.

// searchJSON is the search answer: one page of each group searched, and the
// cursor of each group's next page.
type searchJSON struct {
	Data searchGroupsJSON `json:"data"`
	// Next maps a group to its next page's cursor; a group on its last
	// page (or not searched) is absent.
	Next map[search.Group]string `json:"next"`
}

// searchGroupsJSON holds the groups searched; one not searched is absent
// (omitzero: a nil slice), one searched is a list, empty when nothing matched.
type searchGroupsJSON struct {
	Contacts      []contactHitJSON      `json:"contacts,omitzero"`
	Conversations []conversationHitJSON `json:"conversations,omitzero"`
	Messages      []messageHitJSON      `json:"messages,omitzero"`
}

// contactHitJSON is a contact found, as GET /contacts/{id} shows it; the
// object leaves room for what search may say beside it.
type contactHitJSON struct {
	Contact domain.Contact `json:"contact"`
}

// conversationHitJSON is a conversation found: as the list shows it, and
// where its number matched.
type conversationHitJSON struct {
	Conversation conversationItemJSON `json:"conversation"`
	Match        numberMatchJSON      `json:"match"`
}

type numberMatchJSON struct {
	Number string `json:"number"`
	Start  int    `json:"start"`
	End    int    `json:"end"`
}

type messageHitJSON struct {
	ID           int64                 `json:"id"`
	Direction    string                `json:"direction"`
	SentAt       time.Time             `json:"sentAt"`
	Snippet      snippetJSON           `json:"snippet"`
	Conversation conversationStateJSON `json:"conversation"`
	Contact      *domain.ContactRef    `json:"contact,omitempty"`
}

type snippetJSON struct {
	Text    string     `json:"text"`
	Matches []spanJSON `json:"matches"`
}

type spanJSON struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

func (s *Server) searchAll(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(r)
	text, _ := q.raw("q")
	sp := search.Params{Query: text, Types: q.list("types"), Lines: q.list("lines"), From: q.time("from"), To: q.time("to"),
		Resolved: q.bool("resolved"), Unresolved: q.bool("unresolved"),
		Limit: q.int("limit", search.DefaultLimit, 1, search.MaxLimit)}
	sp.Direction, _ = q.raw("direction")
	sp.Cursor, _ = q.raw("cursor")
	if err := q.err(); err != nil {
		return err
	}
	res, err := s.search.Search(r.Context(), principal(r), sp)
	if err != nil {
		return err
	}
	out := searchJSON{Next: map[search.Group]string{}}
	if res.Contacts != nil {
		out.Data.Contacts = make([]contactHitJSON, len(res.Contacts))
		for i, c := range res.Contacts {
			out.Data.Contacts[i] = contactHitJSON{Contact: c}
		}
	}
	if res.Conversations != nil {
		out.Data.Conversations = make([]conversationHitJSON, len(res.Conversations))
		for i, c := range res.Conversations {
			out.Data.Conversations[i] = conversationHitJSON{Conversation: toItemJSON(c.ConversationSummary),
				Match: numberMatchJSON{Number: c.Match.Number, Start: c.Match.Start, End: c.Match.End}}
		}
	}
	if res.Messages != nil {
		out.Data.Messages = make([]messageHitJSON, len(res.Messages))
		for i, m := range res.Messages {
			sn := snippetJSON{Text: m.Snippet.Text, Matches: make([]spanJSON, len(m.Snippet.Matches))}
			for j, sp := range m.Snippet.Matches {
				sn.Matches[j] = spanJSON{Start: sp.Start, End: sp.End}
			}
			out.Data.Messages[i] = messageHitJSON{ID: m.ID, Direction: m.Direction, SentAt: m.At.UTC().Truncate(time.Second),
				Snippet: sn, Conversation: toStateJSON(m.Conversation), Contact: m.Contact}
		}
	}
	for g, c := range res.Next {
		out.Next[g] = c
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return err
	}
	writeEncoded(w, http.StatusOK, b.Bytes())
	return nil
}
