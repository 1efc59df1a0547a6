package smpp

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSMSC is a scriptable SMSC for the client's tests: it binds one
// system_id and password, answers submit_sm with message ids (or with the
// statuses queued in refuse), can hold responses back, go silent, drop a
// connection, and send deliver_sm, enquire_link and unbind of its own.
// Every PDU it receives is reported on events.
type fakeSMSC struct {
	t        *testing.T
	ln       net.Listener
	password string

	mu     sync.Mutex
	refuse []Status // statuses for the next submit_sm, in order
	hold   bool     // keep submit_sm responses until release
	held   []held
	silent bool // answer nothing at all
	conns  []*fakeConn
	ids    int

	events chan fakeEvent
	wg     sync.WaitGroup
}

type held struct {
	c *fakeConn
	p *PDU
}

type fakeConn struct {
	net.Conn
	writeMu sync.Mutex
	seq     uint32
}

type fakeEvent struct {
	c *fakeConn
	p *PDU
}

func newFakeSMSC(t *testing.T, tlsConfig *tls.Config) *fakeSMSC {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	s := &fakeSMSC{t: t, ln: ln, password: "secret", events: make(chan fakeEvent, 1000)}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *fakeSMSC) addr() string { return s.ln.Addr().String() }

func (s *fakeSMSC) close() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *fakeSMSC) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		c := &fakeConn{Conn: conn, seq: 1000}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *fakeSMSC) serve(c *fakeConn) {
	defer s.wg.Done()
	defer c.Close()
	for {
		p, err := ReadPDU(c, 0)
		if err != nil {
			return
		}
		s.events <- fakeEvent{c, p}
		s.mu.Lock()
		silent := s.silent
		s.mu.Unlock()
		if silent {
			continue
		}
		switch p.Command {
		case CmdBindTransceiver:
			b := p.Body.(*Bind)
			status := StatusOK
			if b.SystemID != "esme" || b.Password != s.password {
				status = StatusInvalidPassword
			}
			c.send(&PDU{Command: CmdBindTransceiverResp, Status: status, Seq: p.Seq, Body: &BindResp{SystemID: "fake"}})
		case CmdSubmitSM:
			s.mu.Lock()
			if s.hold {
				s.held = append(s.held, held{c, p})
				s.mu.Unlock()
				continue
			}
			s.mu.Unlock()
			s.answerSubmit(c, p)
		case CmdEnquireLink:
			c.send(&PDU{Command: CmdEnquireLinkResp, Seq: p.Seq})
		case CmdUnbind:
			c.send(&PDU{Command: CmdUnbindResp, Seq: p.Seq})
			return
		}
	}
}

func (s *fakeSMSC) answerSubmit(c *fakeConn, p *PDU) {
	s.mu.Lock()
	status := StatusOK
	if len(s.refuse) > 0 {
		status, s.refuse = s.refuse[0], s.refuse[1:]
	}
	s.ids++
	id := fmt.Sprintf("msg%d", s.ids)
	s.mu.Unlock()
	if status != StatusOK {
		c.send(&PDU{Command: CmdSubmitSMResp, Status: status, Seq: p.Seq})
		return
	}
	c.send(&PDU{Command: CmdSubmitSMResp, Seq: p.Seq, Body: &SMResp{MessageID: id}})
}

// release answers the held submits and stops holding.
func (s *fakeSMSC) release() {
	s.mu.Lock()
	hs := s.held
	s.held, s.hold = nil, false
	s.mu.Unlock()
	for _, h := range hs {
		s.answerSubmit(h.c, h.p)
	}
}

func (s *fakeSMSC) set(f func(*fakeSMSC)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// send writes a PDU the SMSC originates (its own sequence numbers).
func (c *fakeConn) request(p *PDU) uint32 {
	c.writeMu.Lock()
	c.seq++
	p.Seq = c.seq
	c.writeMu.Unlock()
	c.send(p)
	return p.Seq
}

func (c *fakeConn) send(p *PDU) {
	b, err := p.MarshalBinary()
	if err != nil {
		panic(err)
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.Write(b)
}

// next returns the next PDU received with one of the commands, skipping
// others; it fails the test if none comes within a bound far beyond any
// correct run.
func (s *fakeSMSC) next(t *testing.T, cmds ...CommandID) fakeEvent {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case e := <-s.events:
			for _, c := range cmds {
				if e.p.Command == c {
					return e
				}
			}
		case <-timeout.C:
			t.Fatalf("the SMSC received no %v", cmds)
		}
	}
}

// eventually waits for cond, failing the test after a bound far beyond any
// correct run.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// noLeaks fails the test if goroutines of this package outlive it. Call it
// first, so its check runs after every other cleanup.
func noLeaks(t *testing.T) {
	t.Cleanup(func() {
		var left string
		deadline := time.Now().Add(5 * time.Second)
		for {
			left = leakedGoroutines()
			if left == "" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("goroutines left behind:\n%s", left)
			}
			time.Sleep(time.Millisecond)
		}
	})
}

func leakedGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "internal/carrier/smpp.") && !strings.Contains(g, "testing.tRunner") &&
			!strings.Contains(g, "leakedGoroutines") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

var errCallback = errors.New("store unavailable")
