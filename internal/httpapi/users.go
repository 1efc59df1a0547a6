package httpapi

import (
	"net/http"

	"switchboard/internal/domain"
)

// userJSON is the public API's User.
type userJSON struct {
	ID         int64    `json:"id"`
	Username   string   `json:"username"`
	FirstName  string   `json:"firstName"`
	LastName   string   `json:"lastName"`
	Title      string   `json:"title"`
	Email      string   `json:"email"`
	Mobile     string   `json:"mobile"`
	Company    string   `json:"company"`
	TimeZone   string   `json:"timeZone"`
	Extension  string   `json:"extension"`
	Extensions []string `json:"extensions"`
	Lines      []string `json:"lines"`
	Numbers    []string `json:"numbers"`
	Voicemails []string `json:"voicemails"`
}

// defaultTimeZone is the timeZone of a user created without one: the field
// is always an IANA zone name.
const defaultTimeZone = "UTC"

func toUserJSON(u domain.User) userJSON {
	tz := u.TimeZone
	if tz == "" {
		tz = defaultTimeZone
	}
	return userJSON{
		ID: u.ID, Username: u.Username, FirstName: u.FirstName, LastName: u.LastName, Title: u.Title,
		Email: u.Email, Mobile: u.Mobile, Company: u.Company, TimeZone: tz, Extension: u.Extension,
		Extensions: nonNil(u.Extensions), Lines: nonNil(u.Lines), Numbers: nonNil(u.Numbers), Voicemails: nonNil(u.Voicemails),
	}
}

// listUsers answers from the encoded list the users service keeps until
// the database changes (encoding is most of the cost of this read).
func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) error {
	body, err := s.users.ListEncoded(r.Context(), principal(r), func(list []domain.User) ([]byte, error) {
		out := make([]userJSON, len(list))
		for i, u := range list {
			out[i] = toUserJSON(u)
		}
		return encodeData(out)
	})
	if err != nil {
		return err
	}
	writeEncoded(w, http.StatusOK, body)
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
