package httpapi

import (
	"net/http"

	"switchboard/internal/domain"
)

// templateJSON is the public API's Template (saved reply).
type templateJSON struct {
	ID     int64  `json:"id"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	Shared bool   `json:"shared"`
}

// templateRequest is the body of POST /sms/templates and PUT /sms/templates/{id}.
type templateRequest struct {
	Title  *string `json:"title"`
	Body   *string `json:"body"`
	Shared *bool   `json:"shared"`
}

func (t templateRequest) fields() (string, string, error) {
	if t.Title == nil {
		return "", "", domain.Errorf(domain.Invalid, "title is required")
	}
	if t.Body == nil {
		return "", "", domain.Errorf(domain.Invalid, "body is required")
	}
	return *t.Title, *t.Body, nil
}

func templateOut(t domain.Template) templateJSON {
	return templateJSON{ID: t.ID, Title: t.Title, Body: t.Body, Shared: t.Shared}
}

func (s *Server) listTemplates(w http.ResponseWriter, r *http.Request) error {
	list, err := s.sms.Templates(r.Context(), principal(r))
	if err != nil {
		return err
	}
	out := make([]templateJSON, len(list))
	for i, t := range list {
		out[i] = templateOut(t)
	}
	writeData(w, http.StatusOK, out)
	return nil
}

func (s *Server) createTemplate(w http.ResponseWriter, r *http.Request) error {
	var req templateRequest
	if err := decodeJSON(w, r, &req, defaultBodyLimit, false); err != nil {
		return err
	}
	title, body, err := req.fields()
	if err != nil {
		return err
	}
	t, err := s.sms.CreateTemplate(r.Context(), principal(r), title, body, req.Shared != nil && *req.Shared)
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, templateOut(t))
	return nil
}

func (s *Server) replaceTemplate(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "template")
	if err != nil {
		return err
	}
	var req templateRequest
	if err := decodeJSON(w, r, &req, defaultBodyLimit, false); err != nil {
		return err
	}
	title, body, err := req.fields()
	if err != nil {
		return err
	}
	t, err := s.sms.ReplaceTemplate(r.Context(), principal(r), id, title, body, req.Shared)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, templateOut(t))
	return nil
}

func (s *Server) deleteTemplate(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "template")
	if err != nil {
		return err
	}
	if err := s.sms.DeleteTemplate(r.Context(), principal(r), id); err != nil {
		return err
	}
	writeNoContent(w)
	return nil
}

// draftJSON is the public API's Draft.
type draftJSON struct {
	DraftID string `json:"draftId"`
	Message string `json:"message"`
}

func (s *Server) getDraft(w http.ResponseWriter, r *http.Request) error {
	d, err := s.sms.Draft(r.Context(), principal(r), r.PathValue("draftId"))
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, draftJSON{DraftID: d.Key, Message: d.Message})
	return nil
}

func (s *Server) putDraft(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Message *string `json:"message"`
	}
	if err := decodeJSON(w, r, &req, defaultBodyLimit, false); err != nil {
		return err
	}
	if req.Message == nil {
		return domain.Errorf(domain.Invalid, "message is required (an empty string is a legal draft)")
	}
	d, err := s.sms.PutDraft(r.Context(), principal(r), r.PathValue("draftId"), *req.Message)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, draftJSON{DraftID: d.Key, Message: d.Message})
	return nil
}

func (s *Server) deleteDraft(w http.ResponseWriter, r *http.Request) error {
	if err := s.sms.DeleteDraft(r.Context(), principal(r), r.PathValue("draftId")); err != nil {
		return err
	}
	writeNoContent(w)
	return nil
}
