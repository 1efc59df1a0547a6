package sms

import (
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"switchboard/internal/carrier"
	"switchboard/internal/domain"
	"switchboard/internal/money"
	"switchboard/internal/sms/smsevent"
	"switchboard/internal/store"
)

// payloadOf returns the payload of the one AccountSMS event of kind for
// message id.
func (e *env) payloadOf(t *testing.T, kind string, id int64) string {
	t.Helper()
	evs, err := e.st.Events(bg, e.p.AccountID, 0, 1000)
	check(t, err)
	var found []string
	for _, ev := range evs {
		var p struct {
			Event     string `json:"event"`
			MessageID int64  `json:"messageId"`
		}
		check(t, json.Unmarshal(ev.Payload, &p))
		if ev.Type == domain.EventAccountSMS && p.Event == kind && p.MessageID == id {
			found = append(found, string(ev.Payload))
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d %s events for message %d, want 1: %v", len(found), kind, id, found)
	}
	return found[0]
}

// A receipt's events are built by the service from its message's line and
// recipients, whether this process sent the message (and remembers them)
// or not (another node, a restart: they are read back), and the store
// writes exactly those bytes.
func TestReceiptEventsRemembered(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		at := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
		want := func(id int64, status string) string {
			ev, err := smsevent.Delivery(id, testLine, []string{testTo}, status, "", at)
			check(t, err)
			return string(ev.Payload)
		}
		// Sent here: remembered.
		res, _, err := e.svc.Send(bg, e.p, e.request(), nil)
		check(t, err)
		id := res.Messages[0].ID
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: id, Status: "delivered", At: at}))
		if got := e.payloadOf(t, domain.SMSDelivery, id); got != want(id, "delivered") {
			t.Errorf("delivery event\n got %s\nwant %s", got, want(id, "delivered"))
		}

		// An intent this process never handed to the carrier, as after a
		// crash: the receipt proves acceptance, and both its events name the
		// message's line and recipients, read from the store.
		out := &store.Outbound{AccountID: e.p.AccountID, LineID: e.line.ID, From: testLine, To: []string{testTo}, Participants: testTo,
			Body: "x", Type: domain.BillingSMS, Units: 1, UnitPrice: 7900, Price: 7900}
		id2, err := e.st.CreateOutbound(bg, out)
		check(t, err)
		other := New(Config{Store: e.st, Carrier: e.car, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		check(t, other.Receipt(bg, carrier.Receipt{MessageID: id2, Status: "delivered", At: at}))
		if got, want := e.payloadOf(t, domain.SMSSent, id2), string(sentEvent(t, id2).Payload); got != want {
			t.Errorf("sent event\n got %s\nwant %s", got, want)
		}
		if got := e.payloadOf(t, domain.SMSDelivery, id2); got != want(id2, "delivered") {
			t.Errorf("delivery event\n got %s\nwant %s", got, want(id2, "delivered"))
		}
		if m := e.message(t, id2); m.Status != domain.StatusSent {
			t.Errorf("status %s, want sent", m.Status)
		}

		// A receipt for no message is dropped, as before.
		check(t, other.Receipt(bg, carrier.Receipt{MessageID: id2 + 1000, Status: "delivered", At: at}))
	})
}

// The parties memory keeps the newest recentParties sends and forgets the
// oldest.
func TestPartiesForgetOldest(t *testing.T) {
	var p parties
	for id := int64(1); id <= recentParties+2; id++ {
		p.remember(id, "l", []string{"n"})
	}
	p.remember(recentParties+2, "again", nil) // already there: unchanged
	if len(p.byID) != recentParties {
		t.Fatalf("%d remembered, want %d", len(p.byID), recentParties)
	}
	for _, id := range []int64{1, 2} {
		if _, ok := p.byID[id]; ok {
			t.Errorf("message %d still remembered", id)
		}
	}
	if got := p.byID[recentParties+2]; got.line != "l" {
		t.Errorf("newest = %+v", got)
	}
}

// A schedule's Idempotency-Key record is handed to the store as data: the
// same bytes the record had when the store called back for them, naming
// the schedule the transaction creates, whatever its text holds.
func TestScheduledRecordAsData(t *testing.T) {
	m := domain.ScheduledMessage{AccountID: 3, LineID: 4, Line: testLine, Recipients: []string{testTo}, UnitPrices: []money.Micros{7900},
		Subject: `{"scheduled":{"ID":-9223372036854775808`, Text: "ID -9223372036854775808", Type: domain.BillingSMS, Units: 1,
		Price: 7900, SendAt: time.Date(2027, 1, 2, 3, 4, 5, 6000, time.UTC), CreatedBy: 9}
	tmpl, err := scheduledRecord(m)
	check(t, err)
	for _, id := range []int64{1, 77, 1 << 40} {
		c := m
		c.ID = id
		want, err := json.Marshal(record{Scheduled: &c})
		check(t, err)
		if got := tmpl.With(id); string(got) != string(want) {
			t.Errorf("id %d:\n got %s\nwant %s", id, got, want)
		}
	}
}

// Through the store: a retried schedule replays the schedule the first
// request created, with its id.
func TestScheduleIdempotentReplay(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		_, idem, err := e.svc.BeginIdempotent(bg, e.p, "sched", []byte("body"))
		check(t, err)
		m, err := e.svc.Schedule(bg, e.p, testLine, ScheduleRequest{To: []string{testTo}, Message: "later", SendAt: time.Now().Add(time.Hour)}, idem)
		check(t, err)
		replay, again, err := e.svc.BeginIdempotent(bg, e.p, "sched", []byte("body"))
		check(t, err)
		if again != nil || replay == nil || replay.Scheduled == nil {
			t.Fatalf("replay = %+v, claim %v; want the schedule", replay, again)
		}
		if replay.Scheduled.ID != m.ID || replay.Scheduled.Text != "later" || !replay.Scheduled.SendAt.Equal(m.SendAt) {
			t.Errorf("replayed %+v, want %+v", *replay.Scheduled, m)
		}
	})
}
