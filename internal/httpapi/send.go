package httpapi

import (
	"net/http"
	"strconv"

	"switchboard/internal/domain"
	"switchboard/internal/money"
)

// sendBodyLimit fits ten 5 MB attachments in base64 plus the message.
const sendBodyLimit = 72 << 20

// sendRequestJSON is the body of POST /sms/messages.
type sendRequestJSON struct {
	From        string           `json:"from"`
	To          []string         `json:"to"`
	Message     string           `json:"message"`
	Attachments []attachmentJSON `json:"attachments"`
}

// attachmentJSON is one element of sendRequestJSON.attachments.
type attachmentJSON struct {
	Filename    string `json:"filename"`
	ContentType string `json:"contentType"`
	Content     string `json:"content"`
}

// billingJSON is SendResult.billing.
type billingJSON struct {
	Billed         bool         `json:"billed"`
	Currency       string       `json:"currency"`
	Type           string       `json:"type"`
	Units          int          `json:"units"`
	TotalPrice     money.Micros `json:"totalPrice"`
	RecipientCount int          `json:"recipientCount"`
	SkippedCount   int          `json:"skippedCount"`
}

// skippedJSON is an element of SendResult.skipped.
type skippedJSON struct {
	To     string `json:"to"`
	Reason string `json:"reason"`
}

func (req *sendRequestJSON) domain() domain.SendRequest {
	out := domain.SendRequest{From: req.From, To: req.To, Message: req.Message}
	if len(req.Attachments) > 0 {
		out.Attachments = make([]domain.Attachment, len(req.Attachments))
		for i, a := range req.Attachments {
			out.Attachments[i] = domain.Attachment(a)
		}
	}
	return out
}

// sendStatus is the HTTP status of a send's outcome.
var sendStatus = map[domain.SendOutcome]int{
	domain.SendCreated: http.StatusCreated,
	domain.SendSkipped: http.StatusOK,
	domain.SendPending: http.StatusAccepted,
}

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request) error {
	var req sendRequestJSON
	if err := decodeJSON(w, r, &req, sendBodyLimit, false); err != nil {
		return err
	}
	res, outcome, err := s.sms.Send(r.Context(), principal(r), req.domain(), idempotencyOf(r))
	if err != nil {
		return err
	}
	writeSendResult(w, res, outcome)
	return nil
}

// writeSendResult writes the send's answer. Every send answers, so it is
// appended field by field (appendSendResult) rather than through
// encoding/json's reflection: the same bytes writeData writes for
// toSendResultJSON (TestAppendSendResultMatchesEncodingJSON).
func writeSendResult(w http.ResponseWriter, res *domain.SendResult, outcome domain.SendOutcome) {
	writeEncoded(w, sendStatus[outcome], appendSendResult(make([]byte, 0, 512), res))
}

// appendSendResult appends the envelope {"data": SendResult} with the
// trailing newline json.Encoder writes.
func appendSendResult(b []byte, r *domain.SendResult) []byte {
	return appendEnvelope(b, func(b []byte) []byte {
		b = appendStringField(b, `{"from":`, r.From)
		bl := &r.Billing
		b = append(b, `,"billing":{"billed":`...)
		b = strconv.AppendBool(b, bl.Billed)
		b = appendStringField(b, `,"currency":`, bl.Currency)
		b = appendStringField(b, `,"type":`, bl.Type)
		b = appendIntField(b, `,"units":`, int64(bl.Units))
		b = bl.TotalPrice.AppendJSON(append(b, `,"totalPrice":`...))
		b = appendIntField(b, `,"recipientCount":`, int64(bl.RecipientCount))
		b = appendIntField(b, `,"skippedCount":`, int64(bl.SkippedCount))
		b = append(b, `},"messages":[`...)
		for i := range r.Messages {
			m := &r.Messages[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = appendIntField(b, `{"id":`, m.ID)
			b = appendStringList(append(b, `,"to":`...), m.To)
			b = appendStringField(b, `,"type":`, m.Type)
			b = appendStringField(b, `,"status":`, m.Status)
			if len(m.Media) > 0 {
				b = appendStringList(append(b, `,"media":`...), m.Media)
			}
			b = appendIntField(b, `,"units":`, int64(m.Units))
			b = m.UnitPrice.AppendJSON(append(b, `,"unitPrice":`...))
			b = m.Price.AppendJSON(append(b, `,"price":`...))
			b = append(b, '}')
		}
		b = append(b, `],"skipped":[`...)
		for i := range r.Skipped {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendStringField(b, `{"to":`, r.Skipped[i].To)
			b = appendStringField(b, `,"reason":`, r.Skipped[i].Reason)
			b = append(b, '}')
		}
		return append(b, "]}"...)
	})
}

// appendStringList appends ss as encoding/json writes a []string: null
// when nil.
func appendStringList(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendStringField(b, "", s)
	}
	return append(b, ']')
}
