package sim

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"switchboard/internal/carrier"
)

// DefaultReceiptDelay is the receipt delay of [DefaultConfig].
const DefaultReceiptDelay = 2 * time.Second

// MaxSent is how many accepted messages [Sim.Sent] remembers.
const MaxSent = 10000

// Receipt status words and the failure detail, as a carrier would report them.
const (
	StatusDelivered    = "delivered"
	StatusUndelivered  = "undelivered"
	UndeliveredError   = "simulated handset unreachable"
	maxTries           = 5
	defaultRetryBase   = 100 * time.Millisecond
	maxConcurrentCalls = 32
	deliveryTimeout    = 30 * time.Second
)

var errClosed = errors.New("sim: closed")

// Config configures a Sim. The zero value is valid: receipts as soon as
// possible, no latency.
type Config struct {
	// ReceiptDelay is the time from acceptance to the delivery receipt;
	// 0 means immediately (but asynchronously). DefaultConfig uses 2s.
	ReceiptDelay time.Duration
	// Latency is added to every Send, to simulate a slow carrier.
	Latency time.Duration
	// Logger is told about receipts dropped after the sink failed five
	// times; nil discards.
	Logger *slog.Logger
}

// DefaultConfig is the configuration of the operator's default carrier:
// receipts after DefaultReceiptDelay, no latency.
func DefaultConfig() Config {
	return Config{ReceiptDelay: DefaultReceiptDelay}
}

// Sim is the in-process simulated carrier. It is safe for concurrent use.
type Sim struct {
	log       *slog.Logger
	retryBase time.Duration // tests shorten it

	mu            sync.Mutex
	down          bool
	fail          []string
	undeliverable []string
	latency       time.Duration
	receiptDelay  time.Duration
	sink          carrier.Sink
	count         int64
	sent          []carrier.Message // ring of at most MaxSent
	sentHead      int               // oldest entry once the ring is full
	closed        bool
	queue         receiptQueue
	seq           uint64
	running       bool // the scheduler goroutine exists
	inflight      int  // sink calls in progress

	wake   chan struct{} // nudges the scheduler when the queue changes
	done   chan struct{} // closed by Close
	ctx    context.Context
	cancel context.CancelFunc
	sem    chan struct{} // bounds concurrent sink calls
	wg     sync.WaitGroup
}

var _ carrier.Carrier = (*Sim)(nil)

// New returns a Sim configured by cfg. Negative durations count as 0.
func New(cfg Config) *Sim {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Sim{
		log:          log,
		retryBase:    defaultRetryBase,
		latency:      max(cfg.Latency, 0),
		receiptDelay: max(cfg.ReceiptDelay, 0),
		wake:         make(chan struct{}, 1),
		done:         make(chan struct{}),
		ctx:          ctx,
		cancel:       cancel,
		sem:          make(chan struct{}, maxConcurrentCalls),
	}
}

// Attach sets the sink that receives receipts and injected inbound texts,
// replacing any previous one; nil detaches.
func (s *Sim) Attach(sink carrier.Sink) {
	s.mu.Lock()
	s.sink = sink
	s.mu.Unlock()
}

func unavailable(format string, args ...any) error {
	return fmt.Errorf("%w: sim: "+format, append([]any{carrier.ErrUnavailable}, args...)...)
}

// Send simulates handing m to a carrier; see the package documentation.
func (s *Sim) Send(ctx context.Context, m carrier.Message) (carrier.Accepted, error) {
	if err := ctx.Err(); err != nil {
		return carrier.Accepted{}, unavailable("%w", err)
	}
	s.mu.Lock()
	latency := s.latency
	s.mu.Unlock()
	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return carrier.Accepted{}, unavailable("%w", ctx.Err())
		case <-s.done:
			t.Stop()
			return carrier.Accepted{}, unavailable("%w", errClosed)
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return carrier.Accepted{}, unavailable("%w", errClosed)
	case s.down:
		return carrier.Accepted{}, unavailable("carrier is down")
	case len(m.To) == 0:
		return carrier.Accepted{}, unavailable("message %d has no destination", m.ID)
	}
	if d, ok := matchAny(m.To, s.fail); ok {
		return carrier.Accepted{}, unavailable("destination %s refused", d)
	}

	s.count++
	ref := "sim-" + strconv.FormatInt(s.count, 10)
	m.To = slices.Clone(m.To)
	m.Media = slices.Clone(m.Media)
	if len(s.sent) < MaxSent {
		s.sent = append(s.sent, m)
	} else {
		s.sent[s.sentHead] = m
		s.sentHead = (s.sentHead + 1) % MaxSent
	}

	r := carrier.Receipt{MessageID: m.ID, Status: StatusDelivered}
	if _, ok := matchAny(m.To, s.undeliverable); ok {
		r.Status, r.Error = StatusUndelivered, UndeliveredError
	}
	s.pushLocked(pending{due: time.Now().Add(s.receiptDelay), receipt: r})
	return carrier.Accepted{Ref: ref}, nil
}

// Resume queues the delivery receipt of a message this carrier accepted
// before the process stopped (its queue lives in memory and died with it):
// the receipt is due after the receipt delay, counted from now, and follows
// the current undeliverable setting. It is not counted as a new send.
func (s *Sim) Resume(id int64, to []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	r := carrier.Receipt{MessageID: id, Status: StatusDelivered}
	if _, ok := matchAny(to, s.undeliverable); ok {
		r.Status, r.Error = StatusUndelivered, UndeliveredError
	}
	s.pushLocked(pending{due: time.Now().Add(s.receiptDelay), receipt: r})
}

// matchAny returns the first destination that starts with one of prefixes.
func matchAny(dests, prefixes []string) (string, bool) {
	for _, d := range dests {
		for _, p := range prefixes {
			if strings.HasPrefix(d, p) {
				return d, true
			}
		}
	}
	return "", false
}

// Inject hands an inbound text straight to the attached sink, as if someone
// had texted one of the account's lines, and returns the sink's answer. A
// zero At is set to now. It fails when no sink is attached or after Close.
func (s *Sim) Inject(ctx context.Context, in carrier.Inbound) error {
	s.mu.Lock()
	sink, closed := s.sink, s.closed
	s.mu.Unlock()
	switch {
	case closed:
		return errClosed
	case sink == nil:
		return errors.New("sim: inject: no sink attached")
	}
	if in.At.IsZero() {
		in.At = time.Now()
	}
	return sink.Inbound(ctx, in)
}

// SetDown makes every Send fail (true) or restores normal service (false).
func (s *Sim) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// FailDestinations makes Send refuse any message with a destination that
// starts with one of prefixes. It replaces the previous set; no arguments
// clear it. An empty prefix matches every destination.
func (s *Sim) FailDestinations(prefixes ...string) {
	p := slices.Clone(prefixes)
	s.mu.Lock()
	s.fail = p
	s.mu.Unlock()
}

// UndeliverableDestinations makes messages with a destination starting with
// one of prefixes accepted but reported "undelivered". It replaces the
// previous set; no arguments clear it.
func (s *Sim) UndeliverableDestinations(prefixes ...string) {
	p := slices.Clone(prefixes)
	s.mu.Lock()
	s.undeliverable = p
	s.mu.Unlock()
}

// SetLatency sets the time every Send takes; negative means 0.
func (s *Sim) SetLatency(d time.Duration) {
	s.mu.Lock()
	s.latency = max(d, 0)
	s.mu.Unlock()
}

// SetReceiptDelay sets the receipt delay for messages accepted from now on;
// negative means 0.
func (s *Sim) SetReceiptDelay(d time.Duration) {
	s.mu.Lock()
	s.receiptDelay = max(d, 0)
	s.mu.Unlock()
}

// Sent returns copies of the last MaxSent accepted messages, oldest first.
func (s *Sim) Sent() []carrier.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]carrier.Message, 0, len(s.sent))
	out = append(out, s.sent[s.sentHead:]...)
	out = append(out, s.sent[:s.sentHead]...)
	for i := range out {
		out[i].To = slices.Clone(out[i].To)
		out[i].Media = slices.Clone(out[i].Media)
	}
	return out
}

// Count returns how many messages were accepted since New, including those
// Sent no longer remembers.
func (s *Sim) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.count)
}

// Pending returns how many receipts have not been handed over yet: waiting
// for their time or a retry, or in a sink call right now.
func (s *Sim) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue) + s.inflight
}

// Close drops pending receipts, cancels the context of sink calls in
// progress and waits until they and the scheduler have returned. Send and
// Inject fail afterwards. Close is idempotent and always returns nil.
func (s *Sim) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.queue = nil
		close(s.done)
		s.cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// pending is a receipt waiting for its time.
type pending struct {
	due     time.Time
	seq     uint64 // keeps receipts due at the same time in order
	tries   int    // sink calls that failed so far
	receipt carrier.Receipt
}

type receiptQueue []pending

func (q receiptQueue) Len() int { return len(q) }
func (q receiptQueue) Less(i, j int) bool {
	if q[i].due.Equal(q[j].due) {
		return q[i].seq < q[j].seq
	}
	return q[i].due.Before(q[j].due)
}
func (q receiptQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *receiptQueue) Push(x any)   { *q = append(*q, x.(pending)) }
func (q *receiptQueue) Pop() any {
	old := *q
	n := len(old) - 1
	p := old[n]
	old[n] = pending{}
	*q = old[:n]
	return p
}

// pushLocked queues p and makes sure the scheduler runs. s.mu is held and
// s is not closed.
func (s *Sim) pushLocked(p pending) {
	s.seq++
	p.seq = s.seq
	heap.Push(&s.queue, p)
	if !s.running {
		s.running = true
		s.wg.Add(1)
		go s.schedule()
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// schedule hands due receipts to sink calls, in due order, and returns once
// the queue is empty or the Sim is closed.
func (s *Sim) schedule() {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if s.closed || len(s.queue) == 0 {
			s.running = false
			s.queue = nil // let a burst's backing array go
			s.mu.Unlock()
			return
		}
		wait := time.Until(s.queue[0].due)
		if wait > 0 {
			s.mu.Unlock()
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-s.wake:
			case <-s.done:
			}
			continue
		}
		p := heap.Pop(&s.queue).(pending)
		s.inflight++
		s.mu.Unlock()

		select {
		case s.sem <- struct{}{}:
		case <-s.done:
			s.mu.Lock()
			s.inflight--
			s.mu.Unlock()
			continue
		}
		s.wg.Add(1)
		go s.deliver(p)
	}
}

// deliver makes one sink call for p and queues a retry if it fails.
func (s *Sim) deliver(p pending) {
	defer s.wg.Done()
	defer func() { <-s.sem }()

	s.mu.Lock()
	sink := s.sink
	s.mu.Unlock()
	var err error
	if sink != nil {
		if p.receipt.At.IsZero() {
			p.receipt.At = p.due
		}
		ctx, cancel := context.WithTimeout(s.ctx, deliveryTimeout)
		err = sink.Receipt(ctx, p.receipt)
		cancel()
	}

	p.tries++
	s.mu.Lock()
	s.inflight--
	retry := err != nil && !s.closed && p.tries < maxTries
	if retry {
		p.due = time.Now().Add(s.retryBase << (p.tries - 1))
		s.pushLocked(p)
	}
	closed := s.closed
	s.mu.Unlock()
	if err != nil && !retry && !closed {
		s.log.Warn("sim: receipt dropped, sink failed",
			"message_id", p.receipt.MessageID, "status", p.receipt.Status,
			"tries", p.tries, "err", err)
	}
}
