package carriers

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/carrier"
	"switchboard/internal/carrier/smpp"
	"switchboard/internal/store"
)

// smppSettings are an smpp connection's settings, checked.
type smppSettings struct {
	cfg    smpp.Config
	limits limits
	source addrOverride
	dest   addrOverride
}

// addrOverride is a configured TON and NPI (-1: smpp.DefaultAddress's).
type addrOverride struct{ ton, npi int }

func (o addrOverride) apply(a smpp.Address) smpp.Address {
	if o.ton >= 0 {
		a.TON = byte(o.ton)
	}
	if o.npi >= 0 {
		a.NPI = byte(o.npi)
	}
	return a
}

// smppConfig reads an smpp connection's settings.
func smppConfig(settings, secrets map[string]string) (smppSettings, error) {
	var s smppSettings
	for _, a := range strings.Split(settings["address"], ",") {
		if a = strings.TrimSpace(a); a != "" {
			if _, port, ok := strings.Cut(a, ":"); !ok || port == "" {
				return s, fmt.Errorf("--address: %q is not host:port", a)
			}
			s.cfg.Addrs = append(s.cfg.Addrs, a)
		}
	}
	s.cfg.SystemID, s.cfg.Password, s.cfg.SystemType = settings["system-id"], secrets["password"], settings["system-type"]
	switch settings["tls"] {
	case "", "false":
	case "true":
		s.cfg.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	default:
		return s, fmt.Errorf("--tls: want true or false, not %q", settings["tls"])
	}
	num := func(name string, lo, hi, def int) (int, error) { return wholeSetting(settings, name, lo, hi, def) }
	var err error
	if s.cfg.Window, err = num("window", 1, 1000, 10); err != nil {
		return s, err
	}
	if s.limits, err = limitsOf(settings, true); err != nil {
		return s, err
	}
	for _, o := range []struct {
		name string
		to   *int
	}{{"source-ton", &s.source.ton}, {"source-npi", &s.source.npi}, {"dest-ton", &s.dest.ton}, {"dest-npi", &s.dest.npi}} {
		if *o.to, err = num(o.name, 0, 255, -1); err != nil {
			return s, err
		}
	}
	if _, err := smpp.New(s.cfg); err != nil { // the bind's fields' lengths
		return s, err
	}
	return s, nil
}

// smppConn is a running smpp connection: the binds this node holds (each
// an SMPP client kept bound, opened and closed by the connection's queue
// as its leases come and go), its receipts matched to messages by the ids
// the SMSC gave (carrier_refs).
type smppConn struct {
	r    *Router
	conn store.CarrierConnection
	set  smppSettings
	log  *slog.Logger

	mu    sync.Mutex
	binds map[int]*smppBind // by slot
	order []int             // slots, for turns
	turn  int
}

// smppBind is one bind: its client, running until stop.
type smppBind struct {
	client   *smpp.Client
	stop     context.CancelFunc
	done     chan struct{}
	state    smpp.State
	inFlight atomic.Int64
}

func (r *Router) newSMPP(c store.CarrierConnection, log *slog.Logger) (*smppConn, error) {
	set, err := smppConfig(c.Settings, c.Secrets)
	if err != nil {
		return nil, err
	}
	return &smppConn{r: r, conn: c, set: set, log: log, binds: map[int]*smppBind{}}, nil
}

// open starts a bind for slot, whose lease this node now holds.
func (s *smppConn) open(slot int) error {
	r, c := s.r, s.conn
	b := &smppBind{done: make(chan struct{})}
	cfg := s.set.cfg
	cfg.Logger = s.log.With("bind", slot)
	cfg.OnReceipt = func(ctx context.Context, rc smpp.Receipt) error {
		msg, parts, err := r.cfg.Store.CarrierPartReceipt(ctx, c.ID, rc.MessageID, rc.Stat)
		if err != nil {
			// Unknown yet (the submit's answer and this receipt crossed) or
			// never ours: the SMSC is told to try again later.
			return fmt.Errorf("receipt for message_id %q: %w", rc.MessageID, err)
		}
		status, final := textStatus(parts)
		if !final {
			return nil // the other parts' receipts say the rest
		}
		return r.sink.Receipt(ctx, carrier.Receipt{MessageID: msg, Status: status, Error: rc.Err, At: time.Now()})
	}
	cfg.OnInbound = func(ctx context.Context, in smpp.Inbound) error {
		return r.sink.Inbound(ctx, carrier.Inbound{From: in.Source.Addr, To: in.Dest.Addr, Text: in.Text, At: time.Now()})
	}
	cfg.OnState = func(st smpp.State) {
		s.mu.Lock()
		b.state = st
		s.mu.Unlock()
		s.report()
	}
	client, err := smpp.New(cfg)
	if err != nil {
		return err
	}
	b.client = client
	ctx, cancel := context.WithCancel(context.Background())
	b.stop = cancel
	s.mu.Lock()
	s.binds[slot] = b
	s.order = append(s.order, slot)
	s.mu.Unlock()
	go func() {
		defer close(b.done)
		client.Run(ctx)
	}()
	return nil
}

// close stops slot's bind (its lease is lost or given up): an unbind, after
// the submits in flight are answered.
func (s *smppConn) close(slot int) {
	s.mu.Lock()
	b := s.binds[slot]
	delete(s.binds, slot)
	s.order = slices.DeleteFunc(s.order, func(n int) bool { return n == slot })
	s.mu.Unlock()
	if b != nil {
		b.stop()
		<-b.done
	}
	s.report()
}

// report records the connection's state as this node's binds make it:
// bound when one is, else connecting when one tries, else down.
func (s *smppConn) report() {
	s.mu.Lock()
	state, lastErr := "", ""
	rank := map[smpp.Link]int{smpp.Bound: 3, smpp.Connecting: 2, smpp.Down: 1}
	for _, b := range s.binds {
		if rank[b.state.Link] > rank[smpp.Link(state)] {
			state = string(b.state.Link)
		}
		if b.state.LastError != nil {
			lastErr = b.state.LastError.Error()
		}
	}
	s.mu.Unlock()
	if state == "" {
		return // no bind here: the node holding one reports
	}
	s.r.setState(s.conn, state, lastErr)
}

// up reports whether one of this node's binds is bound.
func (s *smppConn) up() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.binds {
		if b.state.Link == smpp.Bound {
			return true
		}
	}
	return false
}

// inFlight is how many submits slot's bind has unanswered.
func (s *smppConn) inFlight(slot int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b := s.binds[slot]; b != nil {
		return int(b.inFlight.Load())
	}
	return 0
}

// pick is the next bound bind in turn (or, with none bound, any: its
// client waits for its bind until the send's deadline).
func (s *smppConn) pick() *smppBind {
	s.mu.Lock()
	defer s.mu.Unlock()
	var any *smppBind
	for range s.order {
		s.turn++
		b := s.binds[s.order[s.turn%len(s.order)]]
		if b.state.Link == smpp.Bound {
			return b
		}
		any = b
	}
	return any
}

// textStatus is a text's delivery status from its parts' receipts (their
// SMSC words, "" for a part not yet reported): once every part has one, the
// first part's word that is not DELIVRD, or DELIVRD when all are. A part's
// final word other than DELIVRD (UNDELIV, EXPIRED, REJECTD, …) is reported
// at once, as nothing can make the text whole; ENROUTE is not final.
func textStatus(parts []string) (status string, final bool) {
	for _, p := range parts {
		if p != "" && p != "DELIVRD" && p != "ENROUTE" {
			return p, true
		}
	}
	for _, p := range parts {
		if p != "DELIVRD" {
			return "", false
		}
	}
	return "DELIVRD", true
}

// Send implements carrier.Carrier: one text to one number, in the parts
// and encoding the quote priced, through one of this node's binds.
func (s *smppConn) Send(ctx context.Context, m carrier.Message) (carrier.Accepted, error) {
	if err := s.accepts(m); err != nil {
		return carrier.Accepted{}, err
	}
	b := s.pick()
	if b == nil {
		return carrier.Accepted{}, fmt.Errorf("%w: %w: this node holds none of connection %q's binds", carrier.ErrUnavailable, errLater, s.conn.Name)
	}
	b.inFlight.Add(1)
	ids, err := b.client.Send(ctx, smpp.Message{
		Source: s.set.source.apply(smpp.DefaultAddress(m.From)), Dest: s.set.dest.apply(smpp.DefaultAddress(m.To[0])),
		Text: m.Text, RegisteredDelivery: smpp.ReceiptFinal,
	})
	b.inFlight.Add(-1)
	if len(ids) > 0 {
		if rerr := s.r.cfg.Store.AddCarrierRefs(context.WithoutCancel(ctx), s.conn.ID, m.ID, ids); rerr != nil {
			err = errors.Join(err, fmt.Errorf("%w: the SMSC's ids not recorded: %v", carrier.ErrUnknown, rerr))
		}
	}
	var se *smpp.StatusError
	switch {
	case err == nil:
		return carrier.Accepted{Ref: strings.Join(ids, ",")}, nil
	case len(ids) == 0 && errors.Is(err, smpp.ErrNotSent):
		return carrier.Accepted{}, fmt.Errorf("%w: %w: %v", carrier.ErrUnavailable, errLater, err)
	case len(ids) == 0 && errors.As(err, &se):
		if se.Retryable() { // still throttled when the send's time ran out
			return carrier.Accepted{}, fmt.Errorf("%w: %w: %v", carrier.ErrUnavailable, errLater, err)
		}
		return carrier.Accepted{}, fmt.Errorf("%w: %v", carrier.ErrUnavailable, err)
	}
	return carrier.Accepted{}, fmt.Errorf("%w: %v", carrier.ErrUnknown, err)
}

// accepts refuses what SMPP cannot carry: attachments and group texts.
func (s *smppConn) accepts(m carrier.Message) error {
	if len(m.Media) > 0 || len(m.To) != 1 {
		return fmt.Errorf("%w: an SMPP connection carries texts to one number (no attachments, no group texts)", carrier.ErrUnavailable)
	}
	return nil
}

// stop closes every bind.
func (s *smppConn) stop() {
	s.mu.Lock()
	slots := slices.Clone(s.order)
	s.mu.Unlock()
	for _, slot := range slots {
		s.close(slot)
	}
}
