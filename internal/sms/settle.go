package sms

import (
	"cmp"
	"context"
	"sync"
	"time"

	"switchboard/internal/background"
)

// Retry bounds of the settler: the first retry after settleBase, doubling up
// to settleMax between attempts, for as long as the process runs.
const (
	settleBase = 50 * time.Millisecond
	settleMax  = 5 * time.Second
)

// Settler returns the background service that keeps retrying the records
// of a carrier's acceptance the database refused (see settler): the
// service's own, the same one every call. Its Start only allows retries
// again after a Stop (they begin when a write is refused, also before
// Start); Stop ends them, each record still unwritten logged with its
// message id. cmd/switchboard adds it to the runner first, so that it stops
// last, once nothing else can hand it a record.
func (s *Service) Settler() background.Service { return &s.settle }

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
// A record still failing when the settler stops is logged with its message
// id (the receipt path can still charge it). Its zero value is ready.
type settler struct {
	base time.Duration // first retry delay; tests shorten it (zero: settleBase)

	mu      sync.Mutex
	keys    map[string]bool // records being retried, by key
	ids     map[int64]int   // message id → records being retried for it
	stopped bool
	ctx     context.Context // of the retries; nil until the first one
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	// attempted, when set, is called after every retry with its outcome
	// (tests wait on it instead of sleeping).
	attempted func(key string, err error)
}

// Start lets a stopped settler take records again. Retries need no start:
// the settler takes them from the service's first refused write.
func (st *settler) Start(context.Context) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.stopped = false
	return nil
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
	}
	if st.ctx == nil {
		st.ctx, st.cancel = context.WithCancel(context.Background())
	}
	st.keys[key] = true
	st.ids[id]++
	ctx := st.ctx
	base := cmp.Or(st.base, settleBase)
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

// Stop ends every retry and waits for them to return. It may be called more
// than once, and before Start.
func (st *settler) Stop() {
	st.mu.Lock()
	st.stopped = true
	if st.cancel != nil {
		st.cancel()
		st.ctx, st.cancel = nil, nil // a Start after this retries anew
	}
	st.mu.Unlock()
	st.wg.Wait()
}
