package httpapi

import (
	"net/http"

	"switchboard/api"
)

// openapi serves the API's description. It needs no credential, but one that
// is sent must be valid (RFC 6750 §3.1): a client that attaches its key to
// every request learns at once that the key is wrong or revoked, instead of
// at its first real call.
func (s *Server) openapi(w http.ResponseWriter, r *http.Request) error {
	if len(r.Header.Values("Authorization")) > 0 {
		if _, err := s.authenticate(r.Context(), r, ""); err != nil {
			return err
		}
	}
	// It takes no query parameter, as no operation takes one it does not
	// document.
	if err := parseQuery(r).err(); err != nil {
		return err
	}
	doc, err := api.JSON()
	if err != nil {
		return err
	}
	writeEncoded(w, http.StatusOK, doc)
	return nil
}
