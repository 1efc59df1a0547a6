package httpapi

import (
	"bytes"
	"net/http"
	"strconv"

	"switchboard/internal/contacts"
	"switchboard/internal/domain"
)

// The team address book (issue 33). Handlers decode, call the contacts
// service once and encode; the rules live in package contacts. A contact's
// JSON is domain.Contact's, the same the AccountContacts events carry.

// Who may (docs/decisions.md, "Contacts"): reading and writing need a role
// with phone numbers (any lines), deleting one with every line.
var (
	keepContacts   = rolePermission{name: "Phone numbers (any lines)", check: contacts.CanRead}
	deleteContacts = rolePermission{name: "Phone numbers (all lines)", check: contacts.CanDelete}
)

// contactRequest is the body of POST /contacts and PATCH /contacts/{id}: a
// field left out (or null) is left as it is by a PATCH.
type contactRequest struct {
	Name    *string                 `json:"name"`
	Company *string                 `json:"company"`
	Email   *string                 `json:"email"`
	Notes   *string                 `json:"notes"`
	Tags    *[]string               `json:"tags"`
	Numbers *[]domain.ContactNumber `json:"numbers"`
}

func (c contactRequest) input() contacts.Input {
	return contacts.Input{Name: c.Name, Company: c.Company, Email: c.Email, Notes: c.Notes, Tags: c.Tags, Numbers: c.Numbers}
}

func (s *Server) listContacts(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(r)
	text, _ := q.raw("q")
	limit, before := q.int("limit", contacts.DefaultLimit, 1, contacts.MaxLimit), q.id("before", "a contact")
	if err := q.err(); err != nil {
		return err
	}
	page, next, err := s.contacts.List(r.Context(), principal(r), contacts.ListParams{Q: text, Before: before, Limit: limit})
	if err != nil {
		return err
	}
	var cursor *int64
	if next != 0 {
		cursor = &next
	}
	writePage(w, page, cursor)
	return nil
}

func (s *Server) createContact(w http.ResponseWriter, r *http.Request) error {
	var req contactRequest
	if err := decodeJSON(w, r, &req, defaultBodyLimit, false); err != nil {
		return err
	}
	c, err := s.contacts.Create(r.Context(), principal(r), req.input())
	if err != nil {
		return err
	}
	w.Header().Set("Location", Prefix+"/contacts/"+strconv.FormatInt(c.ID, 10))
	writeData(w, http.StatusCreated, c)
	return nil
}

func (s *Server) getContact(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "contact")
	if err != nil {
		return err
	}
	c, err := s.contacts.Contact(r.Context(), principal(r), id)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, c)
	return nil
}

func (s *Server) updateContact(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "contact")
	if err != nil {
		return err
	}
	var req contactRequest
	if err := decodeJSON(w, r, &req, defaultBodyLimit, false); err != nil {
		return err
	}
	c, err := s.contacts.Update(r.Context(), principal(r), id, req.input())
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, c)
	return nil
}

func (s *Server) deleteContact(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "contact")
	if err != nil {
		return err
	}
	if err := s.contacts.Delete(r.Context(), principal(r), id); err != nil {
		return err
	}
	writeNoContent(w)
	return nil
}

// importContacts reads a CSV or vCard file (its Content-Type says which)
// of at most contacts.MaxImportBytes and answers the import's report.
func (s *Server) importContacts(w http.ResponseWriter, r *http.Request) error {
	f, err := contacts.FormatOf(r.Header.Get("Content-Type"))
	if err != nil {
		return err
	}
	raw, err := readBody(w, r, contacts.MaxImportBytes)
	if err != nil {
		return err
	}
	rep, err := s.contacts.Import(r.Context(), principal(r), f, raw, nil)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, rep)
	return nil
}

// exportContacts answers every contact as a CSV or vCard file, built whole
// before the first byte goes out so that a failure is still an error
// envelope, not a cut file.
func (s *Server) exportContacts(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(r)
	format, _ := q.raw("format")
	if err := q.err(); err != nil {
		return err
	}
	f, err := contacts.ParseFormat(format)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := s.contacts.Export(r.Context(), principal(r), f, &b); err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", contacts.ContentType(f))
	h.Set("Content-Disposition", `attachment; filename="contacts.`+map[contacts.Format]string{contacts.CSV: "csv", contacts.VCard: "vcf"}[f]+`"`)
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(http.StatusOK)
	w.Write(b.Bytes())
	return nil
}
