package httpapi

import (
	"net/http"

	"switchboard/api"
)

func (s *Server) openapi(w http.ResponseWriter, r *http.Request) error {
	doc, err := api.JSON()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(doc)
	return nil
}
