package carriers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/carrier"
	"switchboard/internal/store"
)

// A connection's queue and binds (docs/decisions.md, "Carrier connections:
// the queue and the binds"). A connection with limits, and every smpp
// connection, has binds: slots leased in the database (carrier_binds) that
// the cluster never holds more of than --binds; the node holding one opens
// it (an SMPP bind; for an HTTP provider, the right to send). A send goes
// straight to the carrier when this node can send it now and nothing waits
// before it; otherwise it waits in the durable queue (carrier_queue) in
// turn, and a node holding a bind sends it, paced to --throughput, and
// reports its outcome to the sink's Outcomes.

// Lease timings: a bind is renewed every leaseEvery for bindLease, so a
// node that stops gives its binds up within bindLease, and another takes
// them at its next pass: within bindLease+leaseEvery (the 15 s).
const (
	bindLease  = 10 * time.Second
	leaseEvery = 3 * time.Second
	// queuePoll is how often a node holding binds looks for messages other
	// nodes queued (its own wake it at once).
	queuePoll = 250 * time.Millisecond
	// QueueMaxAge is how long a message may wait for its turn (a connection
	// down, a long backlog): past it, it fails, uncharged, with event
	// message.failed, rather than reach a phone hours late.
	QueueMaxAge = time.Hour
	// sendTimeout bounds one queued message's send.
	sendTimeout = 30 * time.Second
	// paceCatchUp is how far behind its schedule --throughput's pacing
	// may catch up (see pace).
	paceCatchUp = time.Second
	// httpWindow is how many queued messages an HTTP provider's sender
	// sends at once.
	httpWindow = 16
)

// errLater marks a send the carrier certainly did not take and that may be
// tried again later (no bind up, still throttled): a queued message goes
// back in its turn instead of failing.
var errLater = errors.New("try again later")

// limits are a connection's binds and throughput limits.
type limits struct {
	binds      int           // slots the cluster may hold (SMPP binds)
	throughput int           // messages a second through the connection; 0: none
	numberStep time.Duration // the least time between two messages from one number; 0: none
}

// limited reports whether sends wait their turn in the queue rather than go
// straight to the carrier.
func (l limits) limited() bool { return l.throughput > 0 || l.numberStep > 0 }

// limitsOf reads the limits' settings; binds is whether the kind takes
// --binds.
func limitsOf(settings map[string]string, binds bool) (limits, error) {
	var l limits
	var err error
	l.binds = 1
	if binds {
		if l.binds, err = wholeSetting(settings, "binds", 1, 64, 1); err != nil {
			return l, err
		}
	}
	if l.throughput, err = wholeSetting(settings, "throughput", 0, 100_000, 0); err != nil {
		return l, err
	}
	if v := settings["number-throughput"]; v != "" {
		perSecond, err := thousandths(v)
		if err != nil || perSecond > 1_000_000 {
			return l, fmt.Errorf("--number-throughput: want messages a second from one number, such as 1 or 0.5 (at most 1000, 0 for no limit), not %q", v)
		}
		if perSecond > 0 {
			l.numberStep = time.Duration(int64(time.Second) * 1000 / perSecond)
		}
	}
	return l, nil
}

// thousandths parses a decimal with at most three places ("0.5", "2") as a
// whole number of thousandths: no float for a rate the cluster shares.
func thousandths(v string) (int64, error) {
	whole, frac, _ := strings.Cut(v, ".")
	if whole == "" || len(frac) > 3 || strings.HasPrefix(whole, "+") || strings.HasPrefix(frac, "+") || strings.HasPrefix(frac, "-") {
		return 0, errors.New("not a decimal")
	}
	w, err := strconv.ParseUint(whole, 10, 31)
	if err != nil {
		return 0, err
	}
	f := uint64(0)
	if frac != "" {
		if f, err = strconv.ParseUint(frac+strings.Repeat("0", 3-len(frac)), 10, 16); err != nil {
			return 0, err
		}
	}
	return int64(w*1000 + f), nil
}

// wholeSetting reads setting name as a whole number from lo to hi, def when
// not given.
func wholeSetting(settings map[string]string, name string, lo, hi, def int) (int, error) {
	v := settings[name]
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("--%s: want a whole number from %d to %d, not %q", name, lo, hi, v)
	}
	return n, nil
}

// binder is the part of a connection's driver that the queue drives.
type binder interface {
	carrier.Carrier
	open(slot int) error // this node now holds slot: start its bind
	close(slot int)      // it no longer does: stop it
	up() bool            // one of this node's binds can send now
	inFlight(slot int) int
	stop()
	// accepts refuses at once (carrier.ErrUnavailable) what the
	// connection can never send, before it is queued.
	accepts(m carrier.Message) error
}

// httpBinder drives an HTTP provider's connection from its queue: its one
// "bind" is the right to send the connection's queued messages, which
// keeps --throughput across nodes; sending needs no link.
type httpBinder struct {
	carrier.Carrier
	n atomic.Int64
}

func (h *httpBinder) Send(ctx context.Context, m carrier.Message) (carrier.Accepted, error) {
	h.n.Add(1)
	defer h.n.Add(-1)
	return h.Carrier.Send(ctx, m)
}
func (h *httpBinder) open(int) error   { return nil }
func (h *httpBinder) close(int)        {}
func (h *httpBinder) up() bool         { return true }
func (h *httpBinder) inFlight(int) int { return int(h.n.Load()) }
func (h *httpBinder) stop()            {}
func (h *httpBinder) accepts(m carrier.Message) error {
	if len(m.To) != 1 {
		return fmt.Errorf("%w: a provider's connection sends to one number (no group texts)", carrier.ErrUnavailable)
	}
	return nil
}

// queue is a connection's binds on this node and its durable queue.
type queue struct {
	r     *Router
	conn  store.CarrierConnection
	lim   limits
	drv   binder
	owner string
	log   *slog.Logger

	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
	sends  sync.WaitGroup
	busy   atomic.Int64 // messages claimed and not yet settled

	mu      sync.Mutex
	held    map[int]time.Time // slots this node holds → when last renewed
	live    int               // binds the cluster holds, as last counted
	waiting int               // messages waiting their turn, as last counted
	next    time.Time         // pacing: the next send's time on this node; zero once the queue ran empty
	last    time.Time         // pacing: the last send's time
}

func newQueue(r *Router, c store.CarrierConnection, lim limits, drv binder, log *slog.Logger) *queue {
	ctx, cancel := context.WithCancel(context.Background())
	q := &queue{r: r, conn: c, lim: lim, drv: drv, owner: r.cfg.Node + "/" + strconv.FormatInt(time.Now().UnixNano(), 36), log: log,
		wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{}), held: map[int]time.Time{}}
	go q.run(ctx)
	return q
}

// direct reports whether a send may go straight to the carrier: no limit
// to keep, a bind of this node's up, and nothing queued before it.
func (q *queue) direct() bool {
	if q.lim.limited() {
		return false
	}
	q.mu.Lock()
	ok := len(q.held) > 0 && q.waiting == 0
	q.mu.Unlock()
	return ok && q.drv.up()
}

// enqueue keeps m in the connection's queue, in its turn: carrier.ErrQueued
// once it is durable.
func (q *queue) enqueue(ctx context.Context, m carrier.Message) error {
	payload, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("%w: %v", carrier.ErrUnavailable, err)
	}
	if _, err := q.r.cfg.Store.EnqueueCarrier(ctx, q.conn.ID, m.ID, payload, m.From, q.lim.numberStep); err != nil {
		// The insert may have committed before the error: the message may
		// be queued, so it is not refused.
		return fmt.Errorf("%w: queueing for connection %q: %v", carrier.ErrUnknown, q.conn.Name, err)
	}
	q.mu.Lock()
	q.waiting++
	q.mu.Unlock()
	q.poke()
	return carrier.ErrQueued
}

func (q *queue) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// run keeps the leases and sends what is due, until stopped.
func (q *queue) run(ctx context.Context) {
	defer close(q.done)
	leases := time.NewTicker(leaseEvery)
	defer leases.Stop()
	q.leasePass(ctx)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		wait := queuePoll
		if q.holds() {
			wait = q.sendDue(ctx)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-leases.C:
			q.leasePass(ctx)
		case <-q.wake:
		case <-timer.C:
		}
	}
}

func (q *queue) holds() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.held) > 0
}

// leasePass renews this node's binds, stops those it lost, takes one more
// when the cluster holds fewer than --binds, and counts the cluster's.
func (q *queue) leasePass(ctx context.Context) {
	st := q.r.cfg.Store
	q.mu.Lock()
	held := make(map[int]time.Time, len(q.held))
	for k, v := range q.held {
		held[k] = v
	}
	q.mu.Unlock()
	for slot, renewed := range held {
		ok, err := st.RenewCarrierBind(ctx, q.conn.ID, slot, q.owner, bindLease, q.drv.inFlight(slot))
		switch {
		case err != nil && time.Since(renewed) < bindLease-leaseEvery:
			q.log.Warn("carrier bind: lease not renewed; trying again", "slot", slot, "err", err)
			continue
		case err != nil || !ok:
			// Another node may take it now: this one must have stopped
			// before its lease ends.
			q.log.Warn("carrier bind: lease lost; unbinding", "slot", slot, "err", err)
			q.drop(slot)
			continue
		}
		q.mu.Lock()
		q.held[slot] = time.Now()
		q.mu.Unlock()
	}
	q.mu.Lock()
	full := len(q.held) >= q.lim.binds
	q.mu.Unlock()
	if !full {
		q.takeOne(ctx)
	}
	if binds, err := st.CarrierBinds(ctx); err == nil {
		n := 0
		for _, b := range binds {
			if b.CarrierID == q.conn.ID {
				n++
			}
		}
		q.mu.Lock()
		q.live = n
		q.mu.Unlock()
	}
	if ids, err := st.DropStaleCarrierSends(ctx); err == nil && len(ids) > 0 {
		q.log.Warn("queued messages whose node stopped while sending them: left to their receipts or the reconciler, never sent twice", "count", len(ids))
	}
}

// takeOne takes a free slot, if the connection has one, and opens its bind.
func (q *queue) takeOne(ctx context.Context) {
	st := q.r.cfg.Store
	slot, ok, err := st.TakeCarrierBind(ctx, q.conn.ID, q.lim.binds, q.owner, bindLease)
	switch {
	case err != nil:
		q.log.Warn("carrier bind: no lease taken", "err", err)
		return
	case !ok:
		return // every slot is held
	}
	if err := q.drv.open(slot); err != nil {
		q.log.Error("carrier bind: not opened", "slot", slot, "err", err)
		st.ReleaseCarrierBind(ctx, q.conn.ID, slot, q.owner)
		return
	}
	q.mu.Lock()
	q.held[slot] = time.Now()
	q.mu.Unlock()
	q.log.Info("carrier bind taken", "slot", slot)
}

// drop stops slot's bind, no longer this node's.
func (q *queue) drop(slot int) {
	q.mu.Lock()
	delete(q.held, slot)
	q.mu.Unlock()
	q.drv.close(slot)
}

// share is this node's part of the connection's throughput, in messages a
// second: the binds it holds of those the cluster holds.
func (q *queue) share() float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	live := max(q.live, len(q.held))
	return float64(q.lim.throughput) * float64(len(q.held)) / float64(live)
}

// sendDue claims the messages due now and sends them, paced, and says how
// long to wait before looking again.
func (q *queue) sendDue(ctx context.Context) time.Duration {
	st := q.r.cfg.Store
	if !q.drv.up() {
		return queuePoll
	}
	window := httpWindow
	if s, ok := q.drv.(*smppConn); ok {
		window = s.set.cfg.Window * max(1, len(q.held))
	}
	// At most a poll's time here, so that the leases are renewed between.
	for until := time.Now().Add(queuePoll); ctx.Err() == nil && time.Now().Before(until); {
		// No more claimed than the binds' windows take: a claimed message
		// waiting for room would be lost to the reconciler by a crash.
		limit := window - int(q.busy.Load())
		if limit <= 0 {
			break // a send that ends wakes the loop
		}
		if q.lim.throughput > 0 {
			// Claimed rows are sent within about a tenth of a second: a
			// node that stops loses (leaves to the reconciler) no more.
			limit = min(limit, max(1, int(q.share()/10)))
		}
		rows, err := st.ClaimCarrierQueue(ctx, q.conn.ID, q.owner, limit, bindLease)
		if err != nil {
			q.log.Warn("carrier queue: claim failed", "err", err)
			return queuePoll
		}
		if len(rows) == 0 {
			q.mu.Lock()
			q.next = time.Time{} // idle: pace starts afresh
			q.mu.Unlock()
			break
		}
		for _, row := range rows {
			if err := q.pace(ctx); err != nil {
				q.putBack(row, time.Now())
				continue
			}
			q.busy.Add(1)
			q.sends.Add(1)
			go func() {
				defer q.sends.Done()
				q.send(row)
				q.busy.Add(-1)
				q.poke()
			}()
		}
		if len(rows) < limit {
			break
		}
	}
	next, waiting, ok, err := st.CarrierQueueNext(ctx, q.conn.ID)
	q.mu.Lock()
	q.waiting = waiting
	q.mu.Unlock()
	if err != nil || !ok {
		return queuePoll
	}
	return min(max(time.Until(next), time.Millisecond), queuePoll)
}

// pace waits for this node's next send time under --throughput.
func (q *queue) pace(ctx context.Context) error {
	rate := q.share()
	if rate <= 0 {
		return nil
	}
	step := time.Duration(float64(time.Second) / rate)
	q.mu.Lock()
	now := time.Now()
	var at time.Time
	if q.next.IsZero() {
		// The queue was empty: start at the rate, one step after the last
		// send, with no burst of the time not used.
		at = now
		if !q.last.IsZero() {
			at = later(now, q.last.Add(step))
		}
	} else {
		// Busy: a send that woke late (a loaded machine) is caught up, or
		// the rate would fall with the load; at most paceCatchUp of it.
		at = q.next
		if now.Sub(at) > paceCatchUp {
			at = now
		}
	}
	q.last, q.next = at, at.Add(step)
	q.mu.Unlock()
	return sleep(ctx, time.Until(at))
}

// send hands one queued message to the carrier and records its outcome.
func (q *queue) send(row store.CarrierQueued) {
	ctx := context.Background()
	outcomes, _ := q.r.sink.(carrier.Outcomes)
	var m carrier.Message
	if err := json.Unmarshal(row.Payload, &m); err != nil || outcomes == nil {
		q.log.Error("carrier queue: message not sendable; left to the reconciler", "message_id", row.MessageID, "err", err)
		q.done1(row)
		return
	}
	if time.Since(row.CreatedAt) > QueueMaxAge {
		q.refuse(outcomes, row, fmt.Sprintf("not sent: it waited %s for connection %q", QueueMaxAge, q.conn.Name))
		return
	}
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	acc, err := q.drv.Send(sctx, m)
	cancel()
	switch {
	case err == nil:
		if err := outcomes.Accepted(ctx, m.ID, acc.Ref); err != nil {
			q.log.Error("carrier queue: acceptance not recorded; a receipt will", "message_id", m.ID, "err", err)
		}
		q.done1(row)
	case errors.Is(err, errLater):
		backoff := min(time.Second<<min(row.Tries, 5), 30*time.Second)
		q.putBack(row, time.Now().Add(backoff))
	case errors.Is(err, carrier.ErrUnavailable):
		q.refuse(outcomes, row, err.Error())
	default:
		// The carrier may have it: never sent again; its receipt charges
		// it, or the reconciler abandons it.
		q.log.Warn("carrier queue: outcome unknown", "message_id", m.ID, "err", err)
		q.done1(row)
	}
}

func (q *queue) refuse(outcomes carrier.Outcomes, row store.CarrierQueued, reason string) {
	if err := outcomes.Refused(context.Background(), row.MessageID, reason); err != nil {
		q.log.Error("carrier queue: refusal not recorded; left to the reconciler", "message_id", row.MessageID, "err", err)
	}
	q.done1(row)
}

func (q *queue) done1(row store.CarrierQueued) {
	if err := q.r.cfg.Store.DoneCarrierQueued(context.Background(), row.ID); err != nil {
		// Left marked sending: dropped once its lease ends, never resent.
		q.log.Warn("carrier queue: sent message not removed", "message_id", row.MessageID, "err", err)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// putBack returns a claimed message to its queue, due at due.
func (q *queue) putBack(row store.CarrierQueued, due time.Time) {
	if _, err := q.r.cfg.Store.ReleaseCarrierQueued(context.Background(), row.ID, q.owner, due); err != nil {
		q.log.Warn("carrier queue: message not put back; left to the reconciler", "message_id", row.MessageID, "err", err)
	}
}

// close stops the queue: no more claims, the sends under way finished,
// the binds given up at once so that another node takes them.
func (q *queue) close() {
	q.cancel()
	<-q.done
	q.sends.Wait()
	q.mu.Lock()
	slots := make([]int, 0, len(q.held))
	for s := range q.held {
		slots = append(slots, s)
	}
	q.held = map[int]time.Time{}
	q.mu.Unlock()
	q.drv.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range slots {
		if err := q.r.cfg.Store.ReleaseCarrierBind(ctx, q.conn.ID, s, q.owner); err != nil {
			q.log.Warn("carrier bind: not given up; it ends with its lease", "slot", s, "err", err)
		}
	}
}
