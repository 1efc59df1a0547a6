package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/money"
	"switchboard/internal/sms"
)

// scheduleRequestJSON is the body of POST /sms/lines/{line}/scheduled.
type scheduleRequestJSON struct {
	To      []string `json:"to"`
	Message string   `json:"message"`
	Subject string   `json:"subject"`
	Media   []string `json:"media"`
	SendAt  string   `json:"sendAt"`
}

// scheduledJSON is the public API's ScheduledMessage.
type scheduledJSON struct {
	ID         int64        `json:"id"`
	Line       string       `json:"line"`
	Recipients []string     `json:"recipients"`
	Subject    string       `json:"subject"`
	Text       string       `json:"text"`
	Media      []string     `json:"media"`
	SendAt     time.Time    `json:"sendAt"`
	Price      money.Micros `json:"price"`
	Currency   string       `json:"currency"`
}

func (s *Server) scheduledOut(m domain.ScheduledMessage) scheduledJSON {
	return scheduledJSON{ID: m.ID, Line: m.Line, Recipients: nonNil(m.Recipients), Subject: m.Subject, Text: m.Text,
		Media: s.sms.MediaURLs(m.Media), SendAt: m.SendAt.UTC(), Price: m.Price, Currency: "USD"}
}

func (s *Server) schedule(w http.ResponseWriter, r *http.Request) error {
	var req scheduleRequestJSON
	if err := decodeJSON(w, r, &req, defaultBodyLimit, false); err != nil {
		return err
	}
	in := sms.ScheduleRequest{To: req.To, Message: req.Message, Subject: req.Subject, Media: req.Media}
	if req.SendAt != "" {
		t, err := time.Parse(time.RFC3339, req.SendAt)
		if err != nil {
			return domain.Errorf(domain.Invalid, "sendAt must be an RFC 3339 date-time, such as 2026-11-25T15:00:00Z")
		}
		in.SendAt = t
	}
	m, err := s.sms.Schedule(r.Context(), principal(r), r.PathValue("line"), in, idempotencyOf(r))
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, s.scheduledOut(m))
	return nil
}

func (s *Server) listScheduled(w http.ResponseWriter, r *http.Request) error {
	list, err := s.sms.Scheduled(r.Context(), principal(r), r.PathValue("line"))
	if err != nil {
		return err
	}
	out := make([]scheduledJSON, len(list))
	for i, m := range list {
		out[i] = s.scheduledOut(m)
	}
	writeData(w, http.StatusOK, out)
	return nil
}

func (s *Server) cancelScheduled(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "scheduled message")
	if err != nil {
		return err
	}
	if err := s.sms.CancelScheduled(r.Context(), principal(r), r.PathValue("line"), strconv.FormatInt(id, 10)); err != nil {
		return err
	}
	writeNoContent(w)
	return nil
}
