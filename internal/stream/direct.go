package stream

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/store"
)

// A direct stream is one the hub writes itself (docs/decisions.md, "Live
// events: streams without a goroutine"). On HTTP/1.1 the handler takes the
// connection from net/http once the checks are done, writes the answer's
// head and what the stream replays, and returns: net/http's goroutines and
// buffers for the connection go away. From then on no goroutine belongs to
// the stream. The hub writes its events with non-blocking writes (one per
// stream per batch of events); only when the client's socket is full does a
// goroutine (a pump) take over the stream's writes, with blocking writes
// under the write timeout, until its queue is empty. The sweep writes the
// keepalive comments and notices a client that left, and the rechecks run
// once per credential for all of its streams.

// keepaliveEvent is the comment a quiet direct stream is sent.
var keepaliveEvent = &Event{keepalive: true, Frame: []byte(": keepalive\n\n")}

// directConn is a direct stream's connection and what waits to be written
// to it.
type directConn struct {
	conn net.Conn
	// raw is the connection's descriptor for non-blocking writes and the
	// sweep's look for the client's close; nil when the connection has
	// none (then every write goes through a pump).
	raw       rawConn
	wait      time.Duration // a blocking write's timeout (ServeConfig.WriteWait)
	keepalive time.Duration
	account   int64
	// lastWrite is when the connection last took bytes (unix nanoseconds).
	lastWrite atomic.Int64

	mu sync.Mutex
	// queue are the events handed to the stream and not yet written.
	queue []*Event
	// partial is the rest of a write the socket took only part of: written
	// first, so that no message is cut in two.
	partial []byte
	// last is the last event written: one at or before it is not written
	// again (a resumed stream may be behind what its client has). The
	// connection's owner's: the pump's while pumping, else under mu.
	last store.EventPos
	// pumping: a goroutine owns the connection's writes (the handler while
	// it sets the stream up, then a pump); the hub only queues.
	pumping bool
	// marked: the stream is in the hub's flush list.
	marked bool
	closed bool
}

// canHijack reports whether Serve may take r's connection: HTTP/1.1 in
// clear (behind a proxy that ends TLS, as deployed), a GET. HTTP/2 has no
// connection to take, a TLS connection cannot be written to without its
// record layer, and HEAD is answered by its headers alone.
func canHijack(r *http.Request, cfg ServeConfig) bool {
	return !cfg.NetHTTP && r.ProtoMajor == 1 && r.ProtoMinor >= 1 && r.TLS == nil && r.Method == http.MethodGet
}

// responseHead is the answer's status line and headers as net/http writes
// them for the same header map (sorted, then Date), with Connection: close
// in place of Transfer-Encoding: chunked: the stream's body ends when the
// connection does.
func responseHead(h http.Header, now time.Time) []byte {
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\n")
	_ = h.Write(&b)
	b.WriteString("Date: ")
	b.WriteString(now.UTC().Format(http.TimeFormat))
	b.WriteString("\r\nConnection: close\r\n\r\n")
	return b.Bytes()
}

// serveDirect streams on a connection taken from net/http: it writes the
// head and the replay (or reset) itself, then drains what the hub queued
// meanwhile and returns, leaving the stream to the hub. sub is attached at
// last already unless it resumes.
func (h *Hub) serveDirect(ctx context.Context, conn net.Conn, brw *bufio.ReadWriter, head []byte, req Request, sub *Sub,
	last store.EventPos, resume bool, opening []byte, keepalive, writeWait time.Duration) {
	d := &directConn{conn: conn, raw: rawOf(conn), wait: writeWait, keepalive: keepalive, account: req.AccountID, last: last}
	if !h.makeDirect(sub, d) {
		h.drop(sub, endShutdown)
		return
	}
	// net/http's buffered writer, for the head and the replay; dropped
	// with this goroutine.
	out := d.writer(sub, brw.Writer, h.cfg.Metrics)
	if out.write(head) != nil || out.write(opening) != nil || out.flush() != nil {
		h.drop(sub, endGone)
		return
	}
	if resume {
		n, err := h.catchUp(ctx, out, req, sub, &d.last)
		req.endReplay()
		h.cfg.Metrics.Replayed(n)
		if err != nil {
			h.drop(sub, endGone)
			return
		}
	}
	d.wrote(h)
	h.pump(sub)
}

// makeDirect makes the hub queue sub's events for d, moving there what its
// channel holds; false if the stream has ended already.
func (h *Hub) makeDirect(sub *Sub, d *directConn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	d.pumping = true // the handler's until it hands the stream over
	for len(sub.ch) > 0 {
		d.queue = append(d.queue, <-sub.ch)
	}
	sub.direct, sub.ch = d, nil
	return !sub.closed && sub.why.Load() == endNone
}

// writer is a writer over the connection for blocking writes (buffered
// by w).
func (d *directConn) writer(sub *Sub, w *bufio.Writer, m *Metrics) *writer {
	return &writer{w: w, flushFn: w.Flush, deadline: d.conn.SetWriteDeadline, wait: d.wait, m: m, sub: sub}
}

// enqueue hands e to a direct stream; h.mu held. A stream whose queue is
// full is treated as a full channel is: ended if its write has been
// blocked for stallLimit, else detached to catch up from the database.
func (h *Hub) enqueue(s *Sub, e *Event) {
	d := s.direct
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	if len(d.queue) < h.cfg.Buffer {
		d.queue = append(d.queue, e)
		if !d.pumping && !d.marked {
			d.marked = true
			h.flush = append(h.flush, s)
		}
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	h.detach(s)
	if s.stalled(stallLimit) {
		h.cutSlow(s)
		return
	}
	h.cfg.Metrics.lagged.Inc()
	h.laggards[s] = struct{}{}
	d.mu.Lock()
	s.lagging.Store(true)
	start := !d.pumping
	d.pumping = true
	d.mu.Unlock()
	if start {
		go h.pump(s) // it writes the queue, then catches up
	}
}

// take moves what waits into one buffer: the rest of a partial write,
// then the events the client does not have. owned reports whether b is
// buf (grown); otherwise it is an event's frame, shared and read-only.
// d.mu held (or the pump's).
func (d *directConn) take(buf []byte) (b []byte, events int, owned bool) {
	if len(d.partial) == 0 && len(d.queue) == 1 {
		e := d.queue[0]
		d.queue[0] = nil
		d.queue = d.queue[:0]
		if e.keepalive {
			return e.Frame, 0, false
		}
		if !e.Pos.After(d.last) {
			return nil, 0, false
		}
		d.last = e.Pos
		return e.Frame, 1, false
	}
	b = append(buf[:0], d.partial...)
	d.partial = nil
	for i, e := range d.queue {
		d.queue[i] = nil
		if !e.keepalive {
			if !e.Pos.After(d.last) {
				continue
			}
			d.last = e.Pos
			events++
		}
		b = append(b, e.Frame...)
	}
	d.queue = d.queue[:0]
	if cap(d.queue) > 16 {
		d.queue = nil // a burst's array is not kept for the quiet that follows
	}
	return b, events, true
}

// writeDirect writes what waits for s without blocking; the rest, if the
// socket is full, goes to a pump. It returns how many events it wrote.
func (h *Hub) writeDirect(s *Sub, scratch *[]byte) int {
	d := s.direct
	d.mu.Lock()
	d.marked = false
	if d.pumping || d.closed || (len(d.queue) == 0 && len(d.partial) == 0) {
		d.mu.Unlock()
		return 0
	}
	b, n, owned := d.take(*scratch)
	if owned {
		*scratch = b[:0]
	}
	if len(b) == 0 {
		d.mu.Unlock()
		return 0
	}
	now := time.Now()
	w, err := d.tryWrite(b)
	if err != nil {
		d.mu.Unlock()
		h.drop(s, endGone)
		return 0
	}
	d.wrote(h)
	if w < len(b) {
		d.partial = append([]byte(nil), b[w:]...)
		d.pumping = true
		s.writing.Store(now.UnixNano())
		go h.pump(s)
	}
	d.mu.Unlock()
	return n
}

// tryWrite writes what the socket takes now; a connection without a
// descriptor takes nothing (its pump writes).
func (d *directConn) tryWrite(b []byte) (int, error) {
	if d.raw == nil {
		return 0, nil
	}
	return d.raw.tryWrite(b)
}

// pump owns s's writes until its queue is empty: blocking writes under the
// write timeout, and the catch-up of a stream that lagged.
func (h *Hub) pump(s *Sub) {
	d := s.direct
	for {
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			return
		}
		b, n, _ := d.take(nil)
		if len(b) == 0 {
			if s.Lagging() {
				d.mu.Unlock()
				if err := h.catchUpDirect(s); err != nil {
					h.drop(s, endGone)
					return
				}
				continue
			}
			// The hub's writes never block, and a deadline left from the
			// pump's (or the setup's) would fail them once it passed.
			_ = d.conn.SetWriteDeadline(time.Time{})
			d.pumping = false
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
		if err := d.write(s, b, h.cfg.Metrics); err != nil {
			h.drop(s, endGone)
			return
		}
		h.cfg.Metrics.Sent(n)
	}
}

// write writes b, blocking up to the write timeout.
func (d *directConn) write(s *Sub, b []byte, m *Metrics) error {
	now := time.Now()
	_ = d.conn.SetWriteDeadline(now.Add(d.wait))
	s.writing.Store(now.UnixNano())
	_, err := d.conn.Write(b)
	s.writing.Store(0)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		m.SlowWrite()
	}
	if err == nil {
		d.wrote(s.hub)
	}
	return err
}

// wrote records that the connection took bytes now, on the hub's clock
// (the sweep's keepalives are due by it).
func (d *directConn) wrote(h *Hub) { d.lastWrite.Store(h.cfg.Now().UnixNano()) }

// catchUpDirect brings a lagging direct stream back from the database
// (catchUp), through a buffer it holds only meanwhile.
func (h *Hub) catchUpDirect(s *Sub) error {
	d := s.direct
	out := d.writer(s, bufio.NewWriterSize(d.conn, 4096), h.cfg.Metrics)
	h.mu.Lock()
	ctx := h.ctx
	h.mu.Unlock()
	_, err := h.catchUp(ctx, out, Request{AccountID: d.account}, s, &d.last)
	if err == nil {
		d.wrote(h)
	}
	return err
}

// drop ends a direct stream: its connection is closed and its place in
// the limit freed.
func (h *Hub) drop(s *Sub, why int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropLocked(s, why)
}

// dropLocked is drop with h.mu held.
func (h *Hub) dropLocked(s *Sub, why int32) {
	d := s.direct
	d.mu.Lock()
	first := !d.closed
	d.closed = true
	d.queue, d.partial = nil, nil
	d.mu.Unlock()
	if first {
		_ = d.conn.Close()
	}
	s.end(why)
	s.closeLocked()
}

// flushChunk is how many streams one flush worker writes at least.
const flushChunk = 256

// flushDirect writes what the last publish queued for the direct streams,
// on up to GOMAXPROCS-1 goroutines (at least one): one write per stream,
// all the batch's events in it. A core is left to the rest of the server:
// with every core writing to thousands of streams, sends waited and webhook
// deliveries fell seconds behind (docs/benchmarks.md, "The stream's
// ceiling on this machine").
func (h *Hub) flushDirect() {
	list := h.flush
	if len(list) == 0 {
		return
	}
	workers := min(max(runtime.GOMAXPROCS(0)-1, 1), (len(list)+flushChunk-1)/flushChunk)
	var sent atomic.Int64
	write := func(part []*Sub) {
		var scratch []byte
		n := 0
		for _, s := range part {
			n += h.writeDirect(s, &scratch)
		}
		sent.Add(int64(n))
	}
	if workers <= 1 {
		write(list)
	} else {
		var wg sync.WaitGroup
		per := (len(list) + workers - 1) / workers
		for i := 0; i < len(list); i += per {
			part := list[i:min(i+per, len(list))]
			wg.Go(func() { write(part) })
		}
		wg.Wait()
	}
	h.cfg.Metrics.Sent(int(sent.Load()))
	clear(list)
	h.flush = list[:0]
}

// sweepLoop writes the keepalive comments of the quiet direct streams and
// ends those whose client left, at least once a second (and twice per
// keepalive period).
func (h *Hub) sweepLoop(ctx context.Context) {
	var list []*Sub
	var scratch []byte
	probe := make([]byte, 512)
	timer := time.NewTimer(time.Second)
	defer timer.Stop()
	for {
		tick := min(time.Second, time.Duration(h.keepalive.Load())/2)
		timer.Reset(tick)
		select {
		case <-ctx.Done():
			return
		case <-h.retime[0]:
			continue // a stream asked for a shorter period
		case <-timer.C:
		}
		h.mu.Lock()
		for s := range h.all {
			if s.direct != nil {
				list = append(list, s)
			}
		}
		h.mu.Unlock()
		now := h.cfg.Now()
		sent, comments := 0, 0
		for _, s := range list {
			d := s.direct
			if d.raw != nil && !d.raw.open(probe) {
				h.drop(s, endGone)
				continue
			}
			// Within a tick of the period: the next look may be a tick
			// late, and the comment must go out within the period.
			if now.Sub(time.Unix(0, d.lastWrite.Load())) < d.keepalive-tick {
				continue
			}
			d.mu.Lock()
			quiet := !d.pumping && !d.closed && len(d.queue) == 0 && len(d.partial) == 0
			if quiet {
				d.queue = append(d.queue, keepaliveEvent)
			}
			d.mu.Unlock()
			if quiet {
				sent += h.writeDirect(s, &scratch)
				comments++
			}
		}
		clear(list)
		list = list[:0]
		h.TestSignals.Sweep.Signal(Round{Began: now, N: comments})
	}
}

// recheckLoop re-authenticates the open streams' credentials every
// recheck period, once per credential and query (Request.RecheckKey) for
// all of its streams: a refused one ends them, a new filter replaces
// theirs.
func (h *Hub) recheckLoop(ctx context.Context) {
	timer := time.NewTimer(time.Second)
	defer timer.Stop()
	for {
		timer.Reset(time.Duration(h.recheckEvery.Load()))
		select {
		case <-ctx.Done():
			return
		case <-h.retime[1]:
			continue // a stream asked for a shorter period
		case <-timer.C:
		}
		began := h.cfg.Now()
		groups := map[string][]*Sub{}
		var alone [][]*Sub
		h.mu.Lock()
		for s := range h.all {
			switch {
			case s.recheck == nil:
			case s.recheckKey == "":
				alone = append(alone, []*Sub{s})
			default:
				groups[s.recheckKey] = append(groups[s.recheckKey], s)
			}
		}
		h.mu.Unlock()
		check := func(subs []*Sub) {
			f, err := subs[0].recheck(ctx)
			for _, s := range subs {
				switch {
				case err != nil && ctx.Err() == nil:
					h.revoke(s) // revoked, or its account, user or role gone
				case f != nil: // nil: could not tell (the database did not answer)
					s.SetFilter(f)
				}
			}
		}
		for _, subs := range groups {
			check(subs)
		}
		for _, subs := range alone {
			check(subs)
		}
		h.TestSignals.Recheck.Signal(Round{Began: began, N: len(groups) + len(alone)})
	}
}

// revoke ends a stream whose credential was refused.
func (h *Hub) revoke(s *Sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.direct != nil {
		h.dropLocked(s, endRevoked)
		return
	}
	s.end(endRevoked)
}

// asked lowers the sweep's and the rechecks' periods to a stream's.
func (h *Hub) asked(keepalive, recheck time.Duration) {
	lower := func(a *atomic.Int64, d time.Duration, retime chan struct{}) {
		for {
			cur := a.Load()
			if int64(d) >= cur {
				return
			}
			if a.CompareAndSwap(cur, int64(d)) {
				select { // the loop waits out the longer period otherwise
				case retime <- struct{}{}:
				default:
				}
				return
			}
		}
	}
	lower(&h.keepalive, keepalive, h.retime[0])
	lower(&h.recheckEvery, recheck, h.retime[1])
}
