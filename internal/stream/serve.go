package stream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// Defaults of ServeConfig.
const (
	// DefaultKeepalive: a comment line at least this often keeps proxies
	// from closing an idle stream.
	DefaultKeepalive = 15 * time.Second
	// DefaultRecheck is how often a stream re-authenticates its credential:
	// a revoked one is cut off within it.
	DefaultRecheck = time.Second
	// DefaultWriteWait is how long one write to the client may take before
	// the stream counts as stalled and ends.
	DefaultWriteWait = 10 * time.Second
	// replayPage is how many events a replay reads at a time.
	replayPage = 1000
	// retryAfter is the Retry-After of a 429 past the stream limit or the
	// credential's share of it; retryReplay of one whose replay found the
	// account's replays busy.
	retryAfter  = 5
	retryReplay = 2
)

// Request is one GET /events the HTTP layer has authenticated and parsed.
type Request struct {
	AccountID int64
	Filter    *Filter
	// Resume is the event id to resume after (Last-Event-ID or after=);
	// nil starts live. Event 0 is the start of the order.
	Resume *int64
	// Recheck re-authenticates the credential and returns what it may see
	// now; an error ends the stream, a nil filter keeps the one it has.
	// Called every ServeConfig.Recheck, once for all the open streams with
	// the same RecheckKey (the same credential and filter parameters):
	// empty, once for this stream alone.
	Recheck    func(ctx context.Context) (*Filter, error)
	RecheckKey string
	// Holder is the credential the stream counts against for its share of
	// the account's limit (Hub.Share): an API key, or a person whatever
	// the grant; empty: none.
	Holder string
	// Retention is how long events are kept: an event older than that may
	// have lost its successors to pruning, so resuming after it is a reset.
	// 0: no limit.
	Retention time.Duration
	// endReplay gives back the replay slot a resumed stream holds while it
	// replays (Hub.startReplay).
	endReplay func()
}

// ServeConfig are the timings of Serve (zero: the defaults).
type ServeConfig struct {
	Keepalive, Recheck, WriteWait time.Duration
	// NetHTTP keeps every stream on net/http's ResponseWriter, with a
	// goroutine each, instead of taking HTTP/1.1 connections over (the
	// tests of that path; HTTP/2 and HEAD always take it).
	NetHTTP bool
}

// Serve streams req's events to w until the client leaves, the credential
// is refused, the client falls behind or the server shuts down. An error is
// returned only before anything was written (the caller answers it in the
// error envelope); once streaming, it ends the stream and returns nil.
func (h *Hub) Serve(w http.ResponseWriter, r *http.Request, req Request, cfg ServeConfig) error {
	keepalive := cmpDur(cfg.Keepalive, DefaultKeepalive)
	recheck := cmpDur(cfg.Recheck, DefaultRecheck)
	writeWait := cmpDur(cfg.WriteWait, DefaultWriteWait)
	ctx := r.Context()
	st := h.cfg.Store
	h.asked(keepalive, recheck)

	sub, err := h.openFor(req.AccountID, req.Filter, &req)
	switch {
	case errors.Is(err, ErrLimit):
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		return domain.Errorf(domain.RateLimited, "this account has %d event streams open on this server, the most it may; close one or retry later", h.cfg.Limit)
	case errors.Is(err, ErrShare):
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		return domain.Errorf(domain.RateLimited, "this credential holds %d event streams open on this server, the most one credential may (half the account's %d); close one or retry later", h.Share(), h.cfg.Limit)
	case errors.Is(err, ErrClosed):
		return domain.Errorf(domain.Unavailable, "the event stream is not running on this server (it is starting or shutting down); retry")
	}
	direct := false
	defer func() {
		if !direct { // a direct stream is the hub's, open or closed
			sub.Close()
		}
	}()

	from, reset := store.EventPos{}, false
	if req.Resume != nil && *req.Resume != 0 {
		pos, at, err := st.EventPosition(ctx, req.AccountID, *req.Resume)
		switch {
		case domain.IsNotFound(err):
			reset = true
		case err != nil:
			return err
		case req.Retention > 0 && at.Before(h.cfg.Now().Add(-req.Retention)):
			reset = true
		}
		from = pos
	}
	resume := req.Resume != nil && !reset
	if resume && r.Method != http.MethodHead {
		endReplay, err := h.startReplay(ctx, req.AccountID)
		if errors.Is(err, ErrReplayBusy) {
			w.Header().Set("Retry-After", strconv.Itoa(retryReplay))
			return domain.Errorf(domain.RateLimited, "this account has %d event streams replaying on this server, the most it may at once; retry later", h.cfg.Replays)
		}
		if err != nil {
			return err
		}
		defer endReplay()
		req.endReplay = endReplay
	}

	// A new stream, or one reset, joins the live events before its
	// answer's headers go out: a client that has them misses nothing
	// written after. Its first message gives the client the id of where
	// it joined (an id line and no data: EventSource keeps the id and
	// dispatches nothing), so that it resumes from there even if no event
	// comes before it disconnects; a reset says so in an event.
	var last store.EventPos
	// The reconnection delay a client should wait (SSE's retry field).
	opening := []byte("retry: 1000\n")
	if !resume {
		last = sub.Attach()
		joined, err := h.joinID(ctx, req.AccountID, last)
		if err != nil {
			return err
		}
		if reset {
			opening = append(opening, "\nid: "+domain.EventID(joined)+"\nevent: reset\ndata: {\"type\":\"reset\",\"message\":\"the event to resume after is no longer held; reload your state\"}\n\n"...)
		} else {
			opening = append(opening, "id: "+domain.EventID(joined)+"\n\n"...)
		}
	} else {
		opening = append(opening, '\n')
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	rc := http.NewResponseController(w)
	if canHijack(r, cfg) {
		// The head is rendered before the connection is taken, while the
		// header map is still the handler's to read.
		head := responseHead(hdr, time.Now())
		if conn, brw, err := rc.Hijack(); err == nil {
			direct = true
			if resume {
				last = from // not attached yet: catchUp does
			}
			h.serveDirect(ctx, conn, brw, head, req, sub, last, resume, opening, keepalive, writeWait)
			return nil
		}
		// Not offered (a wrapped writer): net/http writes the stream.
	}
	out := &writer{w: w, flushFn: rc.Flush, deadline: rc.SetWriteDeadline, wait: writeWait, m: h.cfg.Metrics, sub: sub}
	// The server's ReadTimeout would cancel the request while it streams
	// (net/http's background read of the idle connection times out), and its
	// WriteTimeout would cut the stream: each write sets its own deadline
	// instead.
	_ = rc.SetReadDeadline(time.Time{})
	// The hub ends the write of a client that stopped reading at once
	// rather than at the write's deadline (net.Conn deadlines may be set
	// from any goroutine).
	cut := func() { _ = rc.SetWriteDeadline(time.Now()) }
	sub.cut.Store(&cut)
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil // the headers are the whole answer
	}
	if out.write(opening) != nil || out.flush() != nil {
		return nil
	}
	if resume {
		// A long replay happens before attaching, so live events do not
		// fill the buffer meanwhile.
		last = from
		n, err := h.catchUp(ctx, out, req, sub, &last)
		req.endReplay()
		h.cfg.Metrics.Replayed(n)
		if err != nil {
			return nil
		}
	}
	return h.live(ctx, out, req, sub, last, keepalive)
}

// catchUp writes what the stream may see after *last from the database:
// up to the hub's cursor until little is left, then it attaches at a known
// cursor and replays the rest up to it, so that the live events start
// exactly after. A resumed stream starts with it; a stream that fell
// behind a burst (Lagging) comes back through it.
func (h *Hub) catchUp(ctx context.Context, out *writer, req Request, sub *Sub, last *store.EventPos) (int, error) {
	replayed := 0
	for {
		n, err := h.replay(ctx, out, req, sub, last, h.Cursor())
		replayed += n
		if err != nil {
			return replayed, err
		}
		if n < replayPage {
			break
		}
	}
	n, err := h.replay(ctx, out, req, sub, last, sub.Attach())
	return replayed + n, err
}

// replay writes the account's events in (*last, upTo] that the stream may
// see, moving *last; it returns how many it read.
func (h *Hub) replay(ctx context.Context, out *writer, req Request, sub *Sub, last *store.EventPos, upTo store.EventPos) (int, error) {
	read := 0
	for upTo.After(*last) {
		f := sub.Filter()
		rows, err := h.cfg.Store.AccountStreamEvents(ctx, req.AccountID, *last, upTo, f.Select(), replayPage)
		if err != nil {
			h.cfg.Log.Warn("event stream: replay", "err", err)
			return read, err
		}
		sent := 0
		for _, r := range rows {
			e := newEvent(r)
			*last = e.Pos
			if f.Match(e) {
				if err := out.write(e.Frame); err != nil {
					return read, err
				}
				sent++
			}
		}
		h.cfg.Metrics.Sent(sent)
		read += len(rows)
		if err := out.flush(); err != nil {
			return read, err
		}
		if len(rows) < replayPage {
			// The rest of the range holds nothing the stream may see: the
			// next replay (catchUp's second) starts past it.
			*last = upTo
			break
		}
		select {
		case <-sub.Done():
			return read, errEnded
		case <-h.Closing():
			return read, errEnded
		default:
		}
	}
	return read, nil
}

var errEnded = errors.New("stream: ended")

// live writes the hub's events after last until the stream ends (its
// credential's rechecks are the hub's: recheckLoop).
func (h *Hub) live(ctx context.Context, out *writer, req Request, sub *Sub, last store.EventPos, keepalive time.Duration) error {
	ka := time.NewTicker(keepalive)
	defer ka.Stop()
	closing := h.Closing()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-closing:
			return nil
		case <-sub.Done():
			return nil
		case <-ka.C:
			if out.write([]byte(": keepalive\n\n")) != nil || out.flush() != nil {
				return nil
			}
		case e := <-sub.Events():
			// Write what is waiting, then flush once.
			sent := 0
			for more := true; more; {
				// A stream resumed after an event another node had already
				// streamed may be behind its client: skip what it has.
				if e.Pos.After(last) {
					last = e.Pos
					if err := out.write(e.Frame); err != nil {
						return nil
					}
					sent++
				}
				select {
				case e = <-sub.Events():
				default:
					more = false
				}
			}
			h.cfg.Metrics.Sent(sent)
			if out.flush() != nil {
				return nil
			}
			ka.Reset(keepalive)
			if err := h.caughtUp(ctx, out, req, sub, &last); err != nil {
				return nil
			}
		case <-sub.Lagged():
			if err := h.caughtUp(ctx, out, req, sub, &last); err != nil {
				return nil
			}
		}
	}
}

// caughtUp brings a lagging stream back once it has written what its
// buffer held: the hub detached it when the buffer was full, so nothing
// more arrives there, and the database has the rest.
func (h *Hub) caughtUp(ctx context.Context, out *writer, req Request, sub *Sub, last *store.EventPos) error {
	if !sub.Lagging() || len(sub.Events()) > 0 {
		return nil // not lagging, or its buffer is still being written
	}
	_, err := h.catchUp(ctx, out, req, sub, last)
	return err
}

// writer writes to the client, each write under its own deadline, and
// tells the hub how long the write in progress has been blocked: through
// net/http's ResponseWriter, or a buffer on a direct stream's connection.
type writer struct {
	w        io.Writer
	flushFn  func() error
	deadline func(time.Time) error
	wait     time.Duration
	m        *Metrics
	sub      *Sub
}

func (o *writer) write(b []byte) error {
	now := time.Now()
	_ = o.deadline(now.Add(o.wait))
	o.sub.writing.Store(now.UnixNano())
	_, err := o.w.Write(b)
	o.sub.writing.Store(0)
	return o.stalled(err)
}

func (o *writer) flush() error {
	now := time.Now()
	_ = o.deadline(now.Add(o.wait))
	o.sub.writing.Store(now.UnixNano())
	err := o.flushFn()
	o.sub.writing.Store(0)
	return o.stalled(err)
}

func (o *writer) stalled(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		o.m.SlowWrite()
	}
	return err
}

func cmpDur(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
