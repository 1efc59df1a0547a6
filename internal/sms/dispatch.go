package sms

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"switchboard/internal/background"
	"switchboard/internal/carrier"
	"switchboard/internal/domain"
	"switchboard/internal/money"
	"switchboard/internal/store"
)

// Dispatcher defaults.
const (
	DefaultDispatchInterval = time.Second
	DefaultDispatchBatch    = 200
	DefaultDispatchWorkers  = 64
	DefaultDispatchLease    = 30 * time.Second
	// DefaultRetryBase and DefaultRetryMax bound the wait before a message
	// the carrier refused (down) is tried again: RetryBase, doubling with
	// each attempt, at most RetryMax, for as long as it takes.
	DefaultRetryBase = 5 * time.Second
	DefaultRetryMax  = 5 * time.Minute
)

// DispatcherConfig configures the scheduled-message dispatcher. Zero (or
// negative) values take the defaults. Its clock is the service's
// (Config.Now).
type DispatcherConfig struct {
	// Interval is how often the dispatcher looks for due messages when idle:
	// a message is sent at most about this long after its send time.
	Interval time.Duration
	// Batch is how many due messages one claim takes; Workers how many are
	// sent at once.
	Batch, Workers int
	// Lease is how long a claimed message is this process's alone before
	// another may take it over: how soon the messages of a process that
	// died come back. Default DefaultDispatchLease. It need not cover a
	// send: once the intent is written, the message is never sent again.
	Lease time.Duration
	// ReconcileAfter is --reconcile-after: a schedule left sending by a
	// dispatcher that stopped mid-send waits this long for evidence that
	// the carrier took its message (see resume). Default
	// DefaultReconcileAfter.
	ReconcileAfter time.Duration
	// RetryBase and RetryMax: see DefaultRetryBase.
	RetryBase, RetryMax time.Duration
	// Owner names this process in leases; default store.NewLeaseOwner.
	Owner string
}

// Dispatch outcomes, as DispatchSignals report them.
const (
	DispatchSent    = "sent"    // the carrier took it; charged
	DispatchPending = "pending" // carrier outcome unknown: waiting for a receipt (see resume)
	DispatchSkipped = "skipped" // every recipient had opted out; nothing sent or charged
	DispatchRetry   = "retry"   // the carrier was down; queued again with backoff
	DispatchGone    = "gone"    // cancelled (or taken by another process) before it was sent
	DispatchWaiting = "waiting" // a dispatcher stopped mid-send: waiting for its message to settle
	DispatchFailed  = "failed"  // the database refused a step; the lease brings it back
	// DispatchResent: a dispatcher stopped mid-send and no evidence that
	// the carrier took the message came by --reconcile-after; the message is
	// abandoned (uncharged) and the schedule queued to be sent anew (see
	// resume).
	DispatchResent = "resent"
	// DispatchInterrupted: a test's fault hook stopped the send mid-way, as
	// a crash would.
	DispatchInterrupted = "interrupted"
)

// Dispatched is one scheduled message a dispatcher worked on.
type Dispatched struct {
	ID      int64 // the scheduled message
	Outcome string
	Err     error
}

// DispatchSignals are the test signals of a Dispatcher.
type DispatchSignals struct {
	// Dispatched fires once per claimed message, after its outcome is recorded.
	Dispatched background.Signal[Dispatched]
	// Pass fires after every pass.
	Pass background.Signal[error]
}

// Init switches every signal on; call it before Start.
func (s *DispatchSignals) Init() { s.Dispatched.Init(); s.Pass.Init() }

// Dispatcher sends scheduled messages when they are due: a background
// service that claims due rows of the scheduled_messages table
// (store.Claim), so that any number of processes on one database send each
// exactly once, and sends each through the path and money guarantee of a
// direct send.
type Dispatcher struct {
	// TestSignals lets tests wait for dispatches instead of sleeping.
	TestSignals DispatchSignals

	s   *Service
	cfg DispatcherConfig
	p   *background.Periodic
}

// ScheduledDispatcher returns the dispatcher of scheduled messages, stopped:
// a background.Service, which cmd/switchboard adds to the runner.
func (s *Service) ScheduledDispatcher(cfg DispatcherConfig) *Dispatcher {
	cfg.Interval = cmp.Or(max(cfg.Interval, 0), DefaultDispatchInterval)
	cfg.Batch = cmp.Or(max(cfg.Batch, 0), DefaultDispatchBatch)
	cfg.Workers = cmp.Or(max(cfg.Workers, 0), DefaultDispatchWorkers)
	cfg.Lease = cmp.Or(max(cfg.Lease, 0), DefaultDispatchLease)
	cfg.ReconcileAfter = cmp.Or(max(cfg.ReconcileAfter, 0), DefaultReconcileAfter)
	cfg.RetryBase = cmp.Or(max(cfg.RetryBase, 0), DefaultRetryBase)
	cfg.RetryMax = cmp.Or(max(cfg.RetryMax, 0), DefaultRetryMax)
	cfg.Owner = cmp.Or(cfg.Owner, store.NewLeaseOwner("scheduled"))
	d := &Dispatcher{s: s, cfg: cfg}
	d.p = background.NewPeriodic(background.PeriodicConfig{Name: "scheduled messages", Interval: cfg.Interval, Logger: s.log, Work: d.pass})
	return d
}

// Start begins dispatching: the first pass, at once, sends every message
// already due (overdue after downtime included); then a pass every
// Interval.
func (d *Dispatcher) Start(ctx context.Context) error { return d.p.Start(ctx) }

// Stop ends dispatching, waiting for the sends under way.
func (d *Dispatcher) Stop() { d.p.Stop() }

// Wake asks for a pass now.
func (d *Dispatcher) Wake() { d.p.Wake() }

// pass sends due messages until none is left.
func (d *Dispatcher) pass(ctx context.Context) (err error) {
	var start time.Time
	claimed := 0
	defer func() {
		if claimed > 0 {
			d.s.log.Info("scheduled messages dispatched", "count", claimed, "seconds", time.Since(start).Seconds())
		}
		d.TestSignals.Pass.Signal(err)
	}()
	for ctx.Err() == nil {
		// A cheap read first, so that an idle dispatcher never writes.
		due, err := d.s.store.HasDueScheduled(ctx)
		if err != nil || !due {
			return err
		}
		ids, err := d.s.store.Claim(ctx, store.ClaimScheduledMessages, d.cfg.Owner, d.cfg.Batch, d.cfg.Lease)
		if err != nil {
			return err
		}
		if claimed == 0 {
			start = time.Now()
		}
		claimed += len(ids)
		work := make(chan int64)
		var wg sync.WaitGroup
		for range min(d.cfg.Workers, len(ids)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for id := range work {
					d.TestSignals.Dispatched.Signal(d.dispatch(ctx, id))
				}
			}()
		}
		for _, id := range ids {
			work <- id
		}
		close(work)
		wg.Wait()
		if len(ids) < d.cfg.Batch {
			return nil
		}
	}
	return nil
}

// dispatch sends one claimed message and records the outcome.
func (d *Dispatcher) dispatch(ctx context.Context, id int64) Dispatched {
	s := d.s
	fail := func(err error) Dispatched {
		// Nothing was sent: the lease ends and the message comes back.
		s.log.Error("scheduled message not dispatched; retried when its lease ends", "scheduled_id", id, "err", err)
		return Dispatched{ID: id, Outcome: DispatchFailed, Err: err}
	}
	m, err := s.store.ScheduledMessage(ctx, id)
	if err != nil {
		return fail(err)
	}
	switch m.State {
	case domain.ScheduleQueued:
	case domain.ScheduleSending:
		return d.resume(ctx, m, fail)
	default:
		return Dispatched{ID: id, Outcome: DispatchGone}
	}

	// The STOP list as it is now: opted-out recipients are skipped, and
	// their share of the fixed price with them.
	opted, err := s.store.OptedOut(ctx, m.LineID, m.Recipients)
	if err != nil {
		return fail(err)
	}
	var to []string
	var unit []money.Micros
	for i, n := range m.Recipients {
		if !opted[n] {
			to, unit = append(to, n), append(unit, m.UnitPrices[i])
		}
	}
	if len(to) == 0 {
		ok, err := s.store.SkipScheduled(ctx, m, d.cfg.Owner)
		if err != nil {
			return fail(err)
		}
		if !ok {
			return Dispatched{ID: id, Outcome: DispatchGone}
		}
		s.log.Info("scheduled message skipped: every recipient opted out; nothing sent or charged", "scheduled_id", id)
		return Dispatched{ID: id, Outcome: DispatchSkipped}
	}
	// The type stays what was priced (a group reduced to one recipient is
	// still the mms it was scheduled as); the price is the fixed unit
	// prices of the recipients left, so never more than the price returned.
	msg, err := priceAt(to, m.Text, m.Type == domain.BillingMMS, unit)
	if err != nil {
		return fail(err)
	}
	out := &store.Outbound{
		AccountID: m.AccountID, LineID: m.LineID, From: m.Line, To: to, Participants: strings.Join(sortedCopy(to), ","),
		Body: m.Text, Media: m.Media, Type: msg.Type, Units: msg.Units,
		UnitPrice: int64(msg.UnitPrice), Price: int64(msg.Price), SentBy: m.CreatedBy,
	}
	// From the intent on, the send runs to completion even if the
	// dispatcher is stopping: its outcome must be recorded.
	ctx = context.WithoutCancel(ctx)
	msgID, ok, err := s.store.BeginScheduledSend(ctx, m, d.cfg.Owner, out)
	if err != nil {
		return fail(err)
	}
	if !ok {
		return Dispatched{ID: id, Outcome: DispatchGone}
	}
	s.inflight.Store(msgID, struct{}{})
	defer s.inflight.Delete(msgID)
	if err := s.fault("after-intent"); err != nil {
		return Dispatched{ID: id, Outcome: DispatchInterrupted, Err: err} // as a crash: see resume
	}
	outcome, err := s.deliver(ctx, out, msgID, carrier.Message{ID: msgID, From: m.Line, To: to, Text: m.Text, Media: s.MediaURLs(m.Media)})
	if err != nil {
		return Dispatched{ID: id, Outcome: DispatchInterrupted, Err: err} // a fault hook (tests): as a crash
	}
	switch outcome {
	case carrierUnknown:
		// The schedule waits for its message to settle, as after a crash
		// (see resume): a receipt ends it, no evidence sends it anew.
		next := s.now().Add(d.cfg.ReconcileAfter + time.Second)
		if err := s.store.Release(ctx, store.ClaimScheduledMessages, d.cfg.Owner, id, &next); err != nil && !errors.Is(err, store.ErrLeaseLost) {
			return fail(err)
		}
		return Dispatched{ID: id, Outcome: DispatchPending}
	case carrierRefused:
		wait := d.backoff(m.Attempts)
		requeued, err := s.store.RequeueScheduled(ctx, id, msgID, m.SendAt, s.now().Add(wait))
		if err != nil {
			// Left sending and pending: the reconciler abandons the message
			// (uncharged) and the schedule is handed off when its lease ends.
			return fail(err)
		}
		if !requeued {
			return Dispatched{ID: id, Outcome: DispatchSent} // a receipt proved the carrier took it
		}
		s.log.Warn("carrier refused a scheduled message; trying again later", "scheduled_id", id, "attempt", m.Attempts+1, "retry_in", wait)
		return Dispatched{ID: id, Outcome: DispatchRetry}
	}
	return Dispatched{ID: id, Outcome: DispatchSent}
}

// resume settles schedule m, found sending when its lease had ended: its
// dispatcher stopped (or is slow) between writing the intent and recording
// the carrier's answer. The message decides, by the rules of an interrupted
// direct send: sent (a receipt came) ends the schedule; pending waits until
// it is ReconcileAfter old, the age at which no send can still be under way,
// and is then abandoned, uncharged, if there is still no evidence the
// carrier took it. A carrier that took a message reports it (every send
// asks for receipts), so no evidence by then means it never arrived, and
// the schedule is queued again to be sent anew: nobody is waiting on an
// HTTP answer to retry it, so a schedule is never dropped for a crash.
func (d *Dispatcher) resume(ctx context.Context, m domain.ScheduledMessage, fail func(error) Dispatched) Dispatched {
	s, id := d.s, m.ID
	msg, err := s.store.Message(ctx, m.AccountID, m.MessageID)
	if err != nil {
		return fail(err)
	}
	waitUntil := func(t time.Time) Dispatched {
		if err := s.store.Release(ctx, store.ClaimScheduledMessages, d.cfg.Owner, id, &t); err != nil && !errors.Is(err, store.ErrLeaseLost) {
			return fail(err)
		}
		return Dispatched{ID: id, Outcome: DispatchWaiting}
	}
	switch msg.Status {
	case domain.StatusSent, domain.StatusFailed: // failed: a connection's queue had it, and its carrier refused it
		if err := s.store.ScheduleHandedOff(ctx, id); err != nil {
			return fail(err)
		}
		return Dispatched{ID: id, Outcome: DispatchSent}
	case domain.StatusPending:
		if _, sending := s.inflight.Load(msg.ID); sending || s.settle.settling(msg.ID) {
			return waitUntil(s.now().Add(d.cfg.Lease)) // this process is still at it
		}
		queued, err := s.store.InCarrierQueue(ctx, msg.ID)
		if err != nil {
			return fail(err)
		}
		if queued { // waiting its turn at a carrier connection, which settles it
			return waitUntil(s.now().Add(d.cfg.ReconcileAfter))
		}
		cutoff := s.now().Add(-d.cfg.ReconcileAfter)
		if msg.CreatedAt.After(cutoff) {
			return waitUntil(msg.CreatedAt.Add(d.cfg.ReconcileAfter + time.Second))
		}
		abandoned, err := s.store.Abandon(ctx, msg.ID, cutoff)
		if err != nil {
			return fail(err)
		}
		if !abandoned {
			return waitUntil(s.now()) // evidence came meanwhile: read it again
		}
	case domain.StatusAbandoned:
	default:
		return fail(fmt.Errorf("sms: scheduled message %d: its message %d is %s", id, msg.ID, msg.Status))
	}
	requeued, err := s.store.ResendScheduled(ctx, m, s.now())
	if err != nil {
		return fail(err)
	}
	if !requeued {
		return waitUntil(s.now()) // a receipt came meanwhile, or another node moved it: read it again
	}
	s.log.Warn("a scheduled message's send was interrupted with no evidence the carrier took it: its message is abandoned, uncharged (a late delivery receipt still charges it), and the schedule is sent anew",
		"scheduled_id", id, "message_id", msg.ID)
	return Dispatched{ID: id, Outcome: DispatchResent}
}

// backoff is the wait after attempt attempts+1 failed.
func (d *Dispatcher) backoff(attempts int) time.Duration {
	wait := d.cfg.RetryBase
	for range attempts {
		if wait >= d.cfg.RetryMax {
			break
		}
		wait *= 2
	}
	return min(wait, d.cfg.RetryMax)
}
