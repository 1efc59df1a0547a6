// Package smsevent builds the sms capability's AccountSMS events, as the
// calls capability builds its own: the store writes their type and payload to
// the outbox without reading either. It stands apart from package sms so that
// the test factory and the generators that write messages straight to the
// store (storetest, demo, bench) build the same events.
package smsevent

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// Sent is the event of outbound message id, accepted by the carrier.
func Sent(id int64, line string, numbers []string) (domain.Event, error) {
	return build(domain.SMSEvent{Event: domain.SMSSent, MessageID: id, Direction: "out", Line: line, Numbers: numbers, Status: domain.StatusSent})
}

// Delivery is the event of a delivery report on outbound message id.
func Delivery(id int64, line string, numbers []string, status, errText string, at time.Time) (domain.Event, error) {
	return build(domain.SMSEvent{Event: domain.SMSDelivery, MessageID: id, Direction: "out", Line: line, Numbers: numbers,
		Delivery: &domain.SMSDeliveryReport{Status: status, Error: errText, At: at.UTC().Format(time.RFC3339)}})
}

// Failed is the event of queued outbound message id, refused by the
// carrier for reason (its words): failed, uncharged.
func Failed(id int64, line string, numbers []string, reason string) (domain.Event, error) {
	return build(domain.SMSEvent{Event: domain.SMSFailed, MessageID: id, Direction: "out", Line: line, Numbers: numbers, Status: domain.StatusFailed, Error: reason})
}

// Received is the event of an inbound text from from to line, for the store
// to name the new message in (its id is the transaction's): from a sender off
// the line's block list and from one on it, since which applies is the
// transaction's to decide too. group lists every other party of a group
// thread (nil for a 1:1 text).
func Received(line, from string, group []string) (off, blocked store.RowEvent, err error) {
	e := domain.SMSEvent{Event: domain.SMSReceived, MessageID: store.PlaceholderID, Direction: "in", Line: line, Numbers: []string{from}, GroupParticipants: group}
	if off, err = rowEvent(e); err != nil {
		return off, blocked, err
	}
	e.Blocked = true
	blocked, err = rowEvent(e)
	return off, blocked, err
}

// SetReceived sets in's Received and ReceivedBlocked from its line, sender
// and participants (a group's every other party).
func SetReceived(in *store.Inbound) error {
	var group []string
	if len(in.Participants) > 1 {
		group = in.Participants
	}
	var err error
	in.Received, in.ReceivedBlocked, err = Received(in.Line.Number, in.From, group)
	return err
}

// messageIDKey is how an encoded SMSEvent names its message, before any
// number or text of the caller's.
const messageIDKey = `"messageId":`

func rowEvent(e domain.SMSEvent) (store.RowEvent, error) {
	ev, err := build(e)
	if err != nil {
		return store.RowEvent{}, err
	}
	t, err := store.NewIDTemplate(ev.Payload, messageIDKey)
	return store.RowEvent{Type: ev.Type, Payload: t}, err
}

// build completes e (Number is the first of Numbers; a group's Numbers are
// its GroupParticipants) and encodes it.
func build(e domain.SMSEvent) (domain.Event, error) {
	if e.Number == "" && len(e.Numbers) > 0 {
		e.Number = e.Numbers[0]
	}
	if len(e.Numbers) > 1 && e.GroupParticipants == nil {
		e.GroupParticipants = e.Numbers
	}
	return domain.Event{Type: domain.EventAccountSMS, Payload: appendEvent(make([]byte, 0, 192), &e)}, nil
}

// appendEvent appends e as json.Marshal encodes a domain.SMSEvent, byte for
// byte (TestAppendMatchesEncodingJSON), field by field: every send and every
// receipt builds one or two of these, and reflection made them a sixth of a
// send's CPU.
func appendEvent(b []byte, e *domain.SMSEvent) []byte {
	b = appendString(append(b, `{"event":`...), e.Event)
	b = strconv.AppendInt(append(b, `,"messageId":`...), e.MessageID, 10)
	b = appendString(append(b, `,"direction":`...), e.Direction)
	b = appendString(append(b, `,"line":`...), e.Line)
	b = appendString(append(b, `,"number":`...), e.Number)
	b = appendStrings(append(b, `,"numbers":`...), e.Numbers)
	if len(e.GroupParticipants) > 0 {
		b = appendStrings(append(b, `,"groupParticipants":`...), e.GroupParticipants)
	}
	if e.Status != "" {
		b = appendString(append(b, `,"status":`...), e.Status)
	}
	if e.Error != "" {
		b = appendString(append(b, `,"error":`...), e.Error)
	}
	if d := e.Delivery; d != nil {
		b = appendString(append(b, `,"delivery":{"status":`...), d.Status)
		b = appendString(append(b, `,"error":`...), d.Error)
		b = append(appendString(append(b, `,"at":`...), d.At), '}')
	}
	if e.Blocked {
		b = append(b, `,"blocked":true`...)
	}
	return append(b, '}')
}

func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendString appends s as a JSON string. Printable ASCII that
// encoding/json leaves alone (it escapes the quote, the backslash and, by
// default, < > &) is what these fields almost always hold; anything else
// goes through encoding/json, so that escapes, invalid UTF-8 and
// U+2028/U+2029 come out exactly as it writes them.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // never fails for a string
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
