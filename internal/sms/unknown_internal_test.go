package sms

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"
	"time"

	"switchboard/internal/apitest"
	"switchboard/internal/carrier"
	"switchboard/internal/domain"
)

var errLostAnswer = fmt.Errorf("%w: the answer was lost", carrier.ErrUnknown)

// The carrier's answer is lost (it may have the message) and its receipt
// arrives while the send waits: the client gets 201 and the message is
// charged once. Before, this was a 503 "nothing was sent" for a message the
// carrier had, and the message was never charged.
func TestUnknownOutcomeThenReceiptIsSent(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		e.svc.carrierTimeout = 10 * time.Second
		e.car.err = errLostAnswer
		ids := make(chan int64, 1)
		e.car.during = func(m carrier.Message) { ids <- m.ID }
		type sent struct {
			res     *domain.SendResult
			outcome domain.SendOutcome
			err     error
		}
		done := make(chan sent, 1)
		start := time.Now()
		go func() {
			res, outcome, err := e.svc.Send(bg, e.p, e.request(), nil)
			done <- sent{res, outcome, err}
		}()
		// The receipt comes after the answer failed, while the send waits
		// for evidence.
		var id int64
		select {
		case id = <-ids:
		case r := <-done:
			t.Fatalf("send = %v %v before it called the carrier", r.outcome, r.err)
		}
		apitest.Eventually(t, "the send to wait for evidence", func() bool { _, waiting := e.svc.evidence.Load(id); return waiting })
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: id, Status: "delivered", At: time.Now()}))
		r := <-done
		res, outcome, err := r.res, r.outcome, r.err
		if err != nil || outcome != domain.SendCreated {
			t.Fatalf("send = %v %v, want created", outcome, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("the send waited %v: the receipt should wake it at once", d)
		}
		if m := e.message(t, res.Messages[0].ID); m.Status != domain.StatusSent || res.Messages[0].Status != domain.StatusSent {
			t.Errorf("message %s (result %s), want sent", m.Status, res.Messages[0].Status)
		}
		if total, n := e.ledger(t); total != 7900 || n != 1 {
			t.Errorf("ledger = %d in %d rows, want one charge of 7900", total, n)
		}
	})
}

// No evidence within the carrier timeout: the client is told the message is
// pending (202), it is neither failed nor charged, the reconciler leaves it
// while the send waits, and a receipt arriving later charges it once.
func TestUnknownOutcomeWithoutEvidenceIsPending(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		e.svc.carrierTimeout = 300 * time.Millisecond
		e.car.err = errLostAnswer
		res, outcome, err := e.svc.Send(bg, e.p, e.request(), nil)
		if err != nil || outcome != domain.SendPending {
			t.Fatalf("send = %v %v, want pending (not a 5xx: the carrier may have it)", outcome, err)
		}
		id := res.Messages[0].ID
		if res.Messages[0].Status != domain.StatusPending || res.Billing.TotalPrice != 7900 {
			t.Errorf("result = %+v, want the message pending at its price", res)
		}
		if m := e.message(t, id); m.Status != domain.StatusPending {
			t.Errorf("message %s, want pending", m.Status)
		}
		if _, n := e.ledger(t); n != 0 {
			t.Errorf("charged without evidence")
		}
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: id, Status: "delivered", At: time.Now()}))
		if m := e.message(t, id); m.Status != domain.StatusSent {
			t.Errorf("after the late receipt: %s, want sent", m.Status)
		}
		if total, n := e.ledger(t); total != 7900 || n != 1 {
			t.Errorf("ledger = %d in %d rows, want one charge of 7900", total, n)
		}
	})
}

// A refusal is still a 503, at once: the carrier certainly did not take it.
func TestRefusalIsNotUnknown(t *testing.T) {
	e := newEnv(t, "sqlite")
	e.svc.carrierTimeout = time.Hour
	e.car.err = fmt.Errorf("%w: refused", carrier.ErrUnavailable)
	if _, _, err := e.svc.Send(bg, e.p, e.request(), nil); domain.ErrorCode(err) != domain.Unavailable {
		t.Fatalf("send err = %v, want unavailable", err)
	}
	if m := e.only(t); m.Status != domain.StatusFailed {
		t.Errorf("message %s, want failed", m.Status)
	}
}

// Through the real Kannel driver: smsbox answers after the driver's own HTTP
// timeout (the audit's 16 s answer against a 15 s timeout, scaled down) and
// then reports delivery. The client gets 201 and one charge. Before, the
// driver's timeout was a refusal: 503, the message failed and never charged,
// and a retry sent it twice.
func TestKannelAnswerAfterDriverTimeout(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		e.svc.carrierTimeout = 10 * time.Second
		var dlr func(id int64, typ int) int
		done := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer close(done)
			u, err := url.Parse(r.URL.Query().Get("dlr-url"))
			if err != nil {
				t.Errorf("dlr-url: %v", err)
				return
			}
			id, _ := strconv.ParseInt(u.Query().Get("id"), 10, 64)
			<-r.Context().Done() // smsbox is slow: it answers once the driver gave up (its 100 ms timeout)
			w.WriteHeader(http.StatusAccepted)
			w.Write([]byte("0: Accepted for delivery"))
			// It took the message: it reports submission to the SMSC.
			if code := dlr(id, 8); code != 200 {
				t.Errorf("DLR: %d", code)
			}
		}))
		t.Cleanup(slow.Close)
		d, hook := kannelHooks(t, e, slow.URL+"/cgi-bin/sendsms", &http.Client{Timeout: 100 * time.Millisecond})
		dlr = hook
		e.svc.carrier = d
		res, outcome, err := e.svc.Send(bg, e.p, e.request(), nil)
		<-done
		if err != nil || outcome != domain.SendCreated {
			t.Fatalf("send = %v %v, want created", outcome, err)
		}
		if m := e.message(t, res.Messages[0].ID); m.Status != domain.StatusSent || m.DeliveryStatus != "smsc_submit" {
			t.Errorf("message %s / %q, want sent with its report", m.Status, m.DeliveryStatus)
		}
		if total, n := e.ledger(t); total != 7900 || n != 1 {
			t.Errorf("ledger = %d in %d rows, want one charge of 7900", total, n)
		}
	})
}
