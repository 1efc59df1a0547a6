package stream

import (
	"sync"
	"sync/atomic"

	"switchboard/internal/store"
)

// Why the hub ended a stream.
const (
	endNone = iota
	endSlow
	endShutdown
)

// Sub is one open stream.
type Sub struct {
	hub     *Hub
	account int64
	filter  atomic.Pointer[Filter]
	// ch holds the live events waiting to be written (Config.Buffer).
	ch chan *Event
	// done is closed when the hub ends the stream; why says why.
	done    chan struct{}
	endOnce sync.Once
	why     atomic.Int32
	closed  bool // Close ran; hub.mu
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

// Slow reports whether the hub ended the stream because its buffer was full.
func (s *Sub) Slow() bool { return s.why.Load() == endSlow }

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
	if s.closed {
		return
	}
	s.closed = true
	h.detach(s)
	if h.open[s.account]--; h.open[s.account] <= 0 {
		delete(h.open, s.account)
	}
	h.cfg.Metrics.open.Dec()
}
