package domain

import "switchboard/internal/money"

// SendRequest is one request to send a text (POST /sms/messages).
type SendRequest struct {
	From        string
	To          []string
	Message     string
	Attachments []Attachment
}

// Attachment is one uploaded file of a send, its content still in base64.
type Attachment struct {
	Filename    string
	ContentType string
	Content     string
}

// SendOutcome says what a send did when it did not fail.
type SendOutcome string

// Send outcomes.
const (
	SendCreated SendOutcome = "created" // a message was sent and charged
	SendSkipped SendOutcome = "skipped" // every recipient was skipped: nothing sent or charged
	// SendPending: the carrier's answer was lost and no evidence came in
	// time; the message is pending, charged only if its receipt comes.
	SendPending SendOutcome = "pending"
)

// The send result types carry JSON tags because an Idempotency-Key record
// keeps the result in this form (sms/idempotency.go): the names are a stored
// format, not the wire format (httpapi/send.go has that). They match the wire
// names so that records written before the result was stored as data
// (the response's "data" member) still read back.

// SendResult is what a send did.
type SendResult struct {
	From     string        `json:"from"`
	Billing  Billing       `json:"billing"`
	Messages []SentMessage `json:"messages"`
	Skipped  []Skipped     `json:"skipped"`
}

// Billing is the price of a send.
type Billing struct {
	Billed         bool         `json:"billed"`
	Currency       string       `json:"currency"`
	Type           string       `json:"type"`
	Units          int          `json:"units"`
	TotalPrice     money.Micros `json:"totalPrice"`
	RecipientCount int          `json:"recipientCount"`
	SkippedCount   int          `json:"skippedCount"`
}

// SentMessage is one message a send created.
type SentMessage struct {
	ID        int64        `json:"id"`
	To        []string     `json:"to"`
	Type      string       `json:"type"`
	Status    string       `json:"status"`
	Media     []string     `json:"media,omitempty"` // public URLs, in order
	Units     int          `json:"units"`
	UnitPrice money.Micros `json:"unitPrice"`
	Price     money.Micros `json:"price"`
}

// Skipped is a recipient a send dropped, and why.
type Skipped struct {
	To     string `json:"to"`
	Reason string `json:"reason"`
}

// Quote is what a send of a request would do, from a send's own validation
// and pricing, with nothing sent or charged (POST /sms/quote).
type Quote struct {
	From     string
	Billing  Billing
	Messages []QuotedMessage
	Skipped  []Skipped
}

// QuotedMessage is the message a quoted send would create.
type QuotedMessage struct {
	To   []string
	Type string
	// Encoding is the text's SMS encoding (segment.GSM7 or segment.UCS2)
	// and Length its length as that encoding counts it.
	Encoding string
	Length   int
	// UCS2Characters are the characters of the text outside GSM-7, each
	// once, in order of first appearance: what makes it UCS-2.
	UCS2Characters []string
	Units          int
	UnitPrice      money.Micros
	Price          money.Micros
}

// Skip reasons.
const (
	SkipOptedOut  = "opted_out"
	SkipDuplicate = "duplicate"
	SkipInvalid   = "invalid"
)
