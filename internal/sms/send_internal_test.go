package sms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/blob"
	"switchboard/internal/carrier"
	"switchboard/internal/domain"
	"switchboard/internal/sms/smsevent"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// stubCarrier accepts (or refuses) synchronously and records what it got.
type stubCarrier struct {
	mu    sync.Mutex
	err   error
	got   []carrier.Message
	ctxOK []bool // whether the context was still live at each call
	// during, when set, runs inside Send before it returns, whatever the
	// answer (to deliver a receipt that beats it).
	during func(m carrier.Message)
}

func (c *stubCarrier) Send(ctx context.Context, m carrier.Message) (carrier.Accepted, error) {
	c.mu.Lock()
	err, during := c.err, c.during
	c.got = append(c.got, m)
	c.ctxOK = append(c.ctxOK, ctx.Err() == nil)
	n := len(c.got)
	c.mu.Unlock()
	if during != nil {
		during(m)
	}
	if err != nil {
		return carrier.Accepted{}, err
	}
	return carrier.Accepted{Ref: fmt.Sprintf("stub-%d", n)}, nil
}

func (c *stubCarrier) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

// countingMedia counts uploads.
type countingMedia struct {
	MediaStore
	mu   sync.Mutex
	puts int
}

func (m *countingMedia) Put(ctx context.Context, data []byte, contentType, ext string) (string, error) {
	m.mu.Lock()
	m.puts++
	m.mu.Unlock()
	return m.MediaStore.Put(ctx, data, contentType, ext)
}

func (m *countingMedia) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.puts
}

type env struct {
	st    *store.Store
	svc   *Service
	car   *stubCarrier
	media *countingMedia
	p     auth.Principal
	line  domain.Line
	steps []string // fault steps seen, in order
	// attempts receives (without blocking) after each settler retry.
	attempts chan struct{}
}

const (
	testLine = "14155550100"
	testTo   = "14155550123"
)

var bg = context.Background()

func newEnv(t *testing.T, engine store.Engine) *env {
	t.Helper()
	return newEnvOn(t, storetest.Open(t, engine))
}

// newEnvOn is newEnv on an open, migrated store.
func newEnvOn(t *testing.T, st *store.Store) *env {
	t.Helper()
	a := storetest.Account(t, st, nil)
	line := storetest.Line(t, st, a.ID, &storetest.LineOpts{Number: testLine})
	storetest.Rate(t, st, a.ID, "1", "0.0079", "0.02")
	b, err := blob.Open(bg, "mem://")
	check(t, err)
	t.Cleanup(func() { b.Close() })
	e := &env{st: st, car: &stubCarrier{}, media: &countingMedia{MediaStore: b}, line: line,
		p: auth.Principal{AccountID: a.ID, Scopes: []auth.Scope{auth.SMSSend}}}
	e.svc = New(Config{
		Store:    st,
		Carrier:  e.car,
		Media:    e.media,
		MediaURL: func(name string) string { return b.URL("https://sb.test/media/", name) },
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	e.attempts = make(chan struct{}, 1)
	e.svc.settle.base = time.Millisecond
	e.svc.settle.attempted = func(string, error) {
		select {
		case e.attempts <- struct{}{}:
		default:
		}
	}
	t.Cleanup(e.svc.Settler().Stop)
	return e
}

// sentEvent is the message.sent event of a message from testLine to testTo,
// as the service builds it.
func sentEvent(t *testing.T, id int64) domain.Event {
	t.Helper()
	ev, err := smsevent.Sent(id, testLine, []string{testTo})
	check(t, err)
	return ev
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func eachEngine(t *testing.T, fn func(t *testing.T, e *env)) {
	for _, engine := range storetest.Engines(t) {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			fn(t, newEnv(t, engine))
		})
	}
}

// failAt makes the fault hook return an error at step (and record every step).
func (e *env) failAt(step string) error {
	errFault := errors.New("injected fault at " + step)
	e.svc.faultHook = func(s string) error {
		e.steps = append(e.steps, s)
		if s == step {
			return errFault
		}
		return nil
	}
	return errFault
}

func (e *env) request() domain.SendRequest {
	return domain.SendRequest{From: testLine, To: []string{"(415) 555-0123"}, Message: "hello"}
}

func (e *env) ledger(t *testing.T) (int64, int) {
	t.Helper()
	total, n, err := e.st.LedgerTotal(bg, e.p.AccountID)
	check(t, err)
	return total, n
}

// messages probes message ids (the store has no listing).
func (e *env) messages(t *testing.T) []domain.Message {
	t.Helper()
	var out []domain.Message
	misses := 0
	for id := int64(1); misses < 30; id++ {
		m, err := e.st.Message(bg, e.p.AccountID, id)
		if domain.IsNotFound(err) {
			misses++
			continue
		}
		check(t, err)
		misses = 0
		out = append(out, m)
	}
	return out
}

func (e *env) only(t *testing.T) domain.Message {
	t.Helper()
	ms := e.messages(t)
	if len(ms) != 1 {
		t.Fatalf("messages = %+v, want exactly one", ms)
	}
	return ms[0]
}

func (e *env) message(t *testing.T, id int64) domain.Message {
	t.Helper()
	m, err := e.st.Message(bg, e.p.AccountID, id)
	check(t, err)
	return m
}

func (e *env) events(t *testing.T, kind string, id int64) int {
	t.Helper()
	evs, err := e.st.Events(bg, e.p.AccountID, 0, 1000)
	check(t, err)
	n := 0
	for _, ev := range evs {
		var p struct {
			Event     string `json:"event"`
			MessageID int64  `json:"messageId"`
		}
		check(t, json.Unmarshal(ev.Payload, &p))
		if ev.Type == "AccountSMS" && p.Event == kind && p.MessageID == id {
			n++
		}
	}
	return n
}

func TestSendStepsInOrder(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		e.failAt("none")
		res, outcome, err := e.svc.Send(bg, e.p, e.request(), nil)
		if err != nil || outcome != domain.SendCreated {
			t.Fatalf("send: %q %v", outcome, err)
		}
		if want := []string{"before-intent", "after-intent", "after-carrier"}; !slices.Equal(e.steps, want) {
			t.Errorf("steps = %v, want %v", e.steps, want)
		}
		m := e.message(t, res.Messages[0].ID)
		if m.Status != domain.StatusSent || m.CarrierRef != "stub-1" || m.Price != 7900 {
			t.Errorf("message = %+v", m)
		}
		if total, n := e.ledger(t); total != 7900 || n != 1 {
			t.Errorf("ledger = %d in %d rows", total, n)
		}
	})
}

func TestFaultBeforeIntent(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		errFault := e.failAt("before-intent")
		req := e.request()
		req.Attachments = []domain.Attachment{{Filename: "a.png", ContentType: "image/png", Content: "iVBORw0KGgo="}}
		res, outcome, err := e.svc.Send(bg, e.p, req, nil)
		if !errors.Is(err, errFault) || outcome != "" || res != nil {
			t.Fatalf("send = %q %v %v, want the injected error", outcome, res, err)
		}
		if ms := e.messages(t); len(ms) != 0 {
			t.Errorf("messages written: %+v", ms)
		}
		if total, n := e.ledger(t); total != 0 || n != 0 {
			t.Errorf("charged %d in %d rows", total, n)
		}
		if e.car.calls() != 0 || e.media.count() != 0 {
			t.Errorf("carrier calls %d, uploads %d; want none", e.car.calls(), e.media.count())
		}
	})
}

func TestFaultAfterIntentThenReconcile(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		// With an Idempotency-Key claimed the way the HTTP layer does.
		replay, idem, err := e.svc.BeginIdempotent(bg, e.p, "k1", []byte("body"))
		if err != nil || replay != nil || idem == nil {
			t.Fatalf("begin: %v %v %v", replay, idem, err)
		}

		errFault := e.failAt("after-intent")
		if _, _, err := e.svc.Send(bg, e.p, e.request(), idem); !errors.Is(err, errFault) {
			t.Fatalf("send err = %v, want the injected error", err)
		}
		m := e.only(t)
		if m.Status != domain.StatusPending || m.Price != 7900 || m.Units != 1 || !slices.Equal(m.To, []string{testTo}) {
			t.Errorf("intent = %+v, want pending at 0.0079", m)
		}
		if total, n := e.ledger(t); total != 0 || n != 0 {
			t.Errorf("a pending message was charged: %d in %d rows", total, n)
		}
		if e.car.calls() != 0 {
			t.Errorf("carrier called %d times", e.car.calls())
		}
		if n := e.events(t, "message.sent", m.ID); n != 0 {
			t.Errorf("%d message.sent events for a pending message", n)
		}
		// The key is held while the message is pending.
		if _, _, err := e.svc.BeginIdempotent(bg, e.p, "k1", []byte("body")); domain.ErrorCode(err) != domain.Conflict {
			t.Errorf("retry while pending: %v, want conflict", err)
		}

		n, err := e.svc.Reconcile(bg, 0)
		if err != nil || n != 1 {
			t.Fatalf("reconcile = %d %v, want 1", n, err)
		}
		if got := e.message(t, m.ID); got.Status != domain.StatusAbandoned {
			t.Errorf("after reconcile: %s, want abandoned", got.Status)
		}
		if total, n := e.ledger(t); total != 0 || n != 0 {
			t.Errorf("an abandoned message was charged: %d in %d rows", total, n)
		}
		if n, err := e.svc.Reconcile(bg, 0); err != nil || n != 0 {
			t.Errorf("second reconcile = %d %v, want 0", n, err)
		}
		// Abandoned keeps the key: the carrier may have the message (a crash
		// during the carrier call looks just like this), so a retry is told
		// so, and never sends a second one.
		replay, idem, err = e.svc.BeginIdempotent(bg, e.p, "k1", []byte("body"))
		if err != nil || idem != nil || replay == nil || replay.Err == nil || replay.Err.Code != domain.Conflict ||
			!strings.Contains(replay.Err.Message, "interrupted") {
			t.Errorf("retry after reconcile: %+v %v %v, want the stored conflict that says the first request was interrupted", replay, idem, err)
		}
		// A receipt arriving now proves the carrier took it: charged, and the
		// key answers with the first request's result.
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: m.ID, Status: "delivered"}))
		replay, idem, err = e.svc.BeginIdempotent(bg, e.p, "k1", []byte("body"))
		if err != nil || idem != nil || replay == nil || replay.Err != nil || replay.Outcome != domain.SendCreated ||
			replay.Result.Messages[0].ID != m.ID || replay.Result.Messages[0].Status != domain.StatusSent || replay.Result.Billing.TotalPrice != 7900 {
			t.Errorf("retry after the late receipt: %+v %v %v, want message %d's result", replay, idem, err, m.ID)
		}
		if total, n := e.ledger(t); total != 7900 || n != 1 {
			t.Errorf("after the late receipt: %d in %d rows, want one charge of 7900", total, n)
		}
		if e.car.calls() != 0 {
			t.Errorf("carrier called %d times", e.car.calls())
		}
		// A reconcile with a long age leaves a fresh pending message alone.
		e.failAt("after-intent")
		e.svc.Send(bg, e.p, e.request(), nil)
		if n, err := e.svc.Reconcile(bg, time.Hour); err != nil || n != 0 {
			t.Errorf("reconcile(1h) = %d %v, want 0", n, err)
		}
	})
}

func TestFaultAfterCarrierThenReceipt(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		errFault := e.failAt("after-carrier")
		if _, _, err := e.svc.Send(bg, e.p, e.request(), nil); !errors.Is(err, errFault) {
			t.Fatalf("send err = %v, want the injected error", err)
		}
		m := e.only(t)
		if m.Status != domain.StatusPending || e.car.calls() != 1 {
			t.Fatalf("after the fault: %+v, carrier calls %d", m, e.car.calls())
		}
		if total, n := e.ledger(t); total != 0 || n != 0 {
			t.Errorf("charged before any evidence: %d in %d rows", total, n)
		}
		// The receipt proves acceptance: sent, charged once.
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: m.ID, Status: "delivered"}))
		got := e.message(t, m.ID)
		if got.Status != domain.StatusSent || got.DeliveryStatus != "delivered" || got.DeliveryAt == nil {
			t.Errorf("after receipt: %+v", got)
		}
		if total, n := e.ledger(t); total != 7900 || n != 1 {
			t.Errorf("ledger = %d in %d rows, want 7900 once", total, n)
		}
		// A second receipt does not charge again.
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: m.ID, Status: "delivered"}))
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: m.ID, Status: "undelivered", Error: "late"}))
		if total, n := e.ledger(t); total != 7900 || n != 1 {
			t.Errorf("ledger after more receipts = %d in %d rows, want 7900 once", total, n)
		}
		if n := e.events(t, "message.sent", m.ID); n != 1 {
			t.Errorf("%d message.sent events, want 1", n)
		}
		// The reconciler leaves it alone.
		if n, err := e.svc.Reconcile(bg, 0); err != nil || n != 0 {
			t.Errorf("reconcile = %d %v", n, err)
		}
	})
}

func TestReceiptAfterAbandonedChargesOnce(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		e.failAt("after-carrier")
		e.svc.Send(bg, e.p, e.request(), nil)
		m := e.only(t)
		if n, err := e.svc.Reconcile(bg, 0); err != nil || n != 1 {
			t.Fatalf("reconcile = %d %v", n, err)
		}
		if got := e.message(t, m.ID); got.Status != domain.StatusAbandoned {
			t.Fatalf("status %s, want abandoned", got.Status)
		}
		if _, n := e.ledger(t); n != 0 {
			t.Fatalf("abandoned was charged")
		}
		for range 3 {
			check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: m.ID, Status: "delivered", At: time.Now()}))
		}
		if got := e.message(t, m.ID); got.Status != domain.StatusSent || got.DeliveryStatus != "delivered" {
			t.Errorf("after late receipt: %+v", got)
		}
		if total, n := e.ledger(t); total != 7900 || n != 1 {
			t.Errorf("ledger = %d in %d rows, want 7900 once", total, n)
		}
	})
}

func TestMarkSentIdempotent(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		res, _, err := e.svc.Send(bg, e.p, e.request(), nil)
		check(t, err)
		id := res.Messages[0].ID
		for range 3 {
			check(t, e.st.MarkSent(bg, id, "again", sentEvent(t, id)))
		}
		if total, n := e.ledger(t); total != 7900 || n != 1 {
			t.Errorf("ledger = %d in %d rows, want 7900 once", total, n)
		}
		if n := e.events(t, "message.sent", id); n != 1 {
			t.Errorf("%d message.sent events, want 1", n)
		}
		// Directly on an intent, concurrently.
		out := &store.Outbound{AccountID: e.p.AccountID, LineID: e.line.ID, From: testLine, To: []string{testTo}, Participants: testTo,
			Body: "x", Type: domain.BillingSMS, Units: 1, UnitPrice: 7900, Price: 7900}
		id2, err := e.st.CreateOutbound(bg, out)
		check(t, err)
		sent2 := sentEvent(t, id2)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if err := e.st.MarkSent(bg, id2, "r", sent2); err != nil {
					t.Errorf("mark sent: %v", err)
				}
			})
		}
		wg.Wait()
		if total, n := e.ledger(t); total != 2*7900 || n != 2 {
			t.Errorf("ledger = %d in %d rows, want two charges", total, n)
		}
	})
}

func TestRefusedNeverCharged(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		e.car.err = fmt.Errorf("%w: refused", carrier.ErrUnavailable)
		_, outcome, err := e.svc.Send(bg, e.p, e.request(), nil)
		if domain.ErrorCode(err) != domain.Unavailable || outcome != "" {
			t.Fatalf("send = %q %v, want unavailable", outcome, err)
		}
		m := e.only(t)
		if m.Status != domain.StatusFailed {
			t.Fatalf("status %s, want failed", m.Status)
		}
		// A receipt for it turns up anyway: never charged, never sent.
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: m.ID, Status: "delivered"}))
		check(t, e.st.MarkSent(bg, m.ID, "late", sentEvent(t, m.ID)))
		if got := e.message(t, m.ID); got.Status != domain.StatusFailed {
			t.Errorf("status %s, want failed", got.Status)
		}
		if total, n := e.ledger(t); total != 0 || n != 0 {
			t.Errorf("a refused message was charged: %d in %d rows", total, n)
		}
		if n := e.events(t, "message.sent", m.ID); n != 0 {
			t.Errorf("message.sent for a refused message")
		}
		// The reconciler does not touch it either.
		if n, err := e.svc.Reconcile(bg, 0); err != nil || n != 0 {
			t.Errorf("reconcile = %d %v", n, err)
		}
	})
}

func TestIntermediateReceiptDoesNotOverwriteFinal(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		send := func() int64 {
			res, _, err := e.svc.Send(bg, e.p, e.request(), nil)
			check(t, err)
			return res.Messages[0].ID
		}
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

		id := send()
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: id, Status: "delivered", At: at}))
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: id, Status: "smsc_submit", At: at.Add(time.Second)}))
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: id, Status: "buffered", At: at.Add(2 * time.Second)}))
		if m := e.message(t, id); m.DeliveryStatus != "delivered" || m.DeliveryAt == nil || !m.DeliveryAt.Equal(at) {
			t.Errorf("final overwritten: %q at %v", m.DeliveryStatus, m.DeliveryAt)
		}
		if n := e.events(t, "message.delivery", id); n != 1 {
			t.Errorf("%d delivery events, want 1 (intermediate after final is dropped)", n)
		}

		// Intermediate then final: the final wins.
		id = send()
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: id, Status: "smsc_submit", At: at}))
		if m := e.message(t, id); m.DeliveryStatus != "smsc_submit" {
			t.Errorf("intermediate not recorded: %q", m.DeliveryStatus)
		}
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: id, Status: "undelivered", Error: "no route", At: at.Add(time.Second)}))
		if m := e.message(t, id); m.DeliveryStatus != "undelivered" || m.DeliveryError != "no route" {
			t.Errorf("final after intermediate: %q %q", m.DeliveryStatus, m.DeliveryError)
		}
		if total, n := e.ledger(t); total != 2*7900 || n != 2 {
			t.Errorf("receipts changed charges: %d in %d rows", total, n)
		}

		// The same report twice: one event, so a webhook is not sent twice.
		id = send()
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: id, Status: "delivered", At: at}))
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: id, Status: "delivered", At: at.Add(time.Second)}))
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: id, Status: "smsc_intermediate", At: at.Add(2 * time.Second)}))
		if m := e.message(t, id); m.DeliveryStatus != "delivered" || !m.DeliveryAt.Equal(at) {
			t.Errorf("after a repeat and an intermediate notification: %q at %v", m.DeliveryStatus, m.DeliveryAt)
		}
		if n := e.events(t, "message.delivery", id); n != 1 {
			t.Errorf("%d delivery events for one report sent twice, want 1", n)
		}

		// A refused (failed) message keeps the report for the operator, under
		// the same rule, and gets no event: the client was told it was not sent.
		e.car.err = fmt.Errorf("%w: refused", carrier.ErrUnavailable)
		_, _, err := e.svc.Send(bg, e.p, e.request(), nil)
		e.car.err = nil
		if domain.ErrorCode(err) != domain.Unavailable {
			t.Fatalf("refused send: %v", err)
		}
		failed := e.messages(t)[len(e.messages(t))-1]
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: failed.ID, Status: "undelivered", Error: "rejected", At: at}))
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: failed.ID, Status: "smsc_submit", At: at.Add(time.Second)}))
		if m := e.message(t, failed.ID); m.Status != domain.StatusFailed || m.DeliveryStatus != "undelivered" || m.DeliveryError != "rejected" {
			t.Errorf("failed message after a final then a progress report: %s %q %q", m.Status, m.DeliveryStatus, m.DeliveryError)
		}
		if n := e.events(t, "message.delivery", failed.ID); n != 0 {
			t.Errorf("%d delivery events for a message reported unsent, want 0", n)
		}

		// A receipt for an unknown message is dropped without error (else the carrier retries forever).
		if err := e.svc.Receipt(bg, carrier.Receipt{MessageID: 999999, Status: "delivered"}); err != nil {
			t.Errorf("unknown message: %v", err)
		}
	})
}

// The send outlives its caller: once the intent is written, a cancelled
// request context does not stop the carrier call or the charge.
func TestSendOutlivesCancelledRequest(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		ctx, cancel := context.WithCancel(bg)
		defer cancel()
		e.svc.faultHook = func(step string) error {
			if step == "after-intent" {
				cancel()
			}
			return nil
		}
		_, outcome, err := e.svc.Send(ctx, e.p, e.request(), nil)
		if err != nil || outcome != domain.SendCreated {
			t.Fatalf("send = %q %v, want created", outcome, err)
		}
		if e.car.calls() != 1 || !e.car.ctxOK[0] {
			t.Errorf("carrier calls %d, live context %v", e.car.calls(), e.car.ctxOK)
		}
		if m := e.only(t); m.Status != domain.StatusSent {
			t.Errorf("status %s, want sent", m.Status)
		}
		if total, n := e.ledger(t); total != 7900 || n != 1 {
			t.Errorf("ledger = %d in %d rows", total, n)
		}
	})
}

// A receipt can beat the carrier's answer (the sim with no delay, or a fast
// Kannel DLR): the message is charged once, and the carrier's reference is
// still recorded on it.
func TestReceiptBeforeAnswer(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		e.car.during = func(m carrier.Message) {
			if err := e.svc.Receipt(bg, carrier.Receipt{MessageID: m.ID, Status: "delivered"}); err != nil {
				t.Errorf("receipt: %v", err)
			}
		}
		res, outcome, err := e.svc.Send(bg, e.p, e.request(), nil)
		if err != nil || outcome != domain.SendCreated {
			t.Fatalf("send = %q %v", outcome, err)
		}
		m := e.message(t, res.Messages[0].ID)
		if m.Status != domain.StatusSent || m.DeliveryStatus != "delivered" {
			t.Errorf("message = %+v", m)
		}
		if total, n := e.ledger(t); total != 7900 || n != 1 {
			t.Errorf("ledger = %d in %d rows, want 7900 once", total, n)
		}
		if m.CarrierRef != "stub-1" {
			t.Errorf("carrier_ref = %q, want %q: the carrier's reference is lost when the receipt is applied first", m.CarrierRef, "stub-1")
		}
	})
}

// TestReceiptBeforeFailedAnswer: the carrier delivers a receipt and then its
// answer fails (a lost reply, a timeout). The receipt proved acceptance and
// charged the message, so the client must be told it was sent: a 503 would
// say nothing was sent or charged, and its retry would send a second one.
func TestReceiptBeforeFailedAnswer(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		e.car.err = fmt.Errorf("%w: reply lost", carrier.ErrUnavailable)
		e.car.during = func(m carrier.Message) {
			if err := e.svc.Receipt(bg, carrier.Receipt{MessageID: m.ID, Status: "delivered"}); err != nil {
				t.Errorf("receipt: %v", err)
			}
		}
		res, outcome, err := e.svc.Send(bg, e.p, e.request(), nil)
		if err != nil || outcome != domain.SendCreated || len(res.Messages) != 1 || res.Messages[0].Status != domain.StatusSent {
			t.Fatalf("send = %q %+v %v, want created, sent", outcome, res, err)
		}
		m := e.message(t, res.Messages[0].ID)
		if m.Status != domain.StatusSent || m.DeliveryStatus != "delivered" {
			t.Errorf("message = %+v", m)
		}
		if total, n := e.ledger(t); total != 7900 || n != 1 {
			t.Errorf("ledger = %d in %d rows, want 7900 once", total, n)
		}
	})
}

// An interrupted HTTP request (http.ErrAbortHandler) after the intent leaves
// the same state as an error from the hook.
func TestFaultPanicAfterIntent(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		e.svc.faultHook = func(step string) error {
			if step == "after-intent" {
				panic(http.ErrAbortHandler)
			}
			return nil
		}
		func() {
			defer func() {
				if p := recover(); p != http.ErrAbortHandler {
					t.Errorf("recovered %v", p)
				}
			}()
			e.svc.Send(bg, e.p, e.request(), nil)
		}()
		m := e.only(t)
		if m.Status != domain.StatusPending || e.car.calls() != 0 {
			t.Errorf("after the abort: %+v, carrier calls %d", m, e.car.calls())
		}
		if n, err := e.svc.Reconcile(bg, 0); err != nil || n != 1 {
			t.Errorf("reconcile = %d %v", n, err)
		}
		if total, n := e.ledger(t); total != 0 || n != 0 {
			t.Errorf("charged: %d in %d rows", total, n)
		}
	})
}

// Role gating for OAuth principals: from must be a line the person may use.
func TestSendFromLineRole(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		u1 := storetest.User(t, e.st, e.p.AccountID, nil)
		u2 := storetest.User(t, e.st, e.p.AccountID, nil)
		own := storetest.Line(t, e.st, e.p.AccountID, &storetest.LineOpts{UserIDs: []int64{u1.ID}})
		for _, tc := range []struct {
			name string
			p    auth.Principal
			from string
			want domain.Code
		}{
			{"assigned: own line", auth.Principal{AccountID: e.p.AccountID, UserID: u1.ID, Permissions: domain.Permissions{Numbers: domain.NumbersAssigned}}, own.Number, ""},
			{"assigned: unassigned line", auth.Principal{AccountID: e.p.AccountID, UserID: u2.ID, Permissions: domain.Permissions{Numbers: domain.NumbersAssigned}}, testLine, ""},
			{"assigned: someone else's line", auth.Principal{AccountID: e.p.AccountID, UserID: u2.ID, Permissions: domain.Permissions{Numbers: domain.NumbersAssigned}}, own.Number, domain.PermissionDenied},
			{"all numbers", auth.Principal{AccountID: e.p.AccountID, UserID: u2.ID, Permissions: domain.Permissions{Numbers: domain.NumbersAll}}, own.Number, ""},
			{"no numbers permission", auth.Principal{AccountID: e.p.AccountID, UserID: u2.ID}, testLine, domain.PermissionDenied},
		} {
			req := e.request()
			req.From = tc.from
			res, _, err := e.svc.Send(bg, tc.p, req, nil)
			if tc.want == "" {
				if err != nil {
					t.Errorf("%s: %v", tc.name, err)
				} else if m := e.message(t, res.Messages[0].ID); m.SentBy != tc.p.UserID {
					t.Errorf("%s: sent_by %d, want %d", tc.name, m.SentBy, tc.p.UserID)
				}
			} else if domain.ErrorCode(err) != tc.want {
				t.Errorf("%s: err %v, want %s", tc.name, err, tc.want)
			}
		}
	})
}

// Receipts for one message may arrive concurrently (Kannel reports out of
// order, on parallel callbacks): an intermediate word must never end up
// over a final one, whatever the interleaving.
func TestConcurrentReceiptsKeepFinal(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		const rounds = 30
		bad := 0
		for range rounds {
			res, _, err := e.svc.Send(bg, e.p, e.request(), nil)
			check(t, err)
			id := res.Messages[0].ID
			var wg sync.WaitGroup
			start := make(chan struct{})
			for _, st := range []string{"delivered", "smsc_submit", "buffered"} {
				wg.Go(func() {
					<-start
					if err := e.svc.Receipt(bg, carrier.Receipt{MessageID: id, Status: st}); err != nil {
						t.Errorf("receipt: %v", err)
					}
				})
			}
			close(start)
			wg.Wait()
			if m := e.message(t, id); m.DeliveryStatus != "delivered" {
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("%d of %d messages ended with an intermediate delivery status over \"delivered\"", bad, rounds)
		}
	})
}

// TestOvertakenIdempotencyClaimSendsNothing: a request that stalls past its
// key's lease (a slow upload, say) is overtaken by its client's retry; when
// it finally writes its intent, it must find out and send nothing, so the
// key stands for one send and one charge.
func TestOvertakenIdempotencyClaimSendsNothing(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		_, first, err := e.svc.BeginIdempotent(bg, e.p, "slow", []byte("body"))
		if err != nil || first == nil {
			t.Fatalf("first claim: %v %v", first, err)
		}
		later := time.Now().Add(3 * time.Minute)
		e.st.SetClock(func() time.Time { return later })
		_, second, err := e.svc.BeginIdempotent(bg, e.p, "slow", []byte("body"))
		if err != nil || second == nil {
			t.Fatalf("retry after the lease: %v %v, want to take the key over", second, err)
		}

		if _, _, err := e.svc.Send(bg, e.p, e.request(), first); domain.ErrorCode(err) != domain.Conflict {
			t.Errorf("overtaken request: %v, want conflict", err)
		}
		if e.car.calls() != 0 || len(e.messages(t)) != 0 {
			t.Fatalf("the overtaken request sent: %d carrier calls, %d messages", e.car.calls(), len(e.messages(t)))
		}
		res, outcome, err := e.svc.Send(bg, e.p, e.request(), second)
		if err != nil || outcome != domain.SendCreated {
			t.Fatalf("the retry: %q %v", outcome, err)
		}
		// The overtaken request's finish changes nothing; the retry's stands.
		e.svc.FinishIdempotent(bg, first, domain.Errorf(domain.Conflict, "overtaken"))
		replay, claim, err := e.svc.BeginIdempotent(bg, e.p, "slow", []byte("body"))
		if err != nil || claim != nil || replay == nil || replay.Err != nil || replay.Outcome != domain.SendCreated ||
			len(replay.Result.Messages) != 1 || replay.Result.Messages[0].ID != res.Messages[0].ID {
			t.Errorf("replay: %+v %v %v, want the retry's result (message %d)", replay, claim, err, res.Messages[0].ID)
		}
		if total, n := e.ledger(t); n != 1 || total != 7900 {
			t.Errorf("ledger: %d in %d rows, want one charge of 7900", total, n)
		}
	})
}

// TestReconcilerLeavesSendsInFlight: a reconciler run while this process is
// still waiting for the carrier (a slow carrier, or a short
// --reconcile-after) must not abandon the message being sent.
func TestReconcilerLeavesSendsInFlight(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		var abandoned int
		e.car.during = func(carrier.Message) {
			n, err := e.svc.Reconcile(bg, 0)
			check(t, err)
			abandoned = n
		}
		_, outcome, err := e.svc.Send(bg, e.p, e.request(), nil)
		if err != nil || outcome != domain.SendCreated {
			t.Fatalf("send: %q %v", outcome, err)
		}
		if abandoned != 0 {
			t.Errorf("the reconciler abandoned %d message(s) still being sent", abandoned)
		}
		if m := e.only(t); m.Status != domain.StatusSent {
			t.Errorf("message %s, want sent", m.Status)
		}
		if total, n := e.ledger(t); total != 7900 || n != 1 {
			t.Errorf("ledger: %d in %d rows, want one charge of 7900", total, n)
		}
	})
}

// TestReconcilerService runs the reconciler as the server does, as a
// background service, and checks that its first pass resolves a send
// interrupted after the intent was written.
func TestReconcilerService(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		errFault := e.failAt("after-intent")
		if _, _, err := e.svc.Send(bg, e.p, e.request(), nil); !errors.Is(err, errFault) {
			t.Fatalf("send err = %v, want the injected error", err)
		}
		m := e.only(t)
		r := e.svc.Reconciler(ReconcilerConfig{After: time.Nanosecond, Interval: time.Hour})
		r.TestSignals.Init()
		if err := r.Start(bg); err != nil {
			t.Fatal(err)
		}
		defer r.Stop()
		if err := r.TestSignals.Pass.WaitOrTimeout(t); err != nil {
			t.Fatalf("reconcile pass: %v", err)
		}
		if got := e.message(t, m.ID); got.Status != domain.StatusAbandoned {
			t.Fatalf("after the pass: %s, want abandoned", got.Status)
		}
		if total, n := e.ledger(t); total != 0 || n != 0 {
			t.Errorf("charged %d in %d rows", total, n)
		}
	})
}

func TestBackgroundDefaults(t *testing.T) {
	svc := New(Config{})
	for _, tc := range []struct {
		cfg  ReconcilerConfig
		want time.Duration
	}{
		{ReconcilerConfig{}, 31 * time.Second}, // DefaultReconcileAfter/4 + 1s
		{ReconcilerConfig{After: 20 * time.Second}, 6 * time.Second},
		{ReconcilerConfig{After: time.Hour}, time.Minute},
		{ReconcilerConfig{After: time.Hour, Interval: time.Second}, time.Second},
	} {
		if got := svc.Reconciler(tc.cfg).Interval(); got != tc.want {
			t.Errorf("Reconciler(%+v) interval = %v, want %v", tc.cfg, got, tc.want)
		}
	}
	if got := svc.IdempotencyPruner().Interval(); got != IdempotencyPruneInterval {
		t.Errorf("idempotency pruning interval = %v, want %v", got, IdempotencyPruneInterval)
	}
}
