package httpapi

import (
	"bytes"
	"testing"

	"switchboard/internal/domain"
	"switchboard/internal/money"
)

// TestAppendSendResultMatchesEncodingJSON holds appendSendResult to the
// bytes writeData writes for the same result through encoding/json, on
// results with awkward strings, nil and empty lists, media and skips.
func TestAppendSendResultMatchesEncodingJSON(t *testing.T) {
	results := []domain.SendResult{
		{From: "14155550100", Billing: domain.Billing{Billed: true, Currency: "USD", Type: "SMS", Units: 1, TotalPrice: 7900, RecipientCount: 1},
			Messages: []domain.SentMessage{{ID: 42, To: []string{"12125550100"}, Type: "SMS", Status: "sent", Units: 1, UnitPrice: 7900, Price: 7900}},
			Skipped:  []domain.Skipped{}},
		{From: "1415\"\\<>&\u2028\x01é", Billing: domain.Billing{Currency: "USD", Type: "MMS", TotalPrice: money.Micros(-1234567), SkippedCount: 2},
			Messages: []domain.SentMessage{
				{ID: 1, To: nil, Type: "MMS", Status: "pending", Media: []string{"https://x/a?b=1&c=<2>", "é"}, Units: 3, UnitPrice: 20000, Price: 60000},
				{ID: 2, To: []string{}, Media: []string{}, Price: 1},
				{ID: 3, To: []string{"a", "b\n"}},
			},
			Skipped: []domain.Skipped{{To: "+1 (212) 555-0199", Reason: "opted_out"}, {To: "\"", Reason: "invalid\tnumber"}}},
		{},
	}
	for i, r := range results {
		want, err := encodeEnvelope(envelope{Data: toSendResultJSON(&r)})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendSendResult(nil, &r); !bytes.Equal(got, want) {
			t.Errorf("result %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// The send result as encoding/json writes it: what appendSendResult is held
// to.

// sendResultJSON is the public API's SendResult.
type sendResultJSON struct {
	From     string            `json:"from"`
	Billing  billingJSON       `json:"billing"`
	Messages []sentMessageJSON `json:"messages"`
	Skipped  []skippedJSON     `json:"skipped"`
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
