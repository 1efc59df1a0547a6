package domain

import (
	"time"

	"switchboard/internal/money"
)

// StatusScheduled is the status of the messages row that stands for a
// scheduled message in its thread until the message is dispatched.
const StatusScheduled = "scheduled"

// Scheduled message states.
const (
	ScheduleQueued    = "queued"    // waiting for its send time (or a retry after the carrier was down)
	ScheduleSending   = "sending"   // a dispatcher is asking the carrier
	ScheduleSent      = "sent"      // handed to the send path; its message decides the rest
	ScheduleSkipped   = "skipped"   // every recipient had opted out by the send time; nothing charged
	ScheduleCancelled = "cancelled" // deleted before it was sent; never sent or charged
)

// ScheduledMessage is a message to send at SendAt, priced when it was
// scheduled. Recipients and UnitPrices are parallel: each recipient's unit
// price (per segment for sms, per message for mms) fixed then.
type ScheduledMessage struct {
	ID         int64
	AccountID  int64
	LineID     int64
	Line       string // the line's number
	Recipients []string
	UnitPrices []money.Micros
	Subject    string
	Text       string
	Media      []string // hosted blob names, in order
	Type       string   // BillingSMS or BillingMMS
	Units      int
	Price      money.Micros // fixed: what sending to every recipient costs
	SendAt     time.Time
	State      string
	Attempts   int
	CreatedBy  int64 // 0 for an API key
	CreatedAt  time.Time
	// MessageID is the messages row standing for it: the scheduled
	// placeholder while queued, the message sent once dispatched.
	MessageID int64
}
