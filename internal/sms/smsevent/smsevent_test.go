package smsevent_test

import (
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/sms/smsevent"
	"switchboard/internal/store"
)

// The payloads, byte for byte, as the store built them before the sms
// capability did (domain.SMS*Event): webhook consumers receive these bytes
// and sign them, so they must not change with who builds them.
func TestPayloadsUnchanged(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 8, time.FixedZone("x", 3600))
	one, two := []string{"+15550002222"}, []string{"+15550002222", "+15550003333"}
	received := func(id int64, group []string, blocked bool) (domain.Event, error) {
		off, on, err := smsevent.Received("+15550001111", "+15550002222", group)
		if blocked {
			return on.With(id), err
		}
		return off.With(id), err
	}
	for _, c := range []struct {
		name string
		ev   func() (domain.Event, error)
		want string
	}{
		{"sent", func() (domain.Event, error) { return smsevent.Sent(42, "+15550001111", one) },
			`{"event":"message.sent","messageId":42,"direction":"out","line":"+15550001111","number":"+15550002222","numbers":["+15550002222"],"status":"sent"}`},
		{"sent group", func() (domain.Event, error) { return smsevent.Sent(43, "+15550001111", two) },
			`{"event":"message.sent","messageId":43,"direction":"out","line":"+15550001111","number":"+15550002222","numbers":["+15550002222","+15550003333"],"groupParticipants":["+15550002222","+15550003333"],"status":"sent"}`},
		{"received", func() (domain.Event, error) { return received(44, nil, false) },
			`{"event":"message.received","messageId":44,"direction":"in","line":"+15550001111","number":"+15550002222","numbers":["+15550002222"]}`},
		{"received group blocked", func() (domain.Event, error) { return received(45, two, true) },
			`{"event":"message.received","messageId":45,"direction":"in","line":"+15550001111","number":"+15550002222","numbers":["+15550002222"],"groupParticipants":["+15550002222","+15550003333"],"blocked":true}`},
		{"delivery", func() (domain.Event, error) {
			return smsevent.Delivery(46, "+15550001111", one, "delivered", "", at)
		}, `{"event":"message.delivery","messageId":46,"direction":"out","line":"+15550001111","number":"+15550002222","numbers":["+15550002222"],"delivery":{"status":"delivered","error":"","at":"2026-03-04T04:06:07Z"}}`},
		{"delivery group error", func() (domain.Event, error) {
			return smsevent.Delivery(47, "+15550001111", two, "undelivered", "err <&> \"x\"", at)
		}, `{"event":"message.delivery","messageId":47,"direction":"out","line":"+15550001111","number":"+15550002222","numbers":["+15550002222","+15550003333"],"groupParticipants":["+15550002222","+15550003333"],"delivery":{"status":"undelivered","error":"err \u003c\u0026\u003e \"x\"","at":"2026-03-04T04:06:07Z"}}`},
	} {
		ev, err := c.ev()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if ev.Type != domain.EventAccountSMS || string(ev.Payload) != c.want {
			t.Errorf("%s:\n got %s %s\nwant %s %s", c.name, ev.Type, ev.Payload, domain.EventAccountSMS, c.want)
		}
	}
}

// A received event's template names whatever id the transaction assigns,
// and only where the message id goes: a number that looks like the
// placeholder elsewhere stays as it is.
func TestReceivedNamesTheNewMessage(t *testing.T) {
	off, _, err := smsevent.Received("+15550001111", "-9223372036854775808", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{1, 9223372036854775807} {
		want, _ := domain.NewEvent(domain.EventAccountSMS, domain.SMSEvent{Event: domain.SMSReceived, MessageID: id, Direction: "in",
			Line: "+15550001111", Number: "-9223372036854775808", Numbers: []string{"-9223372036854775808"}})
		if got := off.With(id); string(got.Payload) != string(want.Payload) {
			t.Errorf("id %d:\n got %s\nwant %s", id, got.Payload, want.Payload)
		}
	}
	if _, err := store.NewIDTemplate([]byte(`{"messageId":1}`), `"messageId":`); err == nil {
		t.Error("a payload without the placeholder made a template")
	}
}
