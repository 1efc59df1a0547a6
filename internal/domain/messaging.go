package domain

import (
	"time"

	"switchboard/internal/money"
)

// Rate prices messages to destinations starting with Prefix.
type Rate struct {
	AccountID int64
	Prefix    string
	SMS       money.Micros // per segment
	MMS       money.Micros // per message
	CreatedAt time.Time
}

// Message statuses. An outbound message is pending from the moment its intent
// is written until the carrier answers; only sent messages are charged.
const (
	StatusPending   = "pending"
	StatusSent      = "sent"
	StatusFailed    = "failed"    // the carrier refused; the client got a 5xx
	StatusAbandoned = "abandoned" // stopped mid-send with no evidence the carrier took it
	StatusReceived  = "received"  // inbound
)

// Billing types.
const (
	BillingSMS = "sms"
	BillingMMS = "mms"
)

// Message is one text, outbound or inbound.
type Message struct {
	ID             int64
	AccountID      int64
	ConversationID int64
	LineID         int64
	Direction      string // "in" or "out"
	From           string
	To             []string
	Body           string
	Media          []string // blob names, in order
	Type           string   // sms or mms
	Status         string
	Units          int
	UnitPrice      money.Micros
	Price          money.Micros
	SentBy         int64
	CarrierRef     string
	DeliveryStatus string
	DeliveryError  string
	DeliveryAt     *time.Time
	CreatedAt      time.Time
}

// LedgerEntry is one charge to an account.
type LedgerEntry struct {
	ID          int64
	AccountID   int64
	MessageID   int64
	Amount      money.Micros
	Currency    string
	Description string
	CreatedAt   time.Time
}
