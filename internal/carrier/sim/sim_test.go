package sim

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/apitest"
	"switchboard/internal/carrier"
)

// wait bounds every wait on a channel; nothing in these tests should take
// more than a small fraction of it.
const wait = 5 * time.Second

// fakeSink reports every call on a channel. Receipt fails while failures > 0
// (decrementing it), or always when failAlways is set; block makes Receipt
// wait until its context ends.
type fakeSink struct {
	receipts   chan carrier.Receipt // successful receipts
	attempts   chan carrier.Receipt // every Receipt call
	inbound    chan carrier.Inbound
	failures   atomic.Int32
	failAlways atomic.Bool
	block      atomic.Bool
	inboundErr error
}

func newFakeSink() *fakeSink {
	return &fakeSink{
		receipts: make(chan carrier.Receipt, 20000),
		attempts: make(chan carrier.Receipt, 20000),
		inbound:  make(chan carrier.Inbound, 100),
	}
}

func (f *fakeSink) Receipt(ctx context.Context, r carrier.Receipt) error {
	f.attempts <- r
	if f.block.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	if f.failAlways.Load() || f.failures.Add(-1) >= 0 {
		return errors.New("fake sink: storage unavailable")
	}
	f.receipts <- r
	return nil
}

func (f *fakeSink) Inbound(ctx context.Context, in carrier.Inbound) error {
	if f.inboundErr != nil {
		return f.inboundErr
	}
	f.inbound <- in
	return nil
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		var zero T
		t.Fatalf("timed out waiting for %s", what)
		return zero
	}
}

// checkGoroutines fails t if the goroutine count does not return to base.
func checkGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines: %d, want at most %d\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(time.Millisecond)
	}
}

func newSim(t *testing.T, cfg Config) (*Sim, *fakeSink) {
	t.Helper()
	s := New(cfg)
	s.retryBase = time.Millisecond
	sink := newFakeSink()
	s.Attach(sink)
	t.Cleanup(func() { s.Close() })
	return s, sink
}

func msg(id int64, to ...string) carrier.Message {
	return carrier.Message{ID: id, From: "15550000000", To: to, Text: "hello"}
}

func TestSendAcceptedGetsReceipt(t *testing.T) {
	s, sink := newSim(t, Config{ReceiptDelay: 10 * time.Millisecond})
	before := time.Now()
	for i, want := range []string{"sim-1", "sim-2"} {
		acc, err := s.Send(context.Background(), msg(int64(100+i), "15551230000"))
		if err != nil {
			t.Fatalf("Send: %v", err)
		}
		if acc.Ref != want {
			t.Errorf("Ref = %q, want %q", acc.Ref, want)
		}
	}
	got := map[int64]carrier.Receipt{}
	for range 2 {
		r := recv(t, sink.receipts, "receipt")
		got[r.MessageID] = r
	}
	for _, id := range []int64{100, 101} {
		r, ok := got[id]
		if !ok {
			t.Fatalf("no receipt for message %d; got %v", id, got)
		}
		if r.Status != "delivered" || r.Error != "" {
			t.Errorf("receipt %d = %q/%q, want delivered with no error", id, r.Status, r.Error)
		}
		if r.At.Before(before.Add(10 * time.Millisecond)) {
			t.Errorf("receipt %d At = %v, before the receipt delay ended", id, r.At)
		}
	}
	if n := s.Count(); n != 2 {
		t.Errorf("Count = %d, want 2", n)
	}
	sent := s.Sent()
	if len(sent) != 2 || sent[0].ID != 100 || sent[1].ID != 101 {
		t.Errorf("Sent = %+v, want messages 100 and 101", sent)
	}
	apitest.Eventually(t, "no pending receipts", func() bool { return s.Pending() == 0 })
}

func TestReceiptDelayIsHonoured(t *testing.T) {
	s, sink := newSim(t, Config{ReceiptDelay: 50 * time.Millisecond})
	start := time.Now()
	if _, err := s.Send(context.Background(), msg(1, "15551230000")); err != nil {
		t.Fatal(err)
	}
	recv(t, sink.receipts, "receipt")
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Errorf("receipt after %v, want at least 50ms", el)
	}
}

func TestZeroDelayReceiptIsAsynchronous(t *testing.T) {
	s, sink := newSim(t, Config{})
	sink.block.Store(true) // a sink that never returns on its own
	if _, err := s.Send(context.Background(), msg(7, "15551230000")); err != nil {
		t.Fatal(err) // reaching here at all shows Send did not wait for the sink
	}
	r := recv(t, sink.attempts, "receipt attempt")
	if r.MessageID != 7 {
		t.Errorf("MessageID = %d, want 7", r.MessageID)
	}
}

func TestFailPrefixes(t *testing.T) {
	s, sink := newSim(t, Config{})
	s.FailDestinations("1999", "1888")

	if _, err := s.Send(context.Background(), msg(1, "15551230000")); err != nil {
		t.Fatalf("non-matching destination refused: %v", err)
	}
	for _, to := range [][]string{{"19995550000"}, {"15551230000", "18885550000"}} {
		_, err := s.Send(context.Background(), msg(2, to...))
		if !errors.Is(err, carrier.ErrUnavailable) {
			t.Fatalf("Send to %v: err = %v, want ErrUnavailable", to, err)
		}
		if bad := to[len(to)-1]; !strings.Contains(err.Error(), bad) {
			t.Errorf("error %q does not name %s", err, bad)
		}
	}
	if n := s.Count(); n != 1 {
		t.Errorf("Count = %d, want 1 (refused messages are not accepted)", n)
	}

	s.FailDestinations() // clears
	if _, err := s.Send(context.Background(), msg(3, "19995550000")); err != nil {
		t.Fatalf("after clearing fail prefixes: %v", err)
	}
	// Only the accepted messages get receipts.
	ids := []int64{recv(t, sink.receipts, "receipt").MessageID, recv(t, sink.receipts, "receipt").MessageID}
	slices.Sort(ids)
	if !slices.Equal(ids, []int64{1, 3}) {
		t.Errorf("receipts for %v, want [1 3]", ids)
	}
	apitest.Eventually(t, "no pending receipts", func() bool { return s.Pending() == 0 })
	if len(sink.attempts) != 2 {
		t.Errorf("%d receipt attempts, want 2", len(sink.attempts))
	}
}

func TestFailDestinationsReplacesSet(t *testing.T) {
	s, _ := newSim(t, Config{})
	s.FailDestinations("1999")
	s.FailDestinations("1888")
	if _, err := s.Send(context.Background(), msg(1, "19995550000")); err != nil {
		t.Errorf("old prefix still refused: %v", err)
	}
	if _, err := s.Send(context.Background(), msg(2, "18885550000")); !errors.Is(err, carrier.ErrUnavailable) {
		t.Errorf("new prefix: err = %v, want ErrUnavailable", err)
	}
}

func TestDownRefusesEverything(t *testing.T) {
	s, _ := newSim(t, Config{})
	s.SetDown(true)
	for i, to := range []string{"15551230000", "447700900000", "1"} {
		if _, err := s.Send(context.Background(), msg(int64(i), to)); !errors.Is(err, carrier.ErrUnavailable) {
			t.Errorf("down, Send to %s: err = %v, want ErrUnavailable", to, err)
		}
	}
	s.SetDown(false)
	if _, err := s.Send(context.Background(), msg(9, "15551230000")); err != nil {
		t.Errorf("back up: %v", err)
	}
	if n := s.Count(); n != 1 {
		t.Errorf("Count = %d, want 1", n)
	}
}

func TestNoDestinationRefused(t *testing.T) {
	s, _ := newSim(t, Config{})
	if _, err := s.Send(context.Background(), msg(1)); !errors.Is(err, carrier.ErrUnavailable) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
}

func TestLatency(t *testing.T) {
	s, _ := newSim(t, Config{Latency: 30 * time.Millisecond})
	start := time.Now()
	if _, err := s.Send(context.Background(), msg(1, "15551230000")); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 30*time.Millisecond {
		t.Errorf("Send took %v, want at least the 30ms latency", el)
	}
}

func TestLatencyRespectsContext(t *testing.T) {
	s, _ := newSim(t, Config{})
	s.SetLatency(time.Hour)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := s.Send(ctx, msg(1, "15551230000"))
		errc <- err
	}()
	err := recv(t, errc, "Send to give up when the context ends")
	if !errors.Is(err, carrier.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want ErrUnavailable and DeadlineExceeded", err)
	}

	// An already cancelled context is refused even with no latency.
	s.SetLatency(0)
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := s.Send(ctx, msg(2, "15551230000")); !errors.Is(err, carrier.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v, want ErrUnavailable and Canceled", err)
	}
	if n := s.Count(); n != 0 {
		t.Errorf("Count = %d, want 0", n)
	}
}

func TestUndeliverable(t *testing.T) {
	s, sink := newSim(t, Config{})
	s.UndeliverableDestinations("1555")
	if _, err := s.Send(context.Background(), msg(1, "12125550000", "15551230000")); err != nil {
		t.Fatalf("undeliverable must still be accepted: %v", err)
	}
	r := recv(t, sink.receipts, "receipt")
	if r.MessageID != 1 || r.Status != "undelivered" || r.Error != "simulated handset unreachable" {
		t.Errorf("receipt = %+v, want undelivered / simulated handset unreachable", r)
	}
	s.UndeliverableDestinations()
	if _, err := s.Send(context.Background(), msg(2, "15551230000")); err != nil {
		t.Fatal(err)
	}
	if r := recv(t, sink.receipts, "receipt"); r.Status != "delivered" || r.Error != "" {
		t.Errorf("after clearing: receipt = %+v, want delivered", r)
	}
}

func TestSinkFailureIsRetried(t *testing.T) {
	s, sink := newSim(t, Config{})
	sink.failures.Store(2)
	if _, err := s.Send(context.Background(), msg(5, "15551230000")); err != nil {
		t.Fatal(err)
	}
	r := recv(t, sink.receipts, "receipt after retries")
	if r.MessageID != 5 || r.Status != "delivered" {
		t.Errorf("receipt = %+v", r)
	}
	if n := len(sink.attempts); n != 3 {
		t.Errorf("%d attempts, want 3 (two failures, one success)", n)
	}
}

func TestRetryBackoff(t *testing.T) {
	s, sink := newSim(t, Config{})
	s.retryBase = 20 * time.Millisecond
	sink.failures.Store(2)
	start := time.Now()
	if _, err := s.Send(context.Background(), msg(5, "15551230000")); err != nil {
		t.Fatal(err)
	}
	recv(t, sink.receipts, "receipt after retries")
	// 20ms then 40ms of backoff before the third try.
	if el := time.Since(start); el < 60*time.Millisecond {
		t.Errorf("delivered after %v, want at least 60ms of backoff", el)
	}
}

func TestSinkFailureGivesUpAfterFiveTries(t *testing.T) {
	s, sink := newSim(t, Config{})
	sink.failAlways.Store(true)
	if _, err := s.Send(context.Background(), msg(5, "15551230000")); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if r := recv(t, sink.attempts, fmt.Sprintf("attempt %d", i+1)); r.MessageID != 5 {
			t.Fatalf("attempt for message %d", r.MessageID)
		}
	}
	apitest.Eventually(t, "the receipt to be dropped", func() bool { return s.Pending() == 0 })
	if n := len(sink.attempts); n != 0 {
		t.Errorf("%d attempts beyond 5", n)
	}
	if n := len(sink.receipts); n != 0 {
		t.Errorf("%d receipts stored", n)
	}
}

func TestNoSinkDropsReceipts(t *testing.T) {
	base := runtime.NumGoroutine()
	s := New(Config{})
	defer s.Close()
	if _, err := s.Send(context.Background(), msg(1, "15551230000")); err != nil {
		t.Fatal(err)
	}
	apitest.Eventually(t, "the receipt to be dropped", func() bool { return s.Pending() == 0 })
	checkGoroutines(t, base)
}

// gateSink refuses every receipt, each only once release is closed; called
// hears of each call as it starts.
type gateSink struct {
	called  chan struct{}
	release chan struct{}
}

func (g *gateSink) Receipt(ctx context.Context, r carrier.Receipt) error {
	g.called <- struct{}{}
	<-g.release
	return errors.New("gate: refused")
}

func (g *gateSink) Inbound(ctx context.Context, in carrier.Inbound) error { return nil }

// TestAttachAfterSend: a receipt goes to the sink attached when it is handed
// over, not the one attached when its message was sent. The first sink is
// in the middle of refusing it when the second is attached; the retry
// reaches the second. (Ordered by signals: no delay has to outlast a
// statement of the test.)
func TestAttachAfterSend(t *testing.T) {
	s := New(Config{})
	s.retryBase = time.Millisecond
	defer s.Close()
	first := &gateSink{called: make(chan struct{}, 10), release: make(chan struct{})}
	s.Attach(first)
	if _, err := s.Send(context.Background(), msg(1, "15551230000")); err != nil {
		t.Fatal(err)
	}
	recv(t, first.called, "the first sink's call")
	sink := newFakeSink()
	s.Attach(sink)
	close(first.release)
	if r := recv(t, sink.receipts, "receipt"); r.MessageID != 1 {
		t.Errorf("receipt = %+v", r)
	}
}

func TestInject(t *testing.T) {
	s, sink := newSim(t, Config{})
	in := carrier.Inbound{From: "15551230000", To: "15550000000", Text: "hi there"}
	if err := s.Inject(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	got := recv(t, sink.inbound, "inbound")
	if got.From != in.From || got.To != in.To || got.Text != in.Text {
		t.Errorf("inbound = %+v, want %+v", got, in)
	}
	if got.At.IsZero() {
		t.Error("At not set")
	}

	sink.inboundErr = errors.New("disk full")
	if err := s.Inject(context.Background(), in); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("sink error not returned: %v", err)
	}

	s.Attach(nil)
	if err := s.Inject(context.Background(), in); err == nil {
		t.Error("Inject with no sink: want an error")
	}
}

func TestCloseStopsPendingReceipts(t *testing.T) {
	base := runtime.NumGoroutine()
	s := New(Config{ReceiptDelay: time.Hour})
	sink := newFakeSink()
	s.Attach(sink)
	for i := range 100 {
		if _, err := s.Send(context.Background(), msg(int64(i), "15551230000")); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Pending(); n != 100 {
		t.Errorf("Pending = %d, want 100", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkGoroutines(t, base)
	if n := s.Pending(); n != 0 {
		t.Errorf("Pending after Close = %d", n)
	}
	if n := len(sink.attempts); n != 0 {
		t.Errorf("%d receipts delivered after Close", n)
	}
	if _, err := s.Send(context.Background(), msg(1, "15551230000")); !errors.Is(err, carrier.ErrUnavailable) {
		t.Errorf("Send after Close: err = %v, want ErrUnavailable", err)
	}
	if err := s.Inject(context.Background(), carrier.Inbound{From: "1", To: "2"}); err == nil {
		t.Error("Inject after Close: want an error")
	}
	s.Close() // idempotent
}

func TestCloseCancelsSinkCallsInProgress(t *testing.T) {
	base := runtime.NumGoroutine()
	s := New(Config{})
	sink := newFakeSink()
	sink.block.Store(true)
	s.Attach(sink)
	if _, err := s.Send(context.Background(), msg(1, "15551230000")); err != nil {
		t.Fatal(err)
	}
	recv(t, sink.attempts, "the sink call to start")
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	recv(t, done, "Close to return")
	checkGoroutines(t, base)
}

func TestCloseInterruptsLatency(t *testing.T) {
	s := New(Config{Latency: time.Hour})
	errc := make(chan error, 1)
	go func() {
		_, err := s.Send(context.Background(), msg(1, "15551230000"))
		errc <- err
	}()
	s.Close()
	if err := recv(t, errc, "Send to return"); !errors.Is(err, carrier.ErrUnavailable) {
		t.Errorf("err = %v, want ErrUnavailable", err)
	}
}

func TestSchedulerExitsWhenIdle(t *testing.T) {
	base := runtime.NumGoroutine()
	s := New(Config{ReceiptDelay: time.Millisecond})
	sink := newFakeSink()
	s.Attach(sink)
	for i := range 10 {
		if _, err := s.Send(context.Background(), msg(int64(i), "15551230000")); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		recv(t, sink.receipts, "receipt")
	}
	// No Close: an idle Sim holds no goroutines.
	checkGoroutines(t, base)
	if _, err := s.Send(context.Background(), msg(11, "15551230000")); err != nil {
		t.Fatal(err)
	}
	recv(t, sink.receipts, "receipt after idling")
	s.Close()
}

func TestSentIsBoundedAndCopied(t *testing.T) {
	s := New(Config{ReceiptDelay: time.Hour})
	defer s.Close()
	const n = MaxSent + 5
	for i := 1; i <= n; i++ {
		if _, err := s.Send(context.Background(), msg(int64(i), "15551230000")); err != nil {
			t.Fatal(err)
		}
	}
	if c := s.Count(); c != n {
		t.Errorf("Count = %d, want %d", c, n)
	}
	sent := s.Sent()
	if len(sent) != MaxSent {
		t.Fatalf("len(Sent) = %d, want %d", len(sent), MaxSent)
	}
	if sent[0].ID != 6 || sent[len(sent)-1].ID != n {
		t.Errorf("Sent runs from %d to %d, want 6 to %d", sent[0].ID, sent[len(sent)-1].ID, n)
	}
	for i := 1; i < len(sent); i++ {
		if sent[i].ID != sent[i-1].ID+1 {
			t.Fatalf("Sent out of order at %d: %d after %d", i, sent[i].ID, sent[i-1].ID)
		}
	}

	// Neither the caller's message nor Sent's copy aliases the record.
	m := msg(1, "15551230000")
	s.Send(context.Background(), m)
	m.To[0] = "caller changed it"
	sent = s.Sent()
	sent[len(sent)-1].To[0] = "reader changed it"
	if got := s.Sent()[MaxSent-1].To[0]; got != "15551230000" {
		t.Errorf("recorded destination = %q", got)
	}
}

func TestConcurrentUse(t *testing.T) {
	s, sink := newSim(t, Config{})
	var wg sync.WaitGroup
	var accepted atomic.Int64
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				id := int64(g*1000 + i)
				to := "1555" + fmt.Sprint(id)
				if i%3 == 0 {
					to = "1999" + fmt.Sprint(id)
				}
				if _, err := s.Send(context.Background(), msg(id, to)); err == nil {
					accepted.Add(1)
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 200 {
			s.SetDown(i%50 == 49)
			s.FailDestinations("1999")
			s.UndeliverableDestinations("15551")
			s.SetReceiptDelay(time.Duration(i%3) * time.Millisecond)
			_ = s.Configure("latency=0,down=false")
			_ = s.Spec()
			_ = s.Sent()
		}
	})
	wg.Wait()
	if got := int64(s.Count()); got != accepted.Load() {
		t.Errorf("Count = %d, accepted %d", got, accepted.Load())
	}
	for range accepted.Load() {
		recv(t, sink.receipts, "receipt")
	}
}

func BenchmarkSend(b *testing.B) {
	s := New(DefaultConfig())
	defer s.Close()
	s.Attach(newDiscardSink())
	ctx := context.Background()
	m := msg(1, "15551230000")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Send(ctx, m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkSendAndReceipt(b *testing.B) {
	s := New(Config{})
	defer s.Close()
	var got atomic.Int64
	s.Attach(countingSink{&got})
	ctx := context.Background()
	m := msg(1, "15551230000")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Send(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
	for got.Load() < int64(s.Count()) {
		runtime.Gosched()
	}
}

type countingSink struct{ n *atomic.Int64 }

func (c countingSink) Receipt(context.Context, carrier.Receipt) error { c.n.Add(1); return nil }
func (c countingSink) Inbound(context.Context, carrier.Inbound) error { return nil }

func newDiscardSink() carrier.Sink { return countingSink{new(atomic.Int64)} }

// Resume queues the receipt of a message accepted before a restart: it
// arrives like any other, follows the undeliverable setting, and is not a
// new send.
func TestResumeQueuesReceipt(t *testing.T) {
	s, sink := newSim(t, Config{})
	s.UndeliverableDestinations("1555")
	s.Resume(7, []string{"12125550000"})
	s.Resume(8, []string{"15551230000"})
	got := map[int64]carrier.Receipt{}
	for range 2 {
		r := recv(t, sink.receipts, "resumed receipt")
		got[r.MessageID] = r
	}
	if got[7].Status != StatusDelivered || got[8].Status != StatusUndelivered || got[8].Error != UndeliveredError {
		t.Errorf("resumed receipts = %+v, want 7 delivered and 8 undelivered", got)
	}
	if s.Count() != 0 || len(s.Sent()) != 0 {
		t.Errorf("Resume counted as a send: Count %d, Sent %d", s.Count(), len(s.Sent()))
	}
	s.Close()
	s.Resume(9, []string{"12125550000"}) // after Close: ignored, no panic
	if s.Pending() != 0 {
		t.Errorf("pending after Close = %d", s.Pending())
	}
}
