package carriers

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"switchboard/internal/carrier"
	"switchboard/internal/carrier/smpp"
	"switchboard/internal/store"
)

// smppSettings are an smpp connection's settings, checked.
type smppSettings struct {
	cfg        smpp.Config
	throughput int
	source     addrOverride
	dest       addrOverride
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
	num := func(name string, lo, hi, def int) (int, error) {
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
	var err error
	if s.cfg.Window, err = num("window", 1, 1000, 10); err != nil {
		return s, err
	}
	if s.throughput, err = num("throughput", 0, 100_000, 0); err != nil {
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

// smppConn is a running smpp connection: one bind kept up by its client,
// its receipts matched to messages by the ids the SMSC gave (carrier_refs).
type smppConn struct {
	id     int64
	st     *store.Store
	client *smpp.Client
	set    smppSettings
	stop   context.CancelFunc
	done   chan struct{}

	paceMu sync.Mutex
	next   time.Time // the throughput limit's next free slot
}

func (r *Router) startSMPP(c store.CarrierConnection, log *slog.Logger) (*smppConn, error) {
	set, err := smppConfig(c.Settings, c.Secrets)
	if err != nil {
		return nil, err
	}
	conn := &smppConn{id: c.ID, st: r.cfg.Store, set: set, done: make(chan struct{})}
	cfg := set.cfg
	cfg.Logger = log
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
	cfg.OnState = func(s smpp.State) {
		msg := ""
		if s.LastError != nil {
			msg = s.LastError.Error()
		}
		r.setState(c, string(s.Link), msg)
	}
	if conn.client, err = smpp.New(cfg); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	conn.stop = cancel
	go func() {
		defer close(conn.done)
		conn.client.Run(ctx)
	}()
	return conn, nil
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
// and encoding the quote priced.
func (s *smppConn) Send(ctx context.Context, m carrier.Message) (carrier.Accepted, error) {
	if len(m.Media) > 0 || len(m.To) != 1 {
		return carrier.Accepted{}, fmt.Errorf("%w: an SMPP connection carries texts to one number (no attachments, no group texts)", carrier.ErrUnavailable)
	}
	if err := s.pace(ctx); err != nil {
		return carrier.Accepted{}, fmt.Errorf("%w: waiting for the connection's throughput limit: %v", carrier.ErrUnavailable, err)
	}
	ids, err := s.client.Send(ctx, smpp.Message{
		Source: s.set.source.apply(smpp.DefaultAddress(m.From)), Dest: s.set.dest.apply(smpp.DefaultAddress(m.To[0])),
		Text: m.Text, RegisteredDelivery: smpp.ReceiptFinal,
	})
	if len(ids) > 0 {
		if rerr := s.st.AddCarrierRefs(context.WithoutCancel(ctx), s.id, m.ID, ids); rerr != nil {
			err = errors.Join(err, fmt.Errorf("%w: the SMSC's ids not recorded: %v", carrier.ErrUnknown, rerr))
		}
	}
	var se *smpp.StatusError
	switch {
	case err == nil:
		return carrier.Accepted{Ref: strings.Join(ids, ",")}, nil
	case len(ids) == 0 && (errors.Is(err, smpp.ErrNotSent) || errors.As(err, &se)):
		return carrier.Accepted{}, fmt.Errorf("%w: %v", carrier.ErrUnavailable, err)
	}
	return carrier.Accepted{}, fmt.Errorf("%w: %v", carrier.ErrUnknown, err)
}

// pace waits for the throughput limit's next slot.
func (s *smppConn) pace(ctx context.Context) error {
	if s.set.throughput <= 0 {
		return nil
	}
	s.paceMu.Lock()
	now := time.Now()
	at := s.next
	if at.Before(now) {
		at = now
	}
	s.next = at.Add(time.Second / time.Duration(s.set.throughput))
	s.paceMu.Unlock()
	if wait := at.Sub(now); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (s *smppConn) close() {
	s.stop()
	<-s.done
}
