package sms

import (
	"context"
	"sync"
	"time"
)

// Retry bounds of the settler: the first retry after settleBase, doubling up
// to settleMax between attempts, for as long as the process runs.
const (
	settleBase = 50 * time.Millisecond
	settleMax  = 5 * time.Second
)

// settler keeps retrying writes that record evidence that the carrier took a
// message (its acceptance, or a delivery receipt, which charges a message
// still pending) after the database refused them: once the carrier has a
// message, its charge must be recorded when the database answers again, not
// dropped with the error. Each record is one goroutine sleeping between
// attempts (records fail only while the database does, and then all of them
// wait the same way). The message ids being settled are left alone by this
// process's reconciler, so a message the carrier is known to have taken is
// never abandoned here.
//
// It lives as long as the process: a record still failing when the process
// stops is logged with its message id (the receipt path can still charge it).
type settler struct {
	base time.Duration // first retry delay; tests shorten it

	mu      sync.Mutex
	keys    map[string]bool // records being retried, by key
	ids     map[int64]int   // message id → records being retried for it
	stopped bool
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	// attempted, when set, is called after every retry with its outcome
	// (tests wait on it instead of sleeping).
	attempted func(key string, err error)
}

// settling reports whether a record for message id is being retried.
func (st *settler) settling(id int64) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.ids[id] > 0
}

// start retries write (which failed once) until it succeeds or the settler
// stops. A record already being retried under key is not started twice.
// failed is called when the settler stops with the record still unwritten.
func (st *settler) start(key string, id int64, write func(context.Context) error, failed func(error)) {
	st.mu.Lock()
	if st.stopped || st.keys[key] {
		st.mu.Unlock()
		if st.stopped {
			failed(context.Canceled)
		}
		return
	}
	if st.keys == nil {
		st.keys, st.ids = map[string]bool{}, map[int64]int{}
		st.ctx, st.cancel = context.WithCancel(context.Background())
	}
	st.keys[key] = true
	st.ids[id]++
	ctx := st.ctx
	base := st.base
	if base <= 0 {
		base = settleBase
	}
	st.wg.Add(1)
	st.mu.Unlock()

	go func() {
		defer st.wg.Done()
		defer func() {
			st.mu.Lock()
			delete(st.keys, key)
			if st.ids[id]--; st.ids[id] <= 0 {
				delete(st.ids, id)
			}
			st.mu.Unlock()
		}()
		wait := base
		t := time.NewTimer(wait)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				failed(ctx.Err())
				return
			case <-t.C:
			}
			err := write(ctx)
			if st.attempted != nil {
				st.attempted(key, err)
			}
			if err == nil {
				return
			}
			wait = min(2*wait, settleMax)
			t.Reset(wait)
		}
	}()
}

// stop ends every retry and waits for them to return.
func (st *settler) stop() {
	st.mu.Lock()
	st.stopped = true
	if st.cancel != nil {
		st.cancel()
	}
	st.mu.Unlock()
	st.wg.Wait()
}
