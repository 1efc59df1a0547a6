package stream

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/store"
)

// Why the hub ended a stream.
const (
	endNone = iota
	endSlow
	endShutdown
	endRevoked
	endGone // the client closed the connection, or a write to it failed
)

// Sub is one open stream.
type Sub struct {
	hub     *Hub
	account int64
	holder  holder // its credential, for the share of the limit (zero: none)
	filter  atomic.Pointer[Filter]
	// ch holds the live events waiting to be written (Config.Buffer).
	ch chan *Event
	// done is closed when the hub ends the stream; why says why.
	done    chan struct{}
	endOnce sync.Once
	why     atomic.Int32
	closed  bool // Close ran; hub.mu
	// lagging: the hub found ch full and detached the stream, which reads
	// what it missed from the database and attaches again (catchUp);
	// lagged is signalled when it starts.
	lagging atomic.Bool
	lagged  chan struct{}
	// writing is when the write to the client in progress began (unix
	// nanoseconds), 0 between writes: a full buffer behind a write blocked
	// this long is a client that stopped reading.
	writing atomic.Int64
	// cut ends the write in progress (Serve sets it): the hub calls it when
	// it ends the stream of a client that stopped reading.
	cut atomic.Pointer[func()]
	// recheck re-authenticates the stream's credential (Request.Recheck);
	// streams with the same recheckKey share one call per round. Set before
	// the hub's rechecks see the stream (h.mu).
	recheck    func(context.Context) (*Filter, error)
	recheckKey string
	// direct is the connection of a stream the hub writes itself (HTTP/1.1,
	// taken from net/http: direct.go); nil for one its handler writes from
	// ch.
	direct *directConn
}

// Attach makes s receive the live events after the returned position: the
// hub's cursor at that moment. Every event up to it is in the database, for
// a replay to read.
func (s *Sub) Attach() store.EventPos {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if !s.closed && s.why.Load() == endNone {
		m := h.subs[s.account]
		if m == nil {
			m = map[*Sub]struct{}{}
			h.subs[s.account] = m
		}
		m[s] = struct{}{}
		s.lagging.Store(false)
		delete(h.laggards, s)
	}
	return h.cursor
}

// SetFilter replaces what the stream may see (its credential's role or
// lines changed).
func (s *Sub) SetFilter(f *Filter) { s.filter.Store(f) }

// Filter is what the stream may see now.
func (s *Sub) Filter() *Filter { return s.filter.Load() }

// Events are the live events, in order.
func (s *Sub) Events() <-chan *Event { return s.ch }

// Done is closed when the hub ended the stream: its client was too slow
// (Slow reports it) or the server is shutting down.
func (s *Sub) Done() <-chan struct{} { return s.done }

// Slow reports whether the hub ended the stream because its buffer was full
// while its client had stopped reading.
func (s *Sub) Slow() bool { return s.why.Load() == endSlow }

// Lagging reports whether the hub detached the stream because its buffer
// was full: it must catch up from the database and attach again.
func (s *Sub) Lagging() bool { return s.lagging.Load() }

// Lagged is signalled when the stream starts lagging.
func (s *Sub) Lagged() <-chan struct{} { return s.lagged }

// stalled reports whether a write to the client has been blocked for at
// least d.
func (s *Sub) stalled(d time.Duration) bool {
	start := s.writing.Load()
	return start != 0 && time.Since(time.Unix(0, start)) >= d
}

func (s *Sub) end(why int32) {
	s.endOnce.Do(func() {
		s.why.Store(why)
		close(s.done)
	})
}

// Close ends the stream and frees its place in the account's limit.
func (s *Sub) Close() {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	s.closeLocked()
}

// closeLocked is Close with h.mu held.
func (s *Sub) closeLocked() {
	h := s.hub
	if s.closed {
		return
	}
	s.closed = true
	h.detach(s)
	delete(h.all, s)
	if h.open[s.account]--; h.open[s.account] <= 0 {
		delete(h.open, s.account)
	}
	if s.holder.who != "" {
		if h.held[s.holder]--; h.held[s.holder] <= 0 {
			delete(h.held, s.holder)
		}
	}
	h.cfg.Metrics.open.Dec()
	h.TestSignals.Closed.Signal(s.account)
}
