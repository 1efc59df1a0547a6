package domain

import (
	"strconv"
	"time"
)

// WebhookType describes one event type, as GET /webhooks/types lists it.
type WebhookType struct {
	Type        string
	Description string
}

// WebhookTypes lists every event type a subscription may name, in the spec's order.
var WebhookTypes = []WebhookType{
	{EventRealTimeCalls, "Real-time call events for the account."},
	{EventEndedCalls, "Ended calls of the account. A recording becomes available shortly after this event."},
	{EventUserEndedCalls, "Ended calls of a user."},
	{EventAccountSMS, "SMS events: an outbound message accepted by the carrier, each carrier delivery receipt, and each inbound message, with the line, the other number and the message id."},
	{EventAITranscription, "Call transcription events."},
	// Not one of the spec's types: the shared inbox's (docs/decisions.md).
	{EventAccountConversations, "Shared inbox events: a conversation resolved, reopened, assigned, commented on or deleted, and a message deleted, with the line, the number, who did it and the conversation's new state. Read-state changes are personal and never delivered to webhooks."},
	{EventAccountContacts, "Team address book events: a contact created, updated (also by an import) or deleted, with who did it and the contact after the change (as it was, for a deletion)."},
}

// IsWebhookType reports whether t is one of WebhookTypes.
func IsWebhookType(t string) bool {
	for _, wt := range WebhookTypes {
		if wt.Type == t {
			return true
		}
	}
	return false
}

// Webhook is a subscription: events of Type for the account are delivered to
// URL, signed with Secret, while Enabled.
type Webhook struct {
	ID          int64
	AccountID   int64
	Name        string
	Description string
	URL         string
	Type        string
	Enabled     bool
	// Secret is the signing key, "whsec_" and base64 of 32 random bytes.
	Secret string
	// Previous are the secrets rotations replaced that still sign
	// deliveries, beside Secret, newest first: each for a while (24 hours)
	// after it was replaced, so a receiver has that long to switch. Loaded
	// only where signing or GET …/secret needs them.
	Previous  []PreviousSecret
	CreatedAt time.Time
	UpdatedAt time.Time
}

// PreviousSecret is a signing secret a rotation replaced: it still signs
// until Until.
type PreviousSecret struct {
	Secret string
	Until  time.Time
}

// WebhookPatch is a merge update: nil fields are left as they are.
type WebhookPatch struct {
	Name, Description, URL, Type *string
	Enabled                      *bool
}

// Delivery states.
const (
	DeliveryPending   = "pending"   // waiting for its next attempt
	DeliverySucceeded = "succeeded" // an attempt got a 2xx
	DeliveryFailed    = "failed"    // given up: retries exhausted, or the endpoint answered 410
	DeliverySkipped   = "skipped"   // not sent: the subscription was disabled when it came due
)

// WebhookDelivery is one event on its way to one subscription.
type WebhookDelivery struct {
	ID        int64
	AccountID int64
	WebhookID int64
	EventID   int64
	EventType string
	State     string
	Attempts  int
	// NextAttemptAt is when a pending delivery is next tried.
	NextAttemptAt *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// Last is the most recent attempt, if any.
	Last *WebhookAttempt
	// Log is the attempt log: the newest attempts, newest first, at most
	// the store's DeliveryLogAttempts of them (every attempt of the default
	// retry schedule).
	Log []WebhookAttempt
	// RecoveryID is the recover job that queued this delivery, or 0.
	RecoveryID int64
}

// MessageID is the delivery's webhook-id header and the payload's id: the
// event's, so that every attempt and every subscription of one event carry
// the same id and a receiver can drop duplicates.
func (d WebhookDelivery) MessageID() string { return EventID(d.EventID) }

// EventID is the public id of outbox event id.
func EventID(id int64) string { return "evt_" + strconv.FormatInt(id, 10) }

// WebhookAttempt is one try at a delivery.
type WebhookAttempt struct {
	At         time.Time
	StatusCode int // 0 when the endpoint gave no HTTP answer
	Latency    time.Duration
	Error      string // empty on success
	// ID and Response are read from the attempt log: the attempt's id and
	// the start of the endpoint's answer (valid UTF-8, at most 1 KiB).
	ID       int64
	Response string
}
