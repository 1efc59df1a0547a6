package webhooks

import (
	"context"
	"time"

	"switchboard/internal/domain"
)

// hookSlots bounds the attempts in flight from this process per subscription
// (DispatcherConfig.PerWebhook). The dispatcher's deliveries and test sends
// (POST /webhooks/{id}/test) take their slots from the same hookSlots, so a
// subscription never has more than PerWebhook requests open from one
// process, however many tests are asked for at once. Each process has its
// own: with several nodes the bound is per node.
//
// It is guarded by Dispatcher.mu, which also guards the queue of claimed
// deliveries, so that taking a slot or queueing a delivery is one step.
type hookSlots struct {
	max  int
	held map[int64]int
	// freed has a channel, made by a waiter, for a subscription whose slots
	// are all held; release closes it.
	freed map[int64]chan struct{}
}

func newHookSlots(max int) hookSlots {
	return hookSlots{max: max, held: map[int64]int{}, freed: map[int64]chan struct{}{}}
}

// take takes a slot of subscription h if one is free.
func (s *hookSlots) take(h int64) bool {
	if s.held[h] >= s.max {
		return false
	}
	s.held[h]++
	return true
}

// release frees a slot of subscription h and wakes whoever waits for one.
func (s *hookSlots) release(h int64) {
	if s.held[h]--; s.held[h] <= 0 {
		delete(s.held, h)
	}
	if ch, ok := s.freed[h]; ok {
		close(ch)
		delete(s.freed, h)
	}
}

// freedSignal returns a channel closed the next time a slot of h is freed.
func (s *hookSlots) freedSignal(h int64) <-chan struct{} {
	ch, ok := s.freed[h]
	if !ok {
		ch = make(chan struct{})
		s.freed[h] = ch
	}
	return ch
}

// freeSlot ends an attempt's hold on a slot of subscription h: the slot
// passes to the subscription's next queued delivery if there is one, which
// it returns for the caller to start (d.workers already counts it), and is
// freed otherwise. Queued deliveries come first: they are leased, and must
// start within their lease. Call with d.mu held.
func (d *Dispatcher) freeSlot(h int64) (queuedJob, bool) {
	if q := d.queued[h]; len(q) > 0 && !d.stopping {
		if d.queued[h] = q[1:]; len(q) == 1 {
			delete(d.queued, h)
		}
		d.workers.Add(1)
		return q[0], true
	}
	d.slots.release(h)
	return queuedJob{}, false
}

// testSlotWait bounds how long a test send waits for a slot: one attempt's
// timeout and half again, so that a subscription whose slots are held by
// attempts that run to the timeout still gets its turn.
func (d *Dispatcher) testSlotWait() time.Duration { return d.cfg.Timeout + d.cfg.Timeout/2 }

// takeTestSlot takes a slot of subscription h for a test send, waiting for
// one up to testSlotWait; past that it is 503 unavailable, before anything
// was sent or recorded. The returned func frees the slot.
func (d *Dispatcher) takeTestSlot(ctx context.Context, h int64) (func(), error) {
	wait := time.NewTimer(d.testSlotWait())
	defer wait.Stop()
	for {
		d.mu.Lock()
		if d.slots.take(h) {
			d.mu.Unlock()
			return func() { d.freeTestSlot(h) }, nil
		}
		freed := d.slots.freedSignal(h)
		d.mu.Unlock()
		select {
		case <-freed:
		case <-wait.C:
			return nil, domain.Errorf(domain.Unavailable, "webhook %d has %d requests in flight already, the most one server sends it at once; try the test again shortly", h, d.cfg.PerWebhook)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// freeTestSlot frees a test send's slot, or passes it on (freeSlot).
func (d *Dispatcher) freeTestSlot(h int64) {
	d.mu.Lock()
	next, ok := d.freeSlot(h)
	var results chan result
	if ok {
		// Set: a delivery was queued, so the dispatcher is started, and
		// Stop takes the queue (under mu) before it clears results.
		results = d.results
	}
	d.mu.Unlock()
	if ok {
		go d.run(next.ctx, next.job, results)
	}
}
