// Package stream is the live event stream behind GET /events: one hub per
// node follows the outbox in the stream order (store.StreamEvents) and hands
// each event to the open streams that may see it; a stream that resumes
// replays from the database and then joins the hub with no gap and no
// duplicate at the seam.
package stream

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/store"
)

// Defaults of Config.
const (
	DefaultLimit  = 200
	DefaultBuffer = 256
	// The hub's poll for events it was not woken for: other nodes' on
	// PostgreSQL (within 100 ms, the design's bound), CLI writers' on
	// SQLite (a safety net; the server's own commits wake it at once).
	DefaultPollPostgres = 100 * time.Millisecond
	DefaultPollSQLite   = time.Second
	// readBatch is how many events the hub reads at a time.
	readBatch = 512
	// errorWait bounds the hub's wait between reads that fail.
	errorWait = 5 * time.Second
	// stallLimit: a stream whose buffer is full while its write has been
	// blocked this long has a client that stopped reading.
	stallLimit = time.Second
	// DefaultReplays is how many streams of one account may replay at once
	// on a node; DefaultReplayWait how long another waits for one of them
	// to finish before it is refused.
	DefaultReplays    = 2
	DefaultReplayWait = 2 * time.Second
)

// Config configures a Hub.
type Config struct {
	Store *store.Store
	Log   *slog.Logger
	// Limit is how many streams one account may hold open on this node
	// (default DefaultLimit); one credential (Request.Holder) may hold
	// half of them (at least one).
	Limit int
	// Replays is how many streams of one account may replay at once on this
	// node (default DefaultReplays); ReplayWait how long a resumed stream
	// waits for a replay to finish before it is refused (DefaultReplayWait).
	Replays    int
	ReplayWait time.Duration
	// Buffer is how many events a stream may have waiting to be written
	// (default DefaultBuffer). When it is full, a stream whose client
	// stopped reading is ended; one that only fell behind catches up from
	// the database.
	Buffer int
	// Poll is how often the hub looks for events it was not woken for
	// (default by engine).
	Poll    time.Duration
	Metrics *Metrics
	// Now is the clock (time.Now): a stream's retention and the keepalives
	// and stalls of direct streams are read on it, so that a test advances
	// it (storetest.Clock) instead of sleeping.
	Now func() time.Time
}

// ErrLimit is Open's error when the account holds Limit streams on this node.
var ErrLimit = errors.New("stream: too many open streams for the account")

// ErrShare is Open's error when the stream's credential holds its share of
// the account's Limit on this node.
var ErrShare = errors.New("stream: too many open streams for the credential")

// ErrReplayBusy is the error of a resumed stream that found the account's
// replays all in use for ReplayWait.
var ErrReplayBusy = errors.New("stream: too many replays for the account")

// ErrClosed is Open's error when the hub is not running (not started yet,
// or the server is shutting down).
var ErrClosed = errors.New("stream: not running")

// Hub follows the outbox and feeds the open streams of this node.
type Hub struct {
	// TestSignals lets tests wait for passes, rechecks, sweeps and replays
	// instead of sleeping.
	TestSignals HubSignals

	cfg  Config
	wake chan struct{}

	life   sync.Mutex // Start/Stop
	cancel context.CancelFunc
	done   chan struct{}
	// ctx is the hub's own context while it runs: the direct streams' pumps
	// read the database under it once their request's has ended.
	ctx   context.Context
	loops sync.WaitGroup // the sweep and the rechecks

	// The shortest keepalive and recheck period a stream asked for (Serve's
	// ServeConfig; in practice every stream of a server has the same): the
	// sweep and the rechecks run at them.
	keepalive, recheckEvery atomic.Int64
	// retime wakes the sweep (0) and the rechecks (1) when a period is
	// lowered.
	retime [2]chan struct{}

	// flush is the hub goroutine's list of direct streams with events
	// queued by the publish in progress.
	flush []*Sub

	mu      sync.Mutex
	running bool
	cursor  store.EventPos // every event up to here has been handed out
	// behind: the cursor was left where it was while no stream was open
	// (pass); toHead moves it to the head.
	behind bool
	// lastOf is each account's last event the hub has read since it began
	// following the outbox without a gap (at since, in era: Start, or
	// toHead after a jump), or what joinID found before since for an
	// account with none after: a new stream's first id without a query.
	// One entry per account with events, about 40 bytes each.
	lastOf map[int64]store.EventPos
	since  store.EventPos
	era    uint64
	subs   map[int64]map[*Sub]struct{} // attached streams by account
	// laggards are the streams detached for a full buffer, catching up.
	laggards map[*Sub]struct{}
	// all are the open streams, attached or not: the rechecks, the sweep
	// and the shutdown go through them.
	all  map[*Sub]struct{}
	open map[int64]int  // open streams by account, attached or replaying
	held map[holder]int // open streams by credential (Request.Holder)
	// replays are the replay slots of the accounts replaying on this node.
	replays map[int64]*replaySlots
	closing chan struct{} // closed when every stream must end
}

// New returns a stopped hub.
func New(cfg Config) *Hub {
	cfg.Limit = cmp.Or(cfg.Limit, DefaultLimit)
	cfg.Replays = cmp.Or(cfg.Replays, DefaultReplays)
	cfg.ReplayWait = cmp.Or(cfg.ReplayWait, DefaultReplayWait)
	cfg.Buffer = cmp.Or(cfg.Buffer, DefaultBuffer)
	if cfg.Poll == 0 {
		cfg.Poll = DefaultPollSQLite
		if cfg.Store.Engine() == store.Postgres {
			cfg.Poll = DefaultPollPostgres
		}
	}
	cfg.Log = cmp.Or(cfg.Log, slog.New(slog.DiscardHandler))
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	h := &Hub{cfg: cfg, wake: make(chan struct{}, 1), subs: map[int64]map[*Sub]struct{}{}, laggards: map[*Sub]struct{}{},
		all: map[*Sub]struct{}{}, open: map[int64]int{}, held: map[holder]int{}, replays: map[int64]*replaySlots{}, lastOf: map[int64]store.EventPos{}, closing: make(chan struct{}),
		ctx: context.Background()}
	h.retime = [2]chan struct{}{make(chan struct{}, 1), make(chan struct{}, 1)}
	h.keepalive.Store(int64(DefaultKeepalive))
	h.recheckEvery.Store(int64(DefaultRecheck))
	return h
}

// Start reads the head and follows the outbox from there until Stop.
func (h *Hub) Start(ctx context.Context) error {
	h.life.Lock()
	defer h.life.Unlock()
	if h.done != nil {
		return errors.New("stream: hub already started")
	}
	head, err := h.cfg.Store.StreamHead(ctx)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.cursor, h.running, h.closing = head, true, make(chan struct{})
	h.restart(head)
	h.mu.Unlock()
	runCtx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan struct{})
	h.mu.Lock()
	h.ctx = runCtx
	h.mu.Unlock()
	h.cfg.Store.OnStreamEvents(h.Wake)
	go h.run(runCtx, h.done)
	h.loops.Add(2)
	go func() { defer h.loops.Done(); h.sweepLoop(runCtx) }()
	go func() { defer h.loops.Done(); h.recheckLoop(runCtx) }()
	return nil
}

// Stop ends every stream and stops following the outbox.
func (h *Hub) Stop() {
	h.CloseStreams()
	h.life.Lock()
	defer h.life.Unlock()
	if h.done == nil {
		return
	}
	h.cfg.Store.OnStreamEvents(nil)
	h.cancel()
	<-h.done
	h.loops.Wait()
	h.done = nil
}

// CloseStreams ends every open stream and refuses new ones: the server is
// shutting down, and its clients should reconnect to another node now
// rather than hold the shutdown until its deadline.
func (h *Hub) CloseStreams() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.running {
		return
	}
	h.running = false
	close(h.closing)
	// Every open stream, attached or not (replaying, catching up): a
	// direct stream's connection is closed here, as its handler is gone.
	for s := range h.all {
		if s.direct != nil {
			h.dropLocked(s, endShutdown)
		} else {
			s.end(endShutdown)
		}
	}
	clear(h.subs)
}

// Wake makes the hub read the outbox now: a commit of this process wrote
// events. It returns at once.
func (h *Hub) Wake() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Cursor is the position up to which the hub has handed out events.
func (h *Hub) Cursor() store.EventPos {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cursor
}

// Closing is closed when every stream must end.
func (h *Hub) Closing() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closing
}

func (h *Hub) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	wait := h.cfg.Poll
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
		case <-timer.C:
		}
		began := h.cfg.Now()
		held, err := h.pass(ctx)
		h.TestSignals.Pass.Signal(Round{Began: began, Err: err})
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			// The database is away: retry, backing off up to errorWait so
			// that an outage is not logged ten times a second.
			wait = min(max(2*wait, h.cfg.Poll), errorWait)
			h.cfg.Log.Warn("event stream: reading the outbox failed; retrying", "err", err, "retry_in", wait)
		case held:
			// A transaction still running holds events back (PostgreSQL):
			// look again soon, 1 ms doubling, like the dispatcher.
			if wait >= h.cfg.Poll {
				wait = time.Millisecond
			} else {
				wait = min(2*wait, h.cfg.Poll)
			}
		default:
			wait = h.cfg.Poll
		}
		timer.Reset(wait)
	}
}

// pass hands out every event past the cursor that can be read now.
func (h *Hub) pass(ctx context.Context) (held bool, err error) {
	// Every pass, events or not (at least every Poll).
	h.mu.Lock()
	h.sweepLaggards()
	if len(h.open) == 0 {
		// No stream is open on this node: every commit of a send wakes the
		// hub, and reading and rendering its events for nobody was a tenth
		// of a send's CPU; reading the head instead, 3%. The cursor is left
		// behind, and the first stream to open brings it to the head
		// (toHead) before it attaches.
		h.behind = true
		h.mu.Unlock()
		return false, nil
	}
	behind := h.behind
	h.mu.Unlock()
	if behind {
		if err := h.toHead(ctx); err != nil {
			return false, err
		}
	}
	for {
		h.mu.Lock()
		cursor := h.cursor
		h.mu.Unlock()
		rows, held, err := h.cfg.Store.StreamEvents(ctx, cursor, readBatch)
		if err != nil {
			return false, err
		}
		h.publish(rows)
		h.flushDirect()
		if len(rows) > 0 {
			h.cfg.Metrics.FannedOut(time.Since(rows[0].CreatedAt))
		}
		if len(rows) < readBatch {
			return held, nil
		}
	}
}

// publish hands events, read past the cursor, to the attached streams that
// may see them and moves the cursor past them, under the lock a stream
// attaches under: a stream attached at cursor c receives exactly the
// events after c. An event is rendered only for an account with a stream
// attached.
func (h *Hub) publish(rows []store.StreamEvent) {
	if len(rows) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range rows {
		r := &rows[i]
		if !r.Pos.After(h.cursor) {
			continue // Start's head raced a wake: already past it
		}
		h.cursor = r.Pos
		h.lastOf[r.AccountID] = r.Pos
		subs := h.subs[r.AccountID]
		if len(subs) == 0 {
			continue
		}
		e := newEvent(*r)
		for s := range subs {
			if !s.filter.Load().Match(e) {
				continue
			}
			if s.direct != nil {
				h.enqueue(s, e)
				continue
			}
			select {
			case s.ch <- e:
			default:
				// The buffer is full: memory per stream stays bounded
				// either way. A client whose write has been blocked for
				// stallLimit stopped reading: end its stream (it resumes
				// with Last-Event-ID and loses nothing). Otherwise it only
				// fell behind a burst (a batch after the horizon held
				// events back, a scheduling hiccup): detach it, and it
				// reads what it missed from the database and attaches again.
				h.detach(s)
				if s.stalled(stallLimit) {
					h.cutSlow(s)
					continue
				}
				h.cfg.Metrics.lagged.Inc()
				s.lagging.Store(true)
				h.laggards[s] = struct{}{}
				select {
				case s.lagged <- struct{}{}:
				default:
				}
			}
		}
	}
	h.sweepLaggards()
}

// sweepLaggards ends the lagging streams whose write stays blocked: their
// clients stopped reading. h.mu held.
func (h *Hub) sweepLaggards() {
	for s := range h.laggards {
		if s.stalled(stallLimit) {
			h.cutSlow(s)
		}
	}
}

// cutSlow ends a stream whose client stopped reading, and its write in
// progress with it; h.mu held.
func (h *Hub) cutSlow(s *Sub) {
	delete(h.laggards, s)
	h.cfg.Metrics.slow.Inc()
	if s.direct != nil {
		h.dropLocked(s, endSlow)
		return
	}
	s.end(endSlow)
	if fn := s.cut.Load(); fn != nil {
		(*fn)()
	}
}

// Open counts a new stream of the account toward its limit. The stream
// receives no live events until Attach.
func (h *Hub) Open(accountID int64, f *Filter) (*Sub, error) {
	return h.openFor(accountID, f, nil)
}

// openFor is Open for a request: its recheck joins the hub's rounds.
func (h *Hub) openFor(accountID int64, f *Filter, req *Request) (*Sub, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.running {
		return nil, ErrClosed
	}
	// A credential at its share is told so first: closing one of its own
	// streams is what it can do.
	var who holder
	if req != nil && req.Holder != "" {
		who = holder{accountID, req.Holder}
		if h.held[who] >= h.Share() {
			return nil, ErrShare
		}
	}
	if h.open[accountID] >= h.cfg.Limit {
		return nil, ErrLimit
	}
	if who.who != "" {
		h.held[who]++
	}
	h.open[accountID]++
	h.cfg.Metrics.open.Inc()
	s := &Sub{hub: h, account: accountID, holder: who, ch: make(chan *Event, h.cfg.Buffer), done: make(chan struct{}), lagged: make(chan struct{}, 1)}
	s.filter.Store(f)
	if req != nil && req.Recheck != nil {
		s.recheck, s.recheckKey = req.Recheck, req.RecheckKey
	}
	h.all[s] = struct{}{}
	if h.behind {
		// The cursor stayed behind while no stream was open: a new stream
		// attaches at the head, not at events written before it came.
		ctx := h.ctx
		h.mu.Unlock()
		err := h.toHead(ctx)
		h.mu.Lock()
		if err != nil {
			s.closeLocked()
			return nil, err
		}
	}
	return s, nil
}

// toHead moves a cursor left behind (behind) to the head. Every event up
// to the head was written while no stream was attached (a stream attaches
// only once its Open, which waits for this, has returned), so there is no
// one to hand them to.
func (h *Hub) toHead(ctx context.Context) error {
	head, err := h.cfg.Store.StreamHead(ctx)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.behind {
		if head.After(h.cursor) {
			h.cursor = head
			h.restart(head)
		}
		h.behind = false
	}
	return nil
}

// restart forgets what the hub knew of each account's last event: it
// follows the outbox from head now, past events it never read. h.mu held.
func (h *Hub) restart(head store.EventPos) {
	h.lastOf, h.since = map[int64]store.EventPos{}, head
	h.era++
}

// joinID is the id of the account's last event at or before at, where a
// new stream joined the live events (0: none): its first message carries
// it, so that a client that receives no event before it disconnects still
// resumes exactly where it joined. Known to the hub for an account with
// events since it began following; otherwise read once and kept.
func (h *Hub) joinID(ctx context.Context, accountID int64, at store.EventPos) (int64, error) {
	h.mu.Lock()
	p, known := h.lastOf[accountID]
	era, since := h.era, h.since
	h.mu.Unlock()
	switch {
	case known && !p.After(at):
		return p.ID, nil
	case known || since.After(at):
		// The account wrote after the stream joined, or the hub jumped
		// past at since (since only moves forward): read it for at alone.
		p, err := h.cfg.Store.AccountLastEvent(ctx, accountID, at)
		return p.ID, err
	}
	// No event of the account since the hub began following: its last up
	// to at is its last up to since.
	p, err := h.cfg.Store.AccountLastEvent(ctx, accountID, since)
	if err != nil {
		return 0, err
	}
	h.mu.Lock()
	if _, ok := h.lastOf[accountID]; !ok && h.era == era {
		h.lastOf[accountID] = p
	}
	h.mu.Unlock()
	return p.ID, nil
}

// detach removes s from the attached streams; h.mu held.
func (h *Hub) detach(s *Sub) {
	delete(h.laggards, s)
	if m := h.subs[s.account]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(h.subs, s.account)
		}
	}
}

// Limit is how many streams an account may hold open on this node.
func (h *Hub) Limit() int { return h.cfg.Limit }

// Share is how many streams one credential may hold open on this node: half
// the account's Limit (at least one), so that one key cannot take every
// stream of its account from the account's people (docs/decisions.md,
// "One credential holds half the streams").
func (h *Hub) Share() int { return max(h.cfg.Limit/2, 1) }

// holder is a credential of an account, for its share of the limit.
type holder struct {
	account int64
	who     string
}

// replaySlots are an account's replays in progress on this node (one token
// in slots each) and those waiting for one to end: users counts both, and
// the last to leave removes the entry.
type replaySlots struct {
	slots chan struct{}
	users int
}

// startReplay takes one of the account's replay slots, waiting up to
// ReplayWait for one (ErrReplayBusy past it), and returns the function that
// gives it back (safe to call more than once). A replay reads and writes
// the account's events since the id it resumes after: a bound on how many
// run at once is a bound on the CPU one account's reconnections take.
func (h *Hub) startReplay(ctx context.Context, account int64) (func(), error) {
	h.mu.Lock()
	r := h.replays[account]
	if r == nil {
		r = &replaySlots{slots: make(chan struct{}, h.cfg.Replays)}
		h.replays[account] = r
	}
	r.users++
	h.mu.Unlock()
	leave := func() {
		h.mu.Lock()
		if r.users--; r.users == 0 {
			delete(h.replays, account)
		}
		h.mu.Unlock()
	}
	wait := time.NewTimer(h.cfg.ReplayWait)
	defer wait.Stop()
	select {
	case r.slots <- struct{}{}:
		h.TestSignals.ReplayStarted.Signal(account)
		return sync.OnceFunc(func() { <-r.slots; leave() }), nil
	case <-wait.C:
		leave()
		return nil, ErrReplayBusy
	case <-ctx.Done():
		leave()
		return nil, ctx.Err()
	}
}

// Buffer is how many events a stream may have waiting.
func (h *Hub) Buffer() int { return h.cfg.Buffer }

// Metrics are the hub's metrics.
func (h *Hub) Metrics() *Metrics { return h.cfg.Metrics }
