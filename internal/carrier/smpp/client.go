package smpp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Config configures a Client. Zero durations and sizes take the defaults
// named on each field.
type Config struct {
	// Addrs are host:port addresses, tried in order: after a failure the
	// next one, after a whole round of failures a wait, after a bound
	// session ends the first one again.
	Addrs []string
	// TLS, when set, wraps each connection in TLS with this configuration
	// (its ServerName defaults to the address's host).
	TLS *tls.Config

	SystemID     string // at most 15 octets
	Password     string // at most 8 octets
	SystemType   string // at most 12 octets
	AddrTON      byte
	AddrNPI      byte
	AddressRange string

	// Window is how many submit_sm may await their response at once on
	// the bind (default 10); Submit blocks while it is full.
	Window int
	// EnquireLink is how long the link may be silent before the client
	// sends enquire_link (default 30 s).
	EnquireLink time.Duration
	// ResponseTimeout bounds the wait for any response: bind, submit,
	// enquire_link, unbind (default 10 s). A response that does not come
	// in time ends the session (see ErrResponseTimeout, ErrLinkDead).
	ResponseTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the wait between rounds of
	// connection attempts, doubling from the one to the other
	// (defaults 1 s and 1 min); a bind resets it.
	ReconnectMin, ReconnectMax time.Duration
	// ThrottleWait is the first wait before Send resubmits a part the
	// SMSC refused with ESME_RTHROTTLED or ESME_RMSGQFUL, doubling to
	// 16 times it (default 200 ms).
	ThrottleWait time.Duration
	// MaxPDULength bounds a PDU read (default DefaultMaxPDULength).
	MaxPDULength int
	// ConcatMaxAge is how long the parts of an inbound text wait for the
	// rest (default 10 min); ConcatMaxTexts bounds how many texts may be
	// waiting (default 1024, the oldest dropped first).
	ConcatMaxAge   time.Duration
	ConcatMaxTexts int

	// OnReceipt and OnInbound receive delivery receipts and inbound texts.
	// The deliver_sm is answered ESME_ROK after they return nil, and
	// ESME_RX_T_APPN (the SMSC retries later) when they return an error,
	// so they should return only once the event is stored. They run in
	// DeliverLanes lanes per bind, a deliver_sm's lane chosen by its source
	// address: one sender's texts and receipts are handled one at a time,
	// in the order the SMSC sent them, and different senders' at once, so
	// that receipts being stored never hold up the submits' responses read
	// behind them. A nil callback accepts and drops.
	OnReceipt func(context.Context, Receipt) error
	OnInbound func(context.Context, Inbound) error
	// DeliverLanes is how many deliver_sm are handled at once per bind
	// (default 8).
	DeliverLanes int
	// OnState, when set, is called on every change of State, one call at
	// a time, in order.
	OnState func(State)

	// Dial opens the TCP connection (default net.Dialer); tests use it to
	// see connections. TLS is layered on top of it.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Logger receives the client's own log lines (default: none). Neither
	// the password nor message texts are ever logged.
	Logger *slog.Logger
}

// Link is the state of a client's bind.
type Link string

// The states a client goes through.
const (
	Connecting Link = "connecting" // dialling or binding
	Bound      Link = "bound"      // a bind is up and accepts submits
	Down       Link = "down"       // waiting to try again, or stopped
)

// State is what a client is doing, since when, and the last thing that
// went wrong (kept while bound, so a flapping link shows why).
type State struct {
	Link      Link
	Since     time.Time
	Addr      string // the address bound or being tried
	LastError error
}

// Client is an ESME bound as a transceiver to one SMSC, kept bound by Run.
// Its methods are safe for concurrent use.
type Client struct {
	cfg Config
	log *slog.Logger
	asm *assembler
	ref atomic.Uint32

	runCtx context.Context // callbacks' context, set by Run

	mu      sync.Mutex
	state   State
	cur     *session
	changed chan struct{} // closed and replaced whenever cur changes or Run ends
	stopped bool
	running bool

	stateMu sync.Mutex // orders OnState calls
}

// New checks cfg and returns a client; Run connects it.
func New(cfg Config) (*Client, error) {
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("smpp: no address")
	}
	probe := &PDU{Command: CmdBindTransceiver, Body: &Bind{SystemID: cfg.SystemID, Password: cfg.Password,
		SystemType: cfg.SystemType, AddressRange: cfg.AddressRange}}
	if _, err := probe.MarshalBinary(); err != nil {
		return nil, err
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if cfg.Window <= 0 {
		cfg.Window = 10
	}
	def(&cfg.EnquireLink, 30*time.Second)
	def(&cfg.ResponseTimeout, 10*time.Second)
	def(&cfg.ReconnectMin, time.Second)
	def(&cfg.ReconnectMax, time.Minute)
	if cfg.ReconnectMax < cfg.ReconnectMin {
		cfg.ReconnectMax = cfg.ReconnectMin
	}
	def(&cfg.ThrottleWait, 200*time.Millisecond)
	def(&cfg.ConcatMaxAge, 10*time.Minute)
	if cfg.ConcatMaxTexts <= 0 {
		cfg.ConcatMaxTexts = 1024
	}
	if cfg.MaxPDULength <= 0 {
		cfg.MaxPDULength = DefaultMaxPDULength
	}
	if cfg.DeliverLanes <= 0 {
		cfg.DeliverLanes = 8
	}
	dial := cfg.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	if cfg.TLS != nil {
		tcp, base := dial, cfg.TLS
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			raw, err := tcp(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			tc := base.Clone()
			if tc.ServerName == "" {
				tc.ServerName, _, _ = net.SplitHostPort(addr)
			}
			conn := tls.Client(raw, tc)
			if err := conn.HandshakeContext(ctx); err != nil {
				raw.Close()
				return nil, fmt.Errorf("smpp: TLS handshake with %s: %w", addr, err)
			}
			return conn, nil
		}
	}
	cfg.Dial = dial
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{cfg: cfg, log: log, asm: newAssembler(cfg.ConcatMaxAge, cfg.ConcatMaxTexts),
		changed: make(chan struct{}), runCtx: context.Background()}
	c.state = State{Link: Down, Since: time.Now()}
	return c, nil
}

// State returns the client's current state.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

func (c *Client) setState(link Link, addr string, err error) {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	c.mu.Lock()
	st := c.state
	if err == nil {
		err = st.LastError
	}
	if st.Link != link {
		st.Since = time.Now()
	}
	st.Link, st.Addr, st.LastError = link, addr, err
	changed := st != c.state
	c.state = st
	c.mu.Unlock()
	if changed && c.cfg.OnState != nil {
		c.cfg.OnState(st)
	}
}

// setSession makes s (or none) the session submits go to and wakes those
// waiting for one.
func (c *Client) setSession(s *session) {
	c.mu.Lock()
	c.cur = s
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// Run keeps the client bound until ctx is done, then waits for the
// submits in flight, unbinds and returns nil. It returns an error only if
// the client is already running or has run.
func (c *Client) Run(ctx context.Context) error {
	c.mu.Lock()
	if c.running || c.stopped {
		c.mu.Unlock()
		return errors.New("smpp: Run called twice")
	}
	c.running = true
	c.runCtx = context.WithoutCancel(ctx)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.stopped = true
		c.cur = nil
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
		c.setState(Down, "", ErrClosed)
	}()

	wait := c.cfg.ReconnectMin
	for {
		var lastErr error
		for _, addr := range c.cfg.Addrs {
			c.setState(Connecting, addr, nil)
			s, err := c.dial(ctx, addr)
			if ctx.Err() != nil {
				if s != nil {
					s.shutdown()
					<-s.done
				}
				return nil
			}
			if err != nil {
				c.log.Warn("smpp: connect failed", "addr", addr, "err", err)
				lastErr = err
				c.setState(Connecting, addr, err)
				continue
			}
			wait = c.cfg.ReconnectMin
			c.setSession(s)
			c.setState(Bound, addr, nil)
			select {
			case <-s.done:
			case <-ctx.Done():
				c.setSession(nil)
				s.shutdown()
				<-s.done
				return nil
			}
			c.setSession(nil)
			lastErr = s.Err()
			c.log.Warn("smpp: session ended", "addr", addr, "err", lastErr)
			break // after a session, wait, then start again from the first address
		}
		c.setState(Down, "", lastErr)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		wait = min(wait*2, c.cfg.ReconnectMax)
	}
}

// session waits for a bound session.
func (c *Client) session(ctx context.Context) (*session, error) {
	for {
		c.mu.Lock()
		s, ch, stopped := c.cur, c.changed, c.stopped
		c.mu.Unlock()
		if s != nil {
			return s, nil
		}
		if stopped {
			return nil, fmt.Errorf("%w: %w", ErrNotSent, ErrClosed)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: not bound: %w", ErrNotSent, ctx.Err())
		}
	}
}

// Submit sends one submit_sm on the bound session (waiting for one, and for
// room in its window, until ctx is done) and returns the SMSC's
// message_id. A refusal is a *StatusError; other errors wrap ErrNotSent or
// ErrOutcomeUnknown, which say whether submitting again is safe.
func (c *Client) Submit(ctx context.Context, sm *SM) (string, error) {
	for {
		s, err := c.session(ctx)
		if err != nil {
			return "", err
		}
		id, err := s.submit(ctx, sm)
		if errors.Is(err, ErrNotSent) && ctx.Err() == nil {
			// That session ended before the PDU went out: wait for the next.
			c.mu.Lock()
			if c.cur == s {
				c.mu.Unlock()
				select {
				case <-s.closing:
				case <-ctx.Done():
				}
			} else {
				c.mu.Unlock()
			}
			continue
		}
		return id, err
	}
}

// Send splits m into its parts (see Split), submits them in order, and
// returns the message_id of each part the SMSC took. A part refused with
// ESME_RTHROTTLED or ESME_RMSGQFUL is submitted again after a wait, until
// ctx is done; nothing else is retried. On error the ids returned are
// those of the parts taken before it, so a caller that resumes sends only
// the rest (with SendParts and the same parts).
func (c *Client) Send(ctx context.Context, m Message) ([]string, error) {
	parts, err := Split(m, c.NextRef())
	if err != nil {
		return nil, err
	}
	return c.SendParts(ctx, parts)
}

// NextRef hands out concatenation references in turn.
func (c *Client) NextRef() byte { return byte(c.ref.Add(1)) }

// SendParts submits parts in order as Send does.
func (c *Client) SendParts(ctx context.Context, parts []*SM) ([]string, error) {
	ids := make([]string, 0, len(parts))
	for _, sm := range parts {
		wait := c.cfg.ThrottleWait
		for {
			id, err := c.Submit(ctx, sm)
			var se *StatusError
			if errors.As(err, &se) && se.Retryable() {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return ids, fmt.Errorf("%w (still refused when giving up: %w)", err, ctx.Err())
				case <-t.C:
				}
				wait = min(wait*2, 16*c.cfg.ThrottleWait)
				continue
			}
			if err != nil {
				return ids, err
			}
			ids = append(ids, id)
			break
		}
	}
	return ids, nil
}

// handleDeliver passes a deliver_sm to the callback it is for.
func (c *Client) handleDeliver(sm *SM) error {
	ctx := c.runCtx
	if IsReceipt(sm) {
		if c.cfg.OnReceipt == nil {
			return nil
		}
		return c.cfg.OnReceipt(ctx, ParseReceipt(sm))
	}
	in, complete := c.asm.add(sm, time.Now())
	if !complete || c.cfg.OnInbound == nil {
		return nil
	}
	return c.cfg.OnInbound(ctx, in)
}
