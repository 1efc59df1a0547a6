package kannel_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"switchboard/internal/carrier"
	"switchboard/internal/carrier/kannel"
	"switchboard/internal/carrier/kannel/kanneltest"
)

// waitFor bounds every wait on Kannel; nothing here sleeps.
const waitFor = 20 * time.Second

// chanSink is an in-memory Sink that publishes what it stores on channels.
// failInbound makes that many Inbound calls fail first.
type chanSink struct {
	receipts chan carrier.Receipt
	inbound  chan carrier.Inbound

	mu            sync.Mutex
	failInbound   int
	failedInbound int
}

func newChanSink() *chanSink {
	return &chanSink{receipts: make(chan carrier.Receipt, 256), inbound: make(chan carrier.Inbound, 256)}
}

func (s *chanSink) Receipt(_ context.Context, r carrier.Receipt) error {
	s.receipts <- r
	return nil
}

func (s *chanSink) Inbound(_ context.Context, in carrier.Inbound) error {
	s.mu.Lock()
	if s.failInbound > 0 {
		s.failInbound--
		s.failedInbound++
		s.mu.Unlock()
		return errors.New("sink unavailable")
	}
	s.mu.Unlock()
	s.inbound <- in
	return nil
}

func (s *chanSink) nextInbound(t *testing.T) carrier.Inbound {
	t.Helper()
	select {
	case in := <-s.inbound:
		return in
	case <-time.After(waitFor):
		t.Fatal("no inbound text reached the sink")
		return carrier.Inbound{}
	}
}

// receiptsFor collects receipts until it has n for message id; receipts
// for other messages are kept for later calls.
func (s *chanSink) receiptsFor(t *testing.T, id int64, n int) []carrier.Receipt {
	t.Helper()
	var got, others []carrier.Receipt
	defer func() {
		for _, r := range others {
			s.receipts <- r
		}
	}()
	deadline := time.After(waitFor)
	for len(got) < n {
		select {
		case r := <-s.receipts:
			if r.MessageID == id {
				got = append(got, r)
			} else {
				others = append(others, r)
			}
		case <-deadline:
			t.Fatalf("got %d receipts for message %d, want %d: %+v", len(got), id, n, got)
		}
	}
	return got
}

type env struct {
	stack  *kanneltest.Stack
	driver *kannel.Driver
	sink   *chanSink
}

func setupKannel(t *testing.T) env {
	t.Helper()
	const secret = "integration-secret-0123456789"
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	callback := srv.URL + "/carrier/kannel"

	// Kannel gets exactly the sms-service group operators are told to use.
	stack := kanneltest.Start(t, kanneltest.Config{Extra: kannel.SMSService(callback, secret)})
	d, err := kannel.New(kannel.Config{
		SendURL:     stack.SendURL,
		Username:    stack.Username,
		Password:    stack.Password,
		CallbackURL: callback,
		Secret:      secret,
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := newChanSink()
	mux.Handle("/carrier/kannel/", http.StripPrefix("/carrier/kannel", d.Handler(sink)))
	return env{stack: stack, driver: d, sink: sink}
}

func (e env) waitMT(t *testing.T, to string) kanneltest.MT {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	mt, err := e.stack.WaitMT(ctx, func(m kanneltest.MT) bool { return m.To == to })
	if err != nil {
		t.Fatal(err)
	}
	return mt
}

// waitMTText waits for an MT to `to` carrying exactly text. fakesmsc prints
// a multi-line text as several lines, so an MT first appears with its first
// line only and is completed when the rest arrives.
func (e env) waitMTText(t *testing.T, to, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if _, err := e.stack.WaitMT(ctx, func(m kanneltest.MT) bool { return m.To == to && m.Text == text }); err != nil {
		var got []string
		for _, m := range e.stack.MTs() {
			if m.To == to {
				got = append(got, fmt.Sprintf("from %s text %q", m.From, m.Text))
			}
		}
		t.Fatalf("no MT to %s with text %q; got %v: %v", to, text, got, err)
	}
}

func TestKannelEndToEnd(t *testing.T) {
	e := setupKannel(t)
	ctx := context.Background()
	const moSender = "15550999"

	// Inbound first: any reply SMS Kannel wrongly sent back to moSender
	// would be queued ahead of the sends below, so the final check sees it.
	t.Run("inbound ASCII", func(t *testing.T) {
		if err := e.stack.InjectMO(ctx, moSender, "15550001", "Hello  there, Switchboard!"); err != nil {
			t.Fatal(err)
		}
		in := e.sink.nextInbound(t)
		if in.From != moSender || in.To != "15550001" || in.Text != "Hello  there, Switchboard!" {
			t.Errorf("inbound = %+v, want from %s to 15550001 text %q", in, moSender, "Hello  there, Switchboard!")
		}
		if in.At.IsZero() || time.Since(in.At) > time.Minute {
			t.Errorf("inbound At = %v, want about now", in.At)
		}
	})

	t.Run("inbound UCS-2", func(t *testing.T) {
		const text = "Grüße €5 — ok 😀\nzweite Zeile"
		if err := e.stack.InjectMO(ctx, moSender, "15550001", text); err != nil {
			t.Fatal(err)
		}
		in := e.sink.nextInbound(t)
		if in.From != moSender || in.To != "15550001" || in.Text != text {
			t.Errorf("inbound = %+v, want text %q", in, text)
		}
	})

	t.Run("inbound retried after sink failure", func(t *testing.T) {
		e.sink.mu.Lock()
		e.sink.failInbound = 1
		e.sink.mu.Unlock()
		if err := e.stack.InjectMO(ctx, moSender, "15550001", "second try"); err != nil {
			t.Fatal(err)
		}
		// smsbox got a 500, waits http-queue-delay and asks again.
		in := e.sink.nextInbound(t)
		if in.Text != "second try" {
			t.Errorf("inbound text = %q, want %q", in.Text, "second try")
		}
		e.sink.mu.Lock()
		failed := e.sink.failedInbound
		e.sink.mu.Unlock()
		if failed != 1 {
			t.Errorf("sink refused %d inbound, want 1", failed)
		}
	})

	t.Run("GSM text arrives 7-bit and intact", func(t *testing.T) {
		// Every GSM 03.38 character except the control ones (LF, CR, FF,
		// which fakesmsc's line protocol cannot show), extension table
		// included.
		const text = "@£$¥èéùìòÇØøÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
			"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà^{}\\[~]|€"
		if _, err := e.driver.Send(ctx, carrier.Message{ID: 101, From: "15550001", To: []string{"15550101"}, Text: text}); err != nil {
			t.Fatalf("Send: %v", err)
		}
		mt := e.waitMT(t, "15550101")
		if mt.From != "15550001" || mt.Type != "text" || mt.Text != text {
			t.Errorf("fake SMSC got from %s, type %s, text %q; want from 15550001, type text, text %q", mt.From, mt.Type, mt.Text, text)
		}
	})

	t.Run("delivery reports", func(t *testing.T) {
		// The fake SMSC reports "smsc submit" (8) and "delivered" (1), in
		// either order.
		got := e.sink.receiptsFor(t, 101, 2)
		statuses := map[string]bool{}
		for _, r := range got {
			statuses[r.Status] = true
			if r.Error != "" {
				t.Errorf("receipt %+v has an error, want none", r)
			}
			if r.At.IsZero() || time.Since(r.At) > time.Minute {
				t.Errorf("receipt At = %v, want about now", r.At)
			}
		}
		if !statuses["delivered"] || !statuses["smsc_submit"] {
			t.Errorf("receipt statuses = %v, want delivered and smsc_submit", statuses)
		}
	})

	t.Run("non-GSM text arrives as UCS-2", func(t *testing.T) {
		const text = "Grüße €5 — ok 😀"
		if _, err := e.driver.Send(ctx, carrier.Message{ID: 102, From: "15550001", To: []string{"15550102"}, Text: text}); err != nil {
			t.Fatalf("Send: %v", err)
		}
		mt := e.waitMT(t, "15550102")
		// Kannel converts the UTF-8 we send to UTF-16BE, which fakesmsc
		// prints URL-encoded: "%00G%00r%00%FC%00%DF%00e%00++%AC%005...".
		if mt.Type != "ucs-2" || mt.Text != text {
			t.Errorf("fake SMSC got type %s text %q (raw %q), want ucs-2 %q", mt.Type, mt.Text, mt.Raw, text)
		}
		e.sink.receiptsFor(t, 102, 2)
	})

	t.Run("group with media is one SMS per recipient", func(t *testing.T) {
		msg := carrier.Message{ID: 103, From: "15550001", To: []string{"15550201", "15550202"},
			Text: "Look at this", Media: []string{"https://sb.example.com/media/abc.jpg"}}
		if _, err := e.driver.Send(ctx, msg); err != nil {
			t.Fatalf("Send: %v", err)
		}
		for _, to := range msg.To {
			e.waitMTText(t, to, "Look at this\nhttps://sb.example.com/media/abc.jpg")
			if mt := e.waitMT(t, to); mt.From != "15550001" {
				t.Errorf("MT to %s is from %s, want 15550001", to, mt.From)
			}
		}
		// Two recipients, two reports each, all for message 103.
		e.sink.receiptsFor(t, 103, 4)
	})

	t.Run("wrong credentials are unavailable", func(t *testing.T) {
		bad, err := kannel.New(kannel.Config{SendURL: e.stack.SendURL, Username: e.stack.Username, Password: "wrong",
			CallbackURL: "http://127.0.0.1:1/carrier/kannel", Secret: "integration-secret-0123456789"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = bad.Send(ctx, carrier.Message{ID: 104, From: "15550001", To: []string{"15550104"}, Text: "x"})
		if !errors.Is(err, carrier.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
	})

	t.Run("no reply SMS to inbound senders", func(t *testing.T) {
		for _, mt := range e.stack.MTs() {
			if mt.To == moSender {
				t.Errorf("Kannel replied to an inbound text: %+v", mt)
			}
		}
	})
}
