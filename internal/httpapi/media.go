package httpapi

import (
	"net/http"

	"switchboard/internal/domain"
)

// mediaBodyLimit fits one 5 MB attachment in base64 plus its name and type.
const mediaBodyLimit = 7<<20 + 64<<10

// hostedMediaJSON is the data of POST /sms/media.
type hostedMediaJSON struct {
	URL         string `json:"url"`
	ContentType string `json:"contentType"`
	Size        int64  `json:"size"`
}

func (s *Server) hostMedia(w http.ResponseWriter, r *http.Request) error {
	var req attachmentJSON
	if err := decodeJSON(w, r, &req, mediaBodyLimit, false); err != nil {
		return err
	}
	m, url, err := s.sms.HostMedia(r.Context(), principal(r), domain.Attachment(req))
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, hostedMediaJSON{URL: url, ContentType: m.ContentType, Size: m.Size})
	return nil
}
