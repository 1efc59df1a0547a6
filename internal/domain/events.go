package domain

import (
	"encoding/json"
)

// Event types, as the spec's Events table and webhook subscriptions name
// them (WebhookTypes, in webhooks.go, describes them). The domain names them and their payload types; each capability
// builds its own events (internal/calls, internal/sms/smsevent) and the store writes (type, payload) to the outbox in
// the caller's transaction without reading either.
const (
	EventRealTimeCalls   = "AccountRealTimeCalls"
	EventEndedCalls      = "AccountEndedCalls"
	EventUserEndedCalls  = "UserEndedCalls"
	EventAccountSMS      = "AccountSMS"
	EventAITranscription = "AccountAITranscription"
)

// Event is one event to write: its type and its encoded payload.
type Event struct {
	Type    string
	Payload []byte
	// Audience is the user a personal event is for (a change of that user's
	// own read state), 0 for an event every credential that may see what it
	// is about receives. A personal event reaches only that user's streams
	// and API-key streams, and never a webhook (migration 0029).
	Audience int64
}

// SMSEvent is the payload of an AccountSMS event. It carries the line and the
// other party's number (hence the conversation) and the message id. Number is
// the other party (the first recipient of a group send); on a group thread
// GroupParticipants lists every other number; Numbers always lists them.
type SMSEvent struct {
	Event             string   `json:"event"` // SMSSent, SMSReceived, SMSDelivery, SMSFailed
	MessageID         int64    `json:"messageId"`
	Direction         string   `json:"direction"`
	Line              string   `json:"line"`
	Number            string   `json:"number"`
	Numbers           []string `json:"numbers"`
	GroupParticipants []string `json:"groupParticipants,omitempty"`
	Status            string   `json:"status,omitempty"`
	// Error is why a queued message failed (SMSFailed): the carrier's words.
	Error    string             `json:"error,omitempty"`
	Delivery *SMSDeliveryReport `json:"delivery,omitempty"`
	// Blocked marks an inbound text from a number on the line's block list:
	// stored, but kept out of the inbox's unread counts.
	Blocked bool `json:"blocked,omitempty"`
}

// SMSDeliveryReport is the carrier's delivery report in a message.delivery event.
type SMSDeliveryReport struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	At     string `json:"at"` // RFC 3339, UTC
}

// The events of an AccountSMS payload.
const (
	SMSSent     = "message.sent"     // the carrier accepted an outbound message (it is charged)
	SMSReceived = "message.received" // an inbound text was stored
	SMSDelivery = "message.delivery" // a delivery report for an outbound message
	// SMSFailed: the carrier refused an outbound message that waited in a
	// connection's queue after its send was answered 202 pending (uncharged).
	SMSFailed = "message.failed"
)

// NewEvent encodes payload as an event of type typ.
func NewEvent(typ string, payload any) (Event, error) {
	b, err := json.Marshal(payload)
	return Event{Type: typ, Payload: b}, err
}
