package httpapi

import (
	"net/http"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/inbox"
)

// The team (issue 33): teammates by name, notification preferences and a
// thread's history. The rules live in packages team and inbox.

// teammateJSON is the public API's Teammate: a person's name and the
// caller's lines they can work, nothing else of their record.
type teammateJSON struct {
	ID        int64    `json:"id"`
	Username  string   `json:"username"`
	FirstName string   `json:"firstName"`
	LastName  string   `json:"lastName"`
	Disabled  bool     `json:"disabled"`
	Lines     []string `json:"lines"`
}

func (s *Server) listTeammates(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(r)
	lines := q.list("lines")
	if err := q.err(); err != nil {
		return err
	}
	list, err := s.team.Teammates(r.Context(), principal(r), lines)
	if err != nil {
		return err
	}
	out := make([]teammateJSON, len(list))
	for i, t := range list {
		out[i] = teammateJSON{ID: t.User.ID, Username: t.User.Username, FirstName: t.User.FirstName, LastName: t.User.LastName,
			Disabled: t.User.Disabled, Lines: t.Lines}
	}
	writeData(w, http.StatusOK, out)
	return nil
}

// notificationsJSON is the public API's NotificationPreferences.
type notificationsJSON struct {
	AssignedToMe      bool       `json:"assignedToMe"`
	UnassignedOnLines bool       `json:"unassignedOnMyLines"`
	Mentions          bool       `json:"mentions"`
	UpdatedAt         *time.Time `json:"updatedAt,omitempty"`
}

func toNotificationsJSON(p domain.NotificationPrefs) notificationsJSON {
	return notificationsJSON{AssignedToMe: p.AssignedToMe, UnassignedOnLines: p.UnassignedOnLines, Mentions: p.Mentions, UpdatedAt: utc(p.UpdatedAt)}
}

func (s *Server) getNotifications(w http.ResponseWriter, r *http.Request) error {
	prefs, err := s.team.Notifications(r.Context(), principal(r))
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toNotificationsJSON(prefs))
	return nil
}

// notificationsRequest is PUT /me/notifications: every preference, as a
// PUT replaces the whole.
type notificationsRequest struct {
	AssignedToMe      *bool `json:"assignedToMe"`
	UnassignedOnLines *bool `json:"unassignedOnMyLines"`
	Mentions          *bool `json:"mentions"`
}

func (s *Server) putNotifications(w http.ResponseWriter, r *http.Request) error {
	var req notificationsRequest
	if err := decodeJSON(w, r, &req, defaultBodyLimit, false); err != nil {
		return err
	}
	if req.AssignedToMe == nil || req.UnassignedOnLines == nil || req.Mentions == nil {
		return domain.Errorf(domain.Invalid, "assignedToMe, unassignedOnMyLines and mentions are all required (true or false)")
	}
	prefs, err := s.team.SetNotifications(r.Context(), principal(r),
		domain.NotificationPrefs{AssignedToMe: *req.AssignedToMe, UnassignedOnLines: *req.UnassignedOnLines, Mentions: *req.Mentions})
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toNotificationsJSON(prefs))
	return nil
}

// historyEntryJSON is the public API's HistoryEntry.
type historyEntryJSON struct {
	ID      int64     `json:"id"`
	Kind    string    `json:"kind"`
	By      *int64    `json:"by"`
	UserID  int64     `json:"userId,omitempty"`
	Comment string    `json:"comment,omitempty"`
	At      time.Time `json:"at"`
}

func (s *Server) conversationHistory(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(r)
	a := address(r, q)
	limit, before := q.int("limit", inbox.DefaultHistoryLimit, 1, inbox.MaxHistoryLimit), q.id("before", "a history entry")
	if err := q.err(); err != nil {
		return err
	}
	list, next, err := s.inbox.History(r.Context(), principal(r), a, before, limit)
	if err != nil {
		return err
	}
	out := make([]historyEntryJSON, len(list))
	for i, e := range list {
		out[i] = historyEntryJSON{ID: e.ID, Kind: e.Kind, UserID: e.User, Comment: e.Comment, At: e.At.UTC().Truncate(time.Second)}
		if e.By != 0 {
			by := e.By
			out[i].By = &by
		}
	}
	var cursor *int64
	if next != 0 {
		cursor = &next
	}
	writePage(w, out, cursor)
	return nil
}
