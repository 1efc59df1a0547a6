package carriers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"switchboard/internal/background"
	"switchboard/internal/carrier"
	"switchboard/internal/carrier/kannel"
	"switchboard/internal/carrier/sim"
	"switchboard/internal/store"
)

// A connection's states, as "carrier list" shows them. A connection over
// HTTP (sim, kannel) has no link to keep: it is ready once built.
const (
	StateReady    = "ready"
	StateDown     = "down"
	StateDisabled = "disabled"
	// StateStandby: this node holds none of the connection's binds (other
	// nodes hold them all); its sends wait in the queue for theirs.
	StateStandby = "standby"
)

// Config is what a Router needs.
type Config struct {
	Store *store.Store
	// Default is the server-wide gateway (--carrier), for lines without a
	// connection.
	Default carrier.Carrier
	// PublicURL is the server's public base URL: a connection's callback
	// URLs are PublicURL/carrier/NAME/….
	PublicURL string
	// Node names this process in the state it records.
	Node string
	// Interval is how often the connections are read again (default 2 s):
	// a change made by the CLI or another node takes effect within it.
	Interval time.Duration
	Log      *slog.Logger
}

// Router is the carrier every send goes through: it hands a message to the
// connection of the line it is sent from (carrier.Message.From), or to the
// server-wide gateway when the line names none.
type Router struct {
	cfg  Config
	sink carrier.Sink

	mu    sync.RWMutex
	conns map[int64]*running
	names map[string]*running
}

// running is one connection's driver, built from its stored settings.
type running struct {
	conn    store.CarrierConnection
	send    carrier.Carrier // nil when disabled or not built
	handler http.Handler    // its callbacks, under /carrier/NAME/
	queue   *queue          // its binds and queue; nil: every send goes straight to it
	stop    func()
	err     error // why it is down
	linked  bool  // it keeps a link, whose client reports its own state (setState)

	// What this node last recorded of it (under Router.mu).
	state, lastError string
	since            time.Time
}

// State is a connection's state as this node runs it (readyz, metrics).
type State struct {
	Name      string    `json:"name"`
	Kind      string    `json:"kind"`
	State     string    `json:"state"`
	Since     time.Time `json:"since"`
	LastError string    `json:"lastError,omitempty"`
}

// States lists this node's connections and their states, by name.
func (r *Router) States() []State {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]State, 0, len(r.names))
	for _, c := range r.names {
		st := State{Name: c.conn.Name, Kind: c.conn.Kind, State: cmp.Or(c.state, "starting"), Since: c.since, LastError: c.lastError}
		if c.linked && c.queue != nil && !c.queue.holds() {
			// The cluster's binds are held by other nodes: this one queues
			// its sends for them.
			st.State, st.Since, st.LastError = StateStandby, time.Time{}, ""
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b State) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// New returns a router; Attach gives it the sink before it runs.
func New(cfg Config) *Router {
	if cfg.Interval <= 0 {
		cfg.Interval = 2 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Router{cfg: cfg, conns: map[int64]*running{}, names: map[string]*running{}}
}

// Attach sets where the connections report receipts and inbound texts.
func (r *Router) Attach(sink carrier.Sink) { r.sink = sink }

// Send implements carrier.Carrier.
func (r *Router) Send(ctx context.Context, m carrier.Message) (carrier.Accepted, error) {
	table, err := r.cfg.Store.LineCarriers(ctx)
	if err != nil {
		return carrier.Accepted{}, fmt.Errorf("%w: which connection line %s uses: %v", carrier.ErrUnavailable, m.From, err)
	}
	id, ok := table[m.From]
	if !ok {
		return r.cfg.Default.Send(ctx, m)
	}
	r.mu.RLock()
	c := r.conns[id]
	r.mu.RUnlock()
	switch {
	case c == nil:
		return carrier.Accepted{}, fmt.Errorf("%w: line %s's carrier connection is not running on this node yet", carrier.ErrUnavailable, m.From)
	case c.conn.Disabled:
		return carrier.Accepted{}, fmt.Errorf("%w: carrier connection %q is disabled", carrier.ErrUnavailable, c.conn.Name)
	case c.send == nil:
		return carrier.Accepted{}, fmt.Errorf("%w: carrier connection %q is down: %v", carrier.ErrUnavailable, c.conn.Name, c.err)
	case c.queue == nil:
		return c.send.Send(ctx, m)
	case !c.queue.direct():
		if err := c.queue.drv.accepts(m); err != nil {
			return carrier.Accepted{}, err
		}
		return carrier.Accepted{}, c.queue.enqueue(ctx, m)
	}
	acc, err := c.send.Send(ctx, m)
	if errors.Is(err, errLater) {
		// Certainly not taken, and takeable later (the bind dropped, still
		// throttled): it waits in the queue rather than fail.
		return carrier.Accepted{}, c.queue.enqueue(context.WithoutCancel(ctx), m)
	}
	return acc, err
}

// CarriesMMS implements carrier.MMSChecker: a line on an smpp connection
// sends text only.
func (r *Router) CarriesMMS(ctx context.Context, line string) error {
	table, err := r.cfg.Store.LineCarriers(ctx)
	if err != nil {
		return nil // the send finds out
	}
	id, ok := table[line]
	if !ok {
		return nil
	}
	r.mu.RLock()
	c := r.conns[id]
	r.mu.RUnlock()
	if c != nil && c.conn.Kind == "smpp" {
		return fmt.Errorf("line %s sends through SMPP connection %q, which carries text only: send it without attachments, to one number", line, c.conn.Name)
	}
	return nil
}

// Handler serves the connections' callbacks: /carrier/NAME/… goes to
// connection NAME's driver, with the prefix stripped.
func (r *Router) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rest := strings.TrimPrefix(req.URL.Path, "/carrier/")
		name, _, _ := strings.Cut(rest, "/")
		r.mu.RLock()
		c := r.names[name]
		r.mu.RUnlock()
		if c == nil || c.handler == nil {
			http.NotFound(w, req)
			return
		}
		http.StripPrefix("/carrier/"+name, c.handler).ServeHTTP(w, req)
	})
}

// Sync reads the connections and brings the running ones in line: a new
// or changed connection is (re)built, a removed one stopped.
func (r *Router) Sync(ctx context.Context) error {
	all, err := r.cfg.Store.Carriers(ctx)
	if err != nil {
		return err
	}
	keep := map[int64]bool{}
	for _, c := range all {
		keep[c.ID] = true
		r.mu.RLock()
		old := r.conns[c.ID]
		r.mu.RUnlock()
		if old != nil && old.conn.UpdatedAt.Equal(c.UpdatedAt) {
			continue
		}
		if old != nil && old.queue != nil {
			// Its binds given up first, so that the new one takes them at
			// once; sends meanwhile wait in the queue.
			old.stop()
			old.stop = nil
		}
		next := r.build(c)
		r.mu.Lock()
		r.conns[c.ID] = next
		if old != nil {
			delete(r.names, old.conn.Name)
		}
		r.names[c.Name] = next
		r.mu.Unlock()
		if old != nil && old.stop != nil {
			old.stop()
		}
		r.report(ctx, next)
	}
	r.mu.Lock()
	var stopped []*running
	for id, c := range r.conns {
		if !keep[id] {
			delete(r.conns, id)
			delete(r.names, c.conn.Name)
			stopped = append(stopped, c)
		}
	}
	r.mu.Unlock()
	for _, c := range stopped {
		if c.stop != nil {
			c.stop()
		}
	}
	return nil
}

// report records a connection's state where "carrier list" reads it,
// once built: a connection that keeps a link reports its own as it changes.
func (r *Router) report(ctx context.Context, c *running) {
	state, lastErr := StateReady, ""
	switch {
	case c.conn.Disabled:
		state = StateDisabled
	case c.err != nil:
		state, lastErr = StateDown, c.err.Error()
	case c.linked:
		return
	}
	if state == c.conn.State && lastErr == c.conn.LastError {
		r.mu.Lock()
		c.state, c.lastError, c.since = state, lastErr, c.conn.StateSince
		r.mu.Unlock()
		return
	}
	r.record(ctx, c.conn, state, lastErr)
}

// setState is a linked connection's report of its link.
func (r *Router) setState(c store.CarrierConnection, state, lastErr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.record(ctx, c, state, lastErr)
}

func (r *Router) record(ctx context.Context, c store.CarrierConnection, state, lastErr string) {
	r.mu.Lock()
	if run := r.conns[c.ID]; run != nil {
		if run.state != state || run.since.IsZero() {
			run.state, run.since = state, time.Now()
		}
		run.lastError = lastErr
	}
	r.mu.Unlock()
	if err := r.cfg.Store.SetCarrierState(ctx, c.ID, state, lastErr, r.cfg.Node); err != nil {
		r.cfg.Log.Warn("carrier connection: state not recorded", "connection", c.Name, "err", err)
	}
	if state == StateDown && lastErr != "" {
		r.cfg.Log.Error("carrier connection down", "connection", c.Name, "err", lastErr)
	}
}

// build makes a connection's driver from its settings.
func (r *Router) build(c store.CarrierConnection) *running {
	run := &running{conn: c}
	if c.Disabled {
		return run
	}
	log := r.cfg.Log.With("connection", c.Name)
	switch c.Kind {
	case "sim":
		s := sim.New(sim.Config{ReceiptDelay: sim.DefaultReceiptDelay, Logger: log})
		if r.sink != nil {
			s.Attach(r.sink)
		}
		run.send, run.stop = s, func() { s.Close() }
		r.limit(run, log)
	case "kannel":
		d, err := kannel.New(kannel.Config{
			SendURL: c.Settings["send-url"], Username: c.Settings["user"], Password: c.Secrets["password"],
			CallbackURL: r.CallbackURL(c.Name), Secret: c.Secrets["secret"], SMSC: c.Settings["smsc"], Logger: log,
		})
		if err != nil {
			run.err = err
			return run
		}
		run.send = d
		if r.sink != nil {
			run.handler = d.Handler(r.sink)
		}
	case "twilio":
		conn, err := r.startTwilio(c, log)
		if err != nil {
			run.err = err
			return run
		}
		run.send, run.handler = conn, conn.handler()
		r.limit(run, log)
	case "telnyx":
		conn, err := r.startTelnyx(c, log)
		if err != nil {
			run.err = err
			return run
		}
		run.send, run.handler = conn, conn.handler()
		r.limit(run, log)
	case "smpp":
		conn, err := r.newSMPP(c, log)
		if err != nil {
			run.err = err
			return run
		}
		run.queue = newQueue(r, c, conn.set.limits, conn, log)
		run.send, run.stop, run.linked = conn, run.queue.close, true
	default:
		run.err = fmt.Errorf("this server does not run connections of kind %q", c.Kind)
	}
	return run
}

// limit gives a connection without binds of its own (an HTTP provider's,
// the sim's) its queue when it has limits to keep (checked when the
// connection was set); the queue stops first.
func (r *Router) limit(run *running, log *slog.Logger) {
	lim, err := limitsOf(run.conn.Settings, false)
	if err != nil || !lim.limited() {
		return
	}
	q := newQueue(r, run.conn, lim, &httpBinder{Carrier: run.send}, log)
	stop := run.stop
	run.queue, run.stop = q, func() {
		q.close()
		if stop != nil {
			stop()
		}
	}
}

// CallbackURL is where connection name's provider calls the server.
func (r *Router) CallbackURL(name string) string {
	return strings.TrimRight(r.cfg.PublicURL, "/") + "/carrier/" + name
}

// Runner is the router's background work: Sync every Interval.
func (r *Router) Runner() background.Service {
	return background.NewPeriodic(background.PeriodicConfig{
		Name: "carrier connections", Interval: r.cfg.Interval, Logger: r.cfg.Log,
		Work: r.Sync,
	})
}

// RefRetention is how long the ids a carrier gave a message are kept for
// its receipts: carriers give up on a message within days (SMPP's default
// validity is 48 h, Twilio's and Telnyx's a few days).
const RefRetention = 14 * 24 * time.Hour

// Pruner is the background work that forgets carrier ids past
// RefRetention, hourly.
func (r *Router) Pruner() background.Service {
	return background.NewPeriodic(background.PeriodicConfig{
		Name: "carrier refs pruning", Interval: time.Hour, Logger: r.cfg.Log,
		Work: func(ctx context.Context) error {
			n, err := r.cfg.Store.PruneCarrierRefs(ctx, time.Now().Add(-RefRetention))
			if n > 0 {
				r.cfg.Log.Info("carrier ids past their receipts' time forgotten", "count", n)
			}
			return err
		},
	})
}

// Close stops every connection.
func (r *Router) Close() {
	r.mu.Lock()
	all := r.conns
	r.conns, r.names = map[int64]*running{}, map[string]*running{}
	r.mu.Unlock()
	for _, c := range all {
		if c.stop != nil {
			c.stop()
		}
	}
}
