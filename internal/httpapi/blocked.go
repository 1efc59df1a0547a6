package httpapi

import (
	"net/http"
	"time"

	"switchboard/internal/domain"
)

// blockedJSON is the public API's BlockedSender.
type blockedJSON struct {
	Line      string    `json:"line"`
	Number    string    `json:"number"`
	Reason    string    `json:"reason"`
	BlockedAt time.Time `json:"blockedAt"`
}

func blockedOut(b domain.BlockedSender) blockedJSON {
	return blockedJSON{Line: b.Line, Number: b.Number, Reason: b.Reason, BlockedAt: b.BlockedAt}
}

func (s *Server) listBlocked(w http.ResponseWriter, r *http.Request) error {
	list, err := s.sms.Blocked(r.Context(), principal(r), r.PathValue("line"))
	if err != nil {
		return err
	}
	out := make([]blockedJSON, len(list))
	for i, b := range list {
		out[i] = blockedOut(b)
	}
	writeData(w, http.StatusOK, out)
	return nil
}

func (s *Server) block(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Number string `json:"number"`
		Reason string `json:"reason"`
	}
	if err := decodeJSON(w, r, &req, defaultBodyLimit, false); err != nil {
		return err
	}
	b, created, err := s.sms.Block(r.Context(), principal(r), r.PathValue("line"), req.Number, req.Reason)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeData(w, status, blockedOut(b))
	return nil
}

func (s *Server) getBlocked(w http.ResponseWriter, r *http.Request) error {
	b, err := s.sms.BlockedSender(r.Context(), principal(r), r.PathValue("line"), r.PathValue("number"))
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, blockedOut(b))
	return nil
}

func (s *Server) unblock(w http.ResponseWriter, r *http.Request) error {
	if err := s.sms.Unblock(r.Context(), principal(r), r.PathValue("line"), r.PathValue("number")); err != nil {
		return err
	}
	writeNoContent(w)
	return nil
}
