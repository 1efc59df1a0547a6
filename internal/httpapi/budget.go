package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/domain"
)

// A send can carry 72 MB of attachments in base64, and decoding it holds
// several copies (the body, the decoded strings, the decoded bytes) for the
// life of the request: a few hundred megabytes. Large bodies therefore share a
// budget of bytes in flight, so that a burst of them waits its turn instead
// of exhausting the machine's memory. Ordinary texts stay out of it.
const (
	defaultBodyBudget = 256 << 20
	defaultBodyWait   = 30 * time.Second
	// smallBody is the largest declared body that needs no share of the
	// budget: a text with small attachments.
	smallBody = 1 << 20
)

// bodyBudget holds the bytes of large request bodies in flight.
//
// It grants room smallest body first, not in arrival order: with a FIFO
// semaphore, eight slow 70 MB uploads made a 2 MB send queue behind the one
// 70 MB upload that did not fit, for 29 s. Here a body that fits is admitted at
// once, and when room comes back the waiting bodies are admitted in order of
// size. A large body can therefore be passed by smaller ones while the budget
// stays busy; its wait is bounded (wait, then 503) like any other, and
// switchboard_http_large_body_wait_seconds shows what waiting costs.
type bodyBudget struct {
	size int64
	wait time.Duration
	held atomic.Int64 // bytes granted now: the switchboard_http_large_body_bytes gauge

	mu      sync.Mutex
	free    int64
	waiters []*bodyWaiter // ascending by n, then by arrival

	// idle is called (on its own goroutine) once the budget has stayed
	// empty for idleAfter after large bodies were released; see freeMemory.
	idle      func()
	idleAfter time.Duration
	idleTimer *time.Timer
	observe   func(time.Duration) // the wait histogram; nil in tests of the budget alone
}

type bodyWaiter struct {
	n       int64
	granted chan struct{} // closed when the waiter holds n bytes
}

func newBodyBudget(size int64, wait time.Duration) *bodyBudget {
	if size <= 0 {
		size = defaultBodyBudget
	}
	if wait <= 0 {
		wait = defaultBodyWait
	}
	return &bodyBudget{size: size, wait: wait, free: size, idle: freeMemory, idleAfter: 2 * time.Second}
}

// acquire waits until n bytes (at most size) are free and takes them, or
// returns ctx's error having taken nothing.
func (b *bodyBudget) acquire(ctx context.Context, n int64) error {
	b.mu.Lock()
	if b.idleTimer != nil {
		b.idleTimer.Stop()
		b.idleTimer = nil
	}
	if n <= b.free {
		// Whoever waits needs more than is free (else it would hold it by
		// now), so a body that fits takes nothing from a smaller one.
		b.free -= n
		b.mu.Unlock()
		b.held.Add(n)
		return nil
	}
	w := &bodyWaiter{n: n, granted: make(chan struct{})}
	i, _ := slices.BinarySearchFunc(b.waiters, n, func(x *bodyWaiter, n int64) int {
		if x.n <= n {
			return -1 // after every waiter of the same size: arrival order among equals
		}
		return 1
	})
	b.waiters = slices.Insert(b.waiters, i, w)
	b.mu.Unlock()

	select {
	case <-w.granted:
		b.held.Add(n)
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	if i := slices.Index(b.waiters, w); i >= 0 {
		b.waiters = slices.Delete(b.waiters, i, i+1)
		b.mu.Unlock()
		return ctx.Err()
	}
	b.mu.Unlock()
	// Granted just as the wait ran out: give the room back.
	b.held.Add(n)
	b.release(n)
	return ctx.Err()
}

// waiting is the number of bodies waiting for room.
func (b *bodyBudget) waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.waiters)
}

// release returns n bytes and admits the waiting bodies that now fit,
// smallest first.
func (b *bodyBudget) release(n int64) {
	b.held.Add(-n)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free += n
	for len(b.waiters) > 0 && b.waiters[0].n <= b.free {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.free -= w.n
		close(w.granted)
	}
	if b.free == b.size && b.idle != nil && b.idleTimer == nil {
		b.idleTimer = time.AfterFunc(b.idleAfter, func() {
			b.mu.Lock()
			still := b.free == b.size
			b.idleTimer = nil
			b.mu.Unlock()
			if still {
				b.idle()
			}
		})
	}
}

// freeMemory hands the memory of a burst of large bodies back to the
// operating system once the burst is over. The Go runtime keeps freed heap
// pages for reuse and returns them only gradually (the background scavenger),
// so after a burst of maximal sends the process held over a gigabyte for
// minutes; a forced collection and scavenge costs one GC cycle of the small
// live heap, and runs only when the large-body budget has been empty for a
// moment (docs/benchmarks.md has the figures).
var freeMemory = debug.FreeOSMemory

// budgeted runs h once the request's body, at most limit bytes, fits in the
// budget; a body of unknown length that is over smallBody counts as limit. A
// request that has not found room after the wait is 503 unavailable, having
// read nothing more.
func (s *Server) budgeted(limit int64, h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		n := r.ContentLength
		if n < 0 {
			// Unknown length (chunked): read up to smallBody first, so that
			// a small text is not counted as the largest possible body.
			head, err := io.ReadAll(io.LimitReader(r.Body, smallBody+1))
			if err != nil {
				return bodyError(w, err)
			}
			if len(head) <= smallBody {
				r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(head)), int64(len(head))
				return h(w, r)
			}
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
			n = limit
		}
		switch {
		case n > limit:
			return h(w, r) // refused unread by the body reader
		case n <= smallBody:
			return h(w, r)
		}
		n = min(n, s.bodies.size)
		ctx, cancel := context.WithTimeout(r.Context(), s.bodies.wait)
		defer cancel()
		start := time.Now()
		err := s.bodies.acquire(ctx, n)
		if s.bodies.observe != nil {
			s.bodies.observe(time.Since(start))
		}
		if err != nil {
			return domain.Errorf(domain.Unavailable, "too many large uploads in progress; retry with backoff")
		}
		defer s.bodies.release(n)
		return h(w, r)
	}
}
