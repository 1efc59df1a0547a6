package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/sms/smsevent"
	"switchboard/internal/store"
)

// storeWriter writes a plan through the store's methods, the ones real
// traffic uses.
type storeWriter struct {
	st      *store.Store
	p       *plan
	s       setup
	written atomic.Int64 // messages written: the store's clock reads it
}

// inOrder writes the plan's steps one at a time, in order, each stamped
// with its time: the same ids and times on every run, and the ones the
// COPY path gives.
func (w *storeWriter) inOrder(ctx context.Context) error {
	defer w.progress()()
	return w.p.walk(func(s step, written int) error {
		w.written.Store(int64(written))
		if s.msg == stateStep {
			return w.state(ctx, int(s.thread))
		}
		return w.message(ctx, int(s.thread), int(s.msg))
	})
}

// concurrently writes whole threads from n goroutines, so that SQLite
// groups the writes into shared commits. The threads are the plan's; the
// order of their writes, and so the ids, are the scheduler's, and the time
// follows the messages written so far.
func (w *storeWriter) concurrently(ctx context.Context, n int) error {
	defer w.progress()()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				t := int(next.Add(1) - 1)
				if t >= len(w.p.threads) {
					return
				}
				if err := w.thread(ctx, t); err != nil {
					errs <- fmt.Errorf("thread %d: %w", t, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func (w *storeWriter) thread(ctx context.Context, t int) error {
	for m := range w.p.threads[t].msgs {
		if err := w.message(ctx, t, m); err != nil {
			return err
		}
		w.written.Add(1)
	}
	return w.state(ctx, t)
}

// progress reports the messages written every 10 seconds until the
// function it returns is called.
func (w *storeWriter) progress() (stop func()) {
	started := time.Now()
	tick := time.NewTicker(10 * time.Second)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-tick.C:
				fmt.Fprintf(os.Stderr, "inboxgen: %d of %d messages, %s\n", w.written.Load(), w.p.messages, time.Since(started).Round(time.Second))
			case <-done:
				return
			}
		}
	}()
	return func() { tick.Stop(); close(done) }
}

// message writes message m of thread t: an inbound text, or a send and the
// carrier's acceptance.
func (w *storeWriter) message(ctx context.Context, t, m int) error {
	th := &w.p.threads[t]
	msg, line, body := th.msgs[m], w.s.lines[th.line], texts[th.msgs[m].body]
	if msg.in {
		in := store.Inbound{Line: line, From: th.number, Participants: []string{th.number}, Body: body, Readers: w.s.users}
		if err := smsevent.SetReceived(&in); err != nil {
			return err
		}
		_, err := w.st.StoreInbound(ctx, in)
		return err
	}
	o := &store.Outbound{AccountID: w.s.account, LineID: line.ID, From: line.Number, To: []string{th.number}, Participants: th.number,
		Body: body, Type: domain.BillingSMS, Units: 1, UnitPrice: unitPrice, Price: unitPrice, SentBy: w.s.users[msg.sentBy]}
	id, err := w.st.CreateOutbound(ctx, o)
	if err != nil {
		return err
	}
	sent, err := smsevent.Sent(id, o.From, o.To)
	if err != nil {
		return err
	}
	return w.st.MarkOutboundSent(ctx, o, carrierRef, sent)
}

// unitPrice and carrierRef are every generated send's price (micro-dollars)
// and carrier reference.
const (
	unitPrice  = 7900
	carrierRef = "bench"
)

// state writes thread t's state once its messages are in: read by every
// user, assigned, resolved.
func (w *storeWriter) state(ctx context.Context, t int) error {
	th := &w.p.threads[t]
	key := domain.ConversationKey{Line: w.s.lines[th.line], Participants: []string{th.number}}
	c, _, err := w.st.Conversation(ctx, key)
	if err != nil {
		return err
	}
	if th.read {
		for _, u := range w.s.users {
			if err := w.st.MarkThreadRead(ctx, c.ID, u, store.Change{}); err != nil {
				return err
			}
		}
	}
	ch := store.StateChange{Key: key, Actor: w.s.users[th.actor]}
	if th.assignTo >= 0 {
		if _, err := w.st.Assign(ctx, ch, w.s.users[th.assignTo]); err != nil {
			return err
		}
	}
	if th.resolve {
		if _, err := w.st.Resolve(ctx, ch, ch.Actor, "", ch.Actor); err != nil {
			return err
		}
	}
	return nil
}
