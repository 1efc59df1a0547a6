package smpp

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ErrNotSent is wrapped by every submit error after which the SMSC
// certainly did not take the message: no bound session, the window wait
// was given up, or the PDU could not be written whole. Submitting again
// cannot send it twice.
var ErrNotSent = errors.New("smpp: not sent")

// ErrOutcomeUnknown is wrapped by every submit error after which the SMSC
// may have taken the message: the PDU was written, but no response came
// (the link dropped, the caller gave up, or the response timed out).
// Submitting again may send it twice; its receipt, if one comes, settles it.
var ErrOutcomeUnknown = errors.New("smpp: outcome unknown")

// Why a session ended, as State.LastError shows it.
var (
	ErrLinkDead        = errors.New("smpp: no answer to enquire_link")
	ErrResponseTimeout = errors.New("smpp: no response within the response timeout")
	ErrUnbound         = errors.New("smpp: the SMSC unbound")
	ErrClosed          = errors.New("smpp: client stopped")
)

// session is one bound connection. It ends (done closed) when the
// connection fails, the SMSC unbinds, a response or an enquire_link goes
// unanswered, or shutdown is called.
type session struct {
	c       *Client
	conn    net.Conn
	addr    string
	window  chan struct{}
	seq     atomic.Uint32
	lastIn  atomic.Int64 // unix nanoseconds of the last PDU read
	writeMu sync.Mutex

	mu      sync.Mutex
	pending map[uint32]chan *PDU
	err     error

	closing   chan struct{} // closed when the session starts ending
	closeOnce sync.Once
	draining  chan struct{} // closed when shutdown refuses new submits
	drainOnce sync.Once
	lanes     []chan *PDU // deliver_sm by lane (Config.DeliverLanes)
	wg        sync.WaitGroup
	done      chan struct{} // closed when every goroutine has returned
}

// dial connects to addr and binds as a transceiver. The session runs
// until it ends; its goroutines are the reader, the delivery lanes and the
// keep-alive.
func (c *Client) dial(ctx context.Context, addr string) (*session, error) {
	conn, err := c.cfg.Dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &session{
		c:        c,
		conn:     conn,
		addr:     addr,
		window:   make(chan struct{}, c.cfg.Window),
		pending:  map[uint32]chan *PDU{},
		closing:  make(chan struct{}),
		draining: make(chan struct{}),
		done:     make(chan struct{}),
	}
	if err := s.bind(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	s.lastIn.Store(time.Now().UnixNano())
	s.lanes = make([]chan *PDU, c.cfg.DeliverLanes)
	for i := range s.lanes {
		s.lanes[i] = make(chan *PDU, 32)
		s.wg.Add(1)
		go s.deliver(s.lanes[i])
	}
	s.wg.Add(1)
	go s.keepAlive()
	go s.read()
	return s, nil
}

// bind sends bind_transceiver and waits for its response before anything
// else runs, answering an enquire_link that comes first.
func (s *session) bind(ctx context.Context) error {
	deadline := time.Now().Add(s.c.cfg.ResponseTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	s.conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { s.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	cfg := &s.c.cfg
	seq := s.nextSeq()
	err := s.write(&PDU{Command: CmdBindTransceiver, Seq: seq, Body: &Bind{
		SystemID: cfg.SystemID, Password: cfg.Password, SystemType: cfg.SystemType,
		InterfaceVersion: InterfaceVersion, AddrTON: cfg.AddrTON, AddrNPI: cfg.AddrNPI,
		AddressRange: cfg.AddressRange,
	}})
	if err != nil {
		return fmt.Errorf("smpp: bind to %s: %w", s.addr, err)
	}
	for {
		p, err := ReadPDU(s.conn, s.c.cfg.MaxPDULength)
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return fmt.Errorf("smpp: bind to %s: %w", s.addr, err)
		}
		switch {
		case p.Command == CmdEnquireLink:
			if err := s.write(&PDU{Command: CmdEnquireLinkResp, Seq: p.Seq}); err != nil {
				return fmt.Errorf("smpp: bind to %s: %w", s.addr, err)
			}
			continue
		case p.Seq != seq || (p.Command != CmdBindTransceiverResp && p.Command != CmdGenericNack):
			s.c.log.Warn("smpp: PDU before bind_transceiver_resp ignored", "addr", s.addr, "command", p.Command.String())
			continue
		case p.Status != StatusOK:
			return &StatusError{Command: CmdBindTransceiver, Status: p.Status}
		case p.Command == CmdGenericNack:
			return &StatusError{Command: CmdBindTransceiver, Status: StatusUnknownError}
		}
		s.conn.SetDeadline(time.Time{})
		if r, ok := p.Body.(*BindResp); ok {
			s.c.log.Info("smpp: bound", "addr", s.addr, "smsc", r.SystemID)
		}
		return nil
	}
}

// nextSeq hands out sequence numbers 1 to 0x7FFFFFFF and wraps.
func (s *session) nextSeq() uint32 {
	for {
		n := s.seq.Add(1) & 0x7FFFFFFF
		if n != 0 {
			return n
		}
	}
}

// write sends one PDU whole or fails; a failed write ends the session
// (once it runs), since part of a PDU may be on the wire.
func (s *session) write(p *PDU) error {
	b, err := p.MarshalBinary()
	if err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.conn.SetWriteDeadline(time.Now().Add(s.c.cfg.ResponseTimeout))
	_, err = s.conn.Write(b)
	return err
}

// end starts ending the session with err as the reason; the first reason
// wins. Requests awaiting a response fail with ErrOutcomeUnknown.
func (s *session) end(err error) {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.err = err
		pending := s.pending
		s.pending = nil
		s.mu.Unlock()
		close(s.closing)
		s.conn.Close()
		for _, ch := range pending {
			close(ch)
		}
	})
}

// Err is why the session ended (nil while it runs).
func (s *session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// request writes p with a fresh sequence number and waits for its
// response. Errors wrap ErrNotSent or ErrOutcomeUnknown.
func (s *session) request(ctx context.Context, p *PDU) (*PDU, error) {
	ch := make(chan *PDU, 1)
	s.mu.Lock()
	if s.pending == nil {
		err := s.err
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	p.Seq = s.nextSeq()
	s.pending[p.Seq] = ch
	s.mu.Unlock()
	forget := func() {
		s.mu.Lock()
		if s.pending != nil {
			delete(s.pending, p.Seq)
		}
		s.mu.Unlock()
	}
	if err := s.write(p); err != nil {
		forget()
		s.end(fmt.Errorf("smpp: write %s: %w", p.Command, err))
		return nil, fmt.Errorf("%w: %w", ErrNotSent, err)
	}
	timer := time.NewTimer(s.c.cfg.ResponseTimeout)
	defer timer.Stop()
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%w: %w", ErrOutcomeUnknown, s.Err())
		}
		return r, nil
	case <-ctx.Done():
		forget()
		return nil, fmt.Errorf("%w: %w", ErrOutcomeUnknown, ctx.Err())
	case <-timer.C:
		// A late response could no longer be told from a reused sequence
		// number, and an SMSC that stops answering is as good as gone.
		forget()
		why := ErrResponseTimeout
		if p.Command == CmdEnquireLink {
			why = ErrLinkDead
		}
		s.end(fmt.Errorf("%w (%s at %s, %s)", why, p.Command, s.addr, s.c.cfg.ResponseTimeout))
		return nil, fmt.Errorf("%w: %w", ErrOutcomeUnknown, why)
	}
}

// submit sends one submit_sm within the window and returns the SMSC's
// message_id.
func (s *session) submit(ctx context.Context, sm *SM) (string, error) {
	select {
	case <-s.draining:
		return "", fmt.Errorf("%w: session closing", ErrNotSent)
	default:
	}
	select {
	case s.window <- struct{}{}:
	case <-ctx.Done():
		return "", fmt.Errorf("%w: waiting for the window: %w", ErrNotSent, ctx.Err())
	case <-s.closing:
		return "", fmt.Errorf("%w: %w", ErrNotSent, s.Err())
	case <-s.draining:
		return "", fmt.Errorf("%w: session closing", ErrNotSent)
	}
	defer func() { <-s.window }()
	r, err := s.request(ctx, &PDU{Command: CmdSubmitSM, Body: sm})
	if err != nil {
		return "", err
	}
	if r.Status != StatusOK {
		return "", &StatusError{Command: CmdSubmitSM, Status: r.Status}
	}
	if r.Command != CmdSubmitSMResp {
		return "", &StatusError{Command: CmdSubmitSM, Status: StatusUnknownError}
	}
	id := ""
	if b, ok := r.Body.(*SMResp); ok {
		id = b.MessageID
	}
	return id, nil
}

// shutdown refuses new submits, waits (up to the response timeout) for
// those in flight, unbinds and ends the session.
func (s *session) shutdown() {
	s.drainOnce.Do(func() { close(s.draining) })
	ctx, cancel := context.WithTimeout(context.Background(), s.c.cfg.ResponseTimeout)
	defer cancel()
	for i := 0; i < cap(s.window); i++ {
		select {
		case s.window <- struct{}{}:
		case <-ctx.Done():
		case <-s.closing:
		}
	}
	select {
	case <-s.closing:
	default:
		if _, err := s.request(ctx, &PDU{Command: CmdUnbind}); err != nil {
			s.c.log.Info("smpp: unbind unanswered", "addr", s.addr, "err", err)
		}
	}
	s.end(ErrClosed)
}

// read is the only reader of the connection. It answers what needs no
// thought (enquire_link, unbind, malformed PDUs), routes responses to their
// requests and hands deliver_sm to their delivery lanes.
func (s *session) read() {
	defer func() {
		s.wg.Wait()
		close(s.done)
	}()
	for {
		p, err := ReadPDU(s.conn, s.c.cfg.MaxPDULength)
		if err != nil && p == nil {
			s.end(fmt.Errorf("smpp: read from %s: %w", s.addr, err))
			return
		}
		s.lastIn.Store(time.Now().UnixNano())
		if err != nil {
			if p.Command.IsResponse() {
				// The header says how it went; a body we cannot read only
				// loses the message_id.
				s.c.log.Warn("smpp: malformed response", "addr", s.addr, "err", err)
				s.route(p)
				continue
			}
			status := StatusInvalidCmdLen
			if errors.Is(err, ErrUnknownCommand) {
				status = StatusInvalidCmdID
			}
			s.c.log.Warn("smpp: answering generic_nack", "addr", s.addr, "err", err)
			if s.write(&PDU{Command: CmdGenericNack, Status: status, Seq: p.Seq}) != nil {
				s.end(fmt.Errorf("smpp: write generic_nack: %w", err))
				return
			}
			continue
		}
		switch {
		case p.Command.IsResponse():
			s.route(p)
		case p.Command == CmdEnquireLink:
			if err := s.write(&PDU{Command: CmdEnquireLinkResp, Seq: p.Seq}); err != nil {
				s.end(fmt.Errorf("smpp: write enquire_link_resp: %w", err))
				return
			}
		case p.Command == CmdUnbind:
			s.write(&PDU{Command: CmdUnbindResp, Seq: p.Seq})
			s.end(ErrUnbound)
			return
		case p.Command == CmdDeliverSM:
			select {
			case s.lane(p) <- p:
			case <-s.closing:
				return
			}
		default:
			if s.write(&PDU{Command: CmdGenericNack, Status: StatusInvalidCmdID, Seq: p.Seq}) != nil {
				s.end(fmt.Errorf("smpp: write generic_nack: %w", err))
				return
			}
		}
	}
}

// route hands a response to the request with its sequence number.
func (s *session) route(p *PDU) {
	s.mu.Lock()
	ch, ok := s.pending[p.Seq]
	if ok {
		delete(s.pending, p.Seq)
	}
	s.mu.Unlock()
	if !ok {
		s.c.log.Warn("smpp: response to no pending request", "addr", s.addr, "command", p.Command.String(), "seq", p.Seq)
		return
	}
	ch <- p
}

// lane is the deliver_sm's lane, by its source address: a handset's texts
// and the receipts of the messages sent to it keep their order.
func (s *session) lane(p *PDU) chan *PDU {
	h := fnv.New32a()
	h.Write([]byte(p.Body.(*SM).Source.Addr))
	return s.lanes[h.Sum32()%uint32(len(s.lanes))]
}

// deliver hands each deliver_sm of its lane to the caller's callback and
// answers it once the callback has returned: ESME_ROK when it accepted it,
// ESME_RX_T_APPN (try again later) when it returned an error, so the SMSC
// keeps the message until it is stored. A lane's callbacks run one at a
// time, in the order the SMSC sent, on the client's context, so one that is
// under way when the link drops still finishes.
func (s *session) deliver(lane chan *PDU) {
	defer s.wg.Done()
	for {
		var p *PDU
		select {
		case p = <-lane:
		case <-s.closing:
			return
		}
		status := StatusOK
		if err := s.c.handleDeliver(p.Body.(*SM)); err != nil {
			s.c.log.Warn("smpp: deliver_sm not accepted by the callback", "addr", s.addr, "err", err)
			status = StatusTempAppError
		}
		if err := s.write(&PDU{Command: CmdDeliverSMResp, Status: status, Seq: p.Seq, Body: &SMResp{}}); err != nil {
			s.end(fmt.Errorf("smpp: write deliver_sm_resp: %w", err))
			return
		}
	}
}

// keepAlive sends enquire_link when nothing has been read for the
// configured interval, and ends the session when it goes unanswered.
func (s *session) keepAlive() {
	defer s.wg.Done()
	every := s.c.cfg.EnquireLink
	timer := time.NewTimer(every)
	defer timer.Stop()
	for {
		select {
		case <-s.closing:
			return
		case <-timer.C:
		}
		idle := time.Since(time.Unix(0, s.lastIn.Load()))
		if idle < every {
			timer.Reset(every - idle)
			continue
		}
		r, err := s.request(context.Background(), &PDU{Command: CmdEnquireLink})
		if err != nil || r.Status != StatusOK {
			s.end(fmt.Errorf("%w at %s", ErrLinkDead, s.addr))
			return
		}
		timer.Reset(every)
	}
}
