package httpapi

import (
	"net/http"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/money"
)

// quoteJSON is the public API's SendQuote: a SendResult's from, billing and
// skipped, and the message the send would create, without id or status.
type quoteJSON struct {
	From     string              `json:"from"`
	Billing  billingJSON         `json:"billing"`
	Messages []quotedMessageJSON `json:"messages"`
	Skipped  []skippedJSON       `json:"skipped"`
}

// quotedMessageJSON is an element of SendQuote.messages.
type quotedMessageJSON struct {
	To             []string     `json:"to"`
	Type           string       `json:"type"`
	Encoding       string       `json:"encoding"`
	Length         int          `json:"length"`
	UCS2Characters []string     `json:"ucs2Characters"`
	Units          int          `json:"units"`
	UnitPrice      money.Micros `json:"unitPrice"`
	Price          money.Micros `json:"price"`
}

// quoteReadable is POST /sms/quote's scope check: a quote spends nothing,
// so sms:read (which lists the lines and is free) is enough, and a
// credential that may send may also ask what a send would cost.
func quoteReadable(p auth.Principal) error {
	if p.Has(auth.SMSRead) || p.Has(auth.SMSSend) {
		return nil
	}
	return &domain.Error{Code: domain.InsufficientScope, Scope: string(auth.SMSRead),
		Message: "this credential lacks the sms:read scope (or sms:send)"}
}

// quoteMessage answers POST /sms/quote: what POST /sms/messages would answer
// for the same body (sms.Service.Quote), with nothing sent, charged or
// written. It takes no Idempotency-Key: nothing changes, so a retry is
// always safe.
func (s *Server) quoteMessage(w http.ResponseWriter, r *http.Request) error {
	var req sendRequestJSON
	if err := decodeJSON(w, r, &req, sendBodyLimit, false); err != nil {
		return err
	}
	q, err := s.sms.Quote(r.Context(), principal(r), req.domain())
	if err != nil {
		return err
	}
	out := quoteJSON{From: q.From, Billing: billingJSON(q.Billing),
		Messages: make([]quotedMessageJSON, len(q.Messages)), Skipped: make([]skippedJSON, len(q.Skipped))}
	for i, m := range q.Messages {
		out.Messages[i] = quotedMessageJSON(m)
	}
	for i, sk := range q.Skipped {
		out.Skipped[i] = skippedJSON(sk)
	}
	writeData(w, http.StatusOK, out)
	return nil
}
