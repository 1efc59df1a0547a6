package inbox

import (
	"context"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
)

// Paging of a thread's history.
const (
	DefaultHistoryLimit = 50
	MaxHistoryLimit     = 200
)

// The history's kinds, as the API names them: what happened, in the
// past tense of the conversation.* events.
const (
	HistoryResolved       = "resolved"
	HistoryReopened       = "reopened"
	HistoryReopenedByText = "reopenedByText" // a text arrived on a resolved thread
	HistoryAssigned       = "assigned"
	HistoryUnassigned     = "unassigned"
	HistoryCommented      = "commented"
)

var historyKinds = map[string]string{
	domain.ActivityResolve:       HistoryResolved,
	domain.ActivityReopen:        HistoryReopened,
	domain.ActivityReopenInbound: HistoryReopenedByText,
	domain.ActivityAssign:        HistoryAssigned,
	domain.ActivityUnassign:      HistoryUnassigned,
	domain.ActivityComment:       HistoryCommented,
}

// HistoryEntry is one thing that happened to a conversation: by whom (0:
// an API key, or the text that reopened it), to whom (User: the person
// assigned, or credited with a resolve; 0 for none), the note of a comment,
// and when.
type HistoryEntry struct {
	ID      int64
	Kind    string
	By      int64
	User    int64
	Comment string
	At      time.Time
}

// History returns one page of a conversation's history, newest first:
// entries older than before (0: from the newest), and the next page's
// before while there may be one (0: none). A pair with no stored state has
// none.
func (s *Service) History(ctx context.Context, p auth.Principal, a Address, before int64, limit int) ([]HistoryEntry, int64, error) {
	key, err := s.key(ctx, p, a)
	if err != nil {
		return nil, 0, err
	}
	c, _, err := s.store.Conversation(ctx, key)
	if domain.IsNotFound(err) {
		return []HistoryEntry{}, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	list, err := s.store.ConversationHistory(ctx, c.ID, before, limit)
	if err != nil {
		return nil, 0, err
	}
	var next int64
	if len(list) == limit {
		next = list[len(list)-1].ID
	}
	out := make([]HistoryEntry, 0, len(list))
	for _, a := range list {
		kind, ok := historyKinds[a.Kind]
		if !ok {
			continue // a kind this version does not show
		}
		out = append(out, HistoryEntry{ID: a.ID, Kind: kind, By: a.Actor, User: a.Subject, Comment: a.Body, At: a.CreatedAt})
	}
	return out, next, nil
}
