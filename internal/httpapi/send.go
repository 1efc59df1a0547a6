package httpapi

import (
	"net/http"

	"switchboard/internal/sms"
)

// sendBodyLimit fits ten 5 MB attachments in base64 plus the message.
const sendBodyLimit = 72 << 20

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request) error {
	var req sms.SendRequest
	if err := decodeJSON(w, r, &req, sendBodyLimit, false); err != nil {
		return err
	}
	var idem *sms.Idempotency
	if c := idempotencyClaim(r); c != nil {
		idem = &sms.Idempotency{Claim: c, Encode: func(res *sms.SendResult) ([]byte, error) { return encodeData(res) }}
	}
	status, res, err := s.sms.Send(r.Context(), principal(r), req, idem)
	if err != nil {
		return err
	}
	writeData(w, status, res)
	return nil
}
