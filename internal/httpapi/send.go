package httpapi

import (
	"net/http"

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

// sendResultJSON is the public API's SendResult.
type sendResultJSON struct {
	From     string            `json:"from"`
	Billing  billingJSON       `json:"billing"`
	Messages []sentMessageJSON `json:"messages"`
	Skipped  []skippedJSON     `json:"skipped"`
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

// sentMessageJSON is an element of SendResult.messages.
type sentMessageJSON struct {
	ID        int64        `json:"id"`
	To        []string     `json:"to"`
	Type      string       `json:"type"`
	Status    string       `json:"status"`
	Media     []string     `json:"media,omitempty"`
	Units     int          `json:"units"`
	UnitPrice money.Micros `json:"unitPrice"`
	Price     money.Micros `json:"price"`
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

func toSendResultJSON(r *domain.SendResult) sendResultJSON {
	out := sendResultJSON{From: r.From, Billing: billingJSON(r.Billing),
		Messages: make([]sentMessageJSON, len(r.Messages)), Skipped: make([]skippedJSON, len(r.Skipped))}
	for i, m := range r.Messages {
		out.Messages[i] = sentMessageJSON(m)
	}
	for i, s := range r.Skipped {
		out.Skipped[i] = skippedJSON(s)
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

func writeSendResult(w http.ResponseWriter, res *domain.SendResult, outcome domain.SendOutcome) {
	writeData(w, sendStatus[outcome], toSendResultJSON(res))
}
