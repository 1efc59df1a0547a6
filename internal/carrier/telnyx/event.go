package telnyx

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The event types ParseEvent reads beyond their envelope.
const (
	EventSent      = "message.sent"      // Telnyx handed the message on; a receipt
	EventFinalized = "message.finalized" // the message reached its last status; a receipt
	EventReceived  = "message.received"  // a text to one of the account's numbers
)

// Event is one webhook. Receipt is set for EventSent and EventFinalized,
// Inbound for EventReceived; any other type comes with neither, for the
// caller to acknowledge and ignore.
type Event struct {
	ID         string    // data.id: the same on every retry of this event
	Type       string    // data.event_type
	OccurredAt time.Time // data.occurred_at; zero when absent or unreadable
	Receipt    *Receipt
	Inbound    *Inbound
}

// Receipt is the status of a message sent through Send.
type Receipt struct {
	MessageID string // payload.id, as Send returned it
	To        string // payload.to[0].phone_number
	// Status is payload.to[0].status as Telnyx words it (queued, sending,
	// sent, delivered, sending_failed, delivery_failed,
	// delivery_unconfirmed, or one added since), passed through unmapped.
	Status string
	Errors []Problem // payload.errors: why a message failed, when it did
}

// Inbound is a text (SMS or MMS) someone sent to one of the account's numbers.
type Inbound struct {
	MessageID string   // payload.id
	From      string   // payload.from.phone_number
	To        string   // payload.to[0].phone_number: the account's number
	Cc        []string // payload.cc[].phone_number: the others on a group MMS
	Text      string
	MediaURLs []string // payload.media[].url
}

// envelope is the part of a webhook body ParseEvent reads. Telnyx adds
// fields over time, so unknown ones are ignored.
type envelope struct {
	Data *struct {
		ID         string          `json:"id"`
		EventType  string          `json:"event_type"`
		OccurredAt string          `json:"occurred_at"`
		Payload    json.RawMessage `json:"payload"`
	} `json:"data"`
}

// address is an entry of from, to or cc: an object, or in some of
// Telnyx's examples a bare number.
type address struct {
	PhoneNumber string `json:"phone_number"`
	Status      string `json:"status"`
}

// UnmarshalJSON reads an address object or a bare number string.
func (a *address) UnmarshalJSON(b []byte) error {
	var number string
	if json.Unmarshal(b, &number) == nil {
		*a = address{PhoneNumber: number}
		return nil
	}
	type plain address // without this method
	return json.Unmarshal(b, (*plain)(a))
}

type messagePayload struct {
	ID    string    `json:"id"`
	From  address   `json:"from"`
	To    []address `json:"to"`
	Cc    []address `json:"cc"`
	Text  string    `json:"text"`
	Media []struct {
		URL string `json:"url"`
	} `json:"media"`
	Errors []Problem `json:"errors"`
}

// ParseEvent reads a webhook body (verify it first). It fails on a body
// that is not Telnyx's envelope, and on a message event that lacks what
// its Receipt or Inbound needs.
func ParseEvent(body []byte) (Event, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return Event{}, fmt.Errorf("telnyx: webhook body: %w", err)
	}
	if env.Data == nil || env.Data.EventType == "" {
		return Event{}, errors.New("telnyx: webhook body has no data.event_type")
	}
	d := env.Data
	ev := Event{ID: d.ID, Type: d.EventType}
	if t, err := time.Parse(time.RFC3339Nano, d.OccurredAt); err == nil {
		ev.OccurredAt = t
	}
	switch d.EventType {
	case EventSent, EventFinalized, EventReceived:
	default:
		return ev, nil
	}
	var p messagePayload
	if len(d.Payload) == 0 || string(d.Payload) == "null" {
		return Event{}, fmt.Errorf("telnyx: %s without a payload", d.EventType)
	}
	if err := json.Unmarshal(d.Payload, &p); err != nil {
		return Event{}, fmt.Errorf("telnyx: %s payload: %w", d.EventType, err)
	}
	if p.ID == "" {
		return Event{}, fmt.Errorf("telnyx: %s without payload.id", d.EventType)
	}
	if len(p.To) == 0 || p.To[0].PhoneNumber == "" {
		return Event{}, fmt.Errorf("telnyx: %s without payload.to[0].phone_number", d.EventType)
	}
	if d.EventType == EventReceived {
		in, err := inbound(p)
		if err != nil {
			return Event{}, err
		}
		ev.Inbound = in
		return ev, nil
	}
	if p.To[0].Status == "" {
		return Event{}, fmt.Errorf("telnyx: %s without payload.to[0].status", d.EventType)
	}
	ev.Receipt = &Receipt{MessageID: p.ID, To: p.To[0].PhoneNumber, Status: p.To[0].Status}
	if len(p.Errors) > 0 {
		ev.Receipt.Errors = p.Errors
	}
	return ev, nil
}

func inbound(p messagePayload) (*Inbound, error) {
	if p.From.PhoneNumber == "" {
		return nil, errors.New("telnyx: message.received without payload.from.phone_number")
	}
	in := &Inbound{MessageID: p.ID, From: p.From.PhoneNumber, To: p.To[0].PhoneNumber, Text: p.Text}
	for _, a := range p.Cc {
		if a.PhoneNumber != "" {
			in.Cc = append(in.Cc, a.PhoneNumber)
		}
	}
	for _, m := range p.Media {
		if m.URL != "" {
			in.MediaURLs = append(in.MediaURLs, m.URL)
		}
	}
	return in, nil
}
