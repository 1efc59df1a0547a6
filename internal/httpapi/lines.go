package httpapi

import (
	"net/http"

	"switchboard/internal/domain"
)

// lineJSON is the public API's SMSLine.
type lineJSON struct {
	Number      string  `json:"number"`
	Name        string  `json:"name"`
	UserIDs     []int64 `json:"userIds"`
	BulkEnabled bool    `json:"bulkEnabled"`
}

func (s *Server) listLines(w http.ResponseWriter, r *http.Request) error {
	lines, err := s.sms.Lines(r.Context(), principal(r))
	if err != nil {
		return err
	}
	out := make([]lineJSON, len(lines))
	for i, l := range lines {
		out[i] = toLineJSON(l)
	}
	writeData(w, http.StatusOK, out)
	return nil
}

func toLineJSON(l domain.Line) lineJSON {
	return lineJSON{Number: l.Number, Name: l.Name, UserIDs: nonNil(l.UserIDs), BulkEnabled: l.BulkEnabled}
}
