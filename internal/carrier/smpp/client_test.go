package smpp

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder collects what the client hands to its callbacks.
type recorder struct {
	mu       sync.Mutex
	receipts []Receipt
	inbound  []Inbound
	states   []State
	fail     bool // callbacks return errCallback
}

func (r *recorder) config(addrs ...string) Config {
	return Config{
		Addrs: addrs, SystemID: "esme", Password: "secret", SystemType: "sb",
		ReconnectMin: 5 * time.Millisecond, ReconnectMax: 40 * time.Millisecond,
		ResponseTimeout: 5 * time.Second, ThrottleWait: time.Millisecond,
		OnReceipt: func(_ context.Context, rc Receipt) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.fail {
				return errCallback
			}
			r.receipts = append(r.receipts, rc)
			return nil
		},
		OnInbound: func(_ context.Context, in Inbound) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.inbound = append(r.inbound, in)
			return nil
		},
		OnState: func(s State) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.states = append(r.states, s)
		},
	}
}

// run starts c and stops it (waiting for Run to return) when the test ends.
func run(t *testing.T, c *Client) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func waitBound(t *testing.T, c *Client) {
	t.Helper()
	eventually(t, "bound", func() bool { return c.State().Link == Bound })
}

func TestBindSendReceiptsInbound(t *testing.T) {
	noLeaks(t)
	smsc := newFakeSMSC(t, nil)
	var rec recorder
	c := newClient(t, rec.config(smsc.addr()))
	run(t, c)

	bind := smsc.next(t, CmdBindTransceiver)
	b := bind.p.Body.(*Bind)
	if b.SystemID != "esme" || b.Password != "secret" || b.SystemType != "sb" || b.InterfaceVersion != 0x34 {
		t.Fatalf("bind_transceiver %+v", b)
	}
	waitBound(t, c)

	text := strings.Repeat("Long text € ", 20) // GSM-7, 260 septets: two parts
	src, dst := Address{TON: 1, NPI: 1, Addr: "15551234567"}, Address{TON: 1, NPI: 1, Addr: "447700900123"}
	ids, err := c.Send(context.Background(), Message{Source: src, Dest: dst, Text: text, RegisteredDelivery: ReceiptFinal})
	if err != nil || len(ids) != 2 || ids[0] == ids[1] {
		t.Fatalf("Send = %v, %v; want two message ids", ids, err)
	}
	var joined []byte
	var ref byte
	for i := range 2 {
		sm := smsc.next(t, CmdSubmitSM).p.Body.(*SM)
		if sm.ESMClass != ESMClassUDHI || sm.DataCoding != CodingDefault || sm.RegisteredDelivery != 1 || sm.Source != src || sm.Dest != dst {
			t.Fatalf("part %d: %+v", i+1, sm)
		}
		if i == 0 {
			ref = sm.ShortMessage[3]
		} else if sm.ShortMessage[3] != ref {
			t.Fatalf("parts carry references %d and %d", ref, sm.ShortMessage[3])
		}
		joined = append(joined, sm.ShortMessage[6:]...)
	}
	if got := DecodeText(CodingDefault, joined); got != text {
		t.Fatalf("the SMSC got %q", got)
	}

	// A receipt, then an inbound text in two UCS-2 parts.
	conn := bind.c
	conn.request(&PDU{Command: CmdDeliverSM, Body: &SM{Source: dst, Dest: src, ESMClass: ESMClassReceipt,
		ShortMessage: []byte("id:" + ids[1] + " sub:001 dlvrd:001 submit date:2611281015 done date:2611281016 stat:DELIVRD err:000 text:Long")}})
	if r := smsc.next(t, CmdDeliverSMResp).p; r.Status != StatusOK {
		t.Fatalf("receipt answered %s", r.Status)
	}
	for seq, units := range [][]byte{{0x04, 0x1F, 0xD8, 0x3D}, {0xDE, 0x00}} { // "П" and an emoji cut in two
		conn.request(&PDU{Command: CmdDeliverSM, Body: &SM{Source: dst, Dest: src, ESMClass: ESMClassUDHI, DataCoding: CodingUCS2,
			ShortMessage: append([]byte{5, 0, 3, 9, 2, byte(seq + 1)}, units...)}})
		smsc.next(t, CmdDeliverSMResp)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.receipts) != 1 || rec.receipts[0].MessageID != ids[1] || rec.receipts[0].Stat != "DELIVRD" || rec.receipts[0].Source != dst {
		t.Errorf("receipts %+v", rec.receipts)
	}
	if len(rec.inbound) != 1 || rec.inbound[0].Text != "П😀" || rec.inbound[0].Parts != 2 || rec.inbound[0].Source != dst {
		t.Errorf("inbound %+v", rec.inbound)
	}
}

func TestCallbackErrorAsksForRedelivery(t *testing.T) {
	noLeaks(t)
	smsc := newFakeSMSC(t, nil)
	rec := recorder{fail: true}
	c := newClient(t, rec.config(smsc.addr()))
	run(t, c)
	conn := smsc.next(t, CmdBindTransceiver).c
	waitBound(t, c)
	conn.request(&PDU{Command: CmdDeliverSM, Body: &SM{ESMClass: ESMClassReceipt, ShortMessage: []byte("id:1 stat:DELIVRD")}})
	if r := smsc.next(t, CmdDeliverSMResp).p; r.Status != StatusTempAppError {
		t.Fatalf("deliver_sm answered %s, want ESME_RX_T_APPN", r.Status)
	}
}

// blockedIn counts goroutines waiting in a select whose innermost frame is
// fn: submits waiting for room in the window (session.submit), Send waiting
// to resubmit (Client.SendParts).
func blockedIn(fn string) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		if len(lines) > 1 && strings.Contains(lines[0], "[select") && strings.Contains(lines[1], fn+"(") {
			n++
		}
	}
	return n
}

const inWindowWait, inThrottleWait = "smpp.(*session).submit", "smpp.(*Client).SendParts"

func TestWindowBlocksWhenFull(t *testing.T) {
	noLeaks(t)
	smsc := newFakeSMSC(t, nil)
	smsc.set(func(s *fakeSMSC) { s.hold = true })
	var rec recorder
	cfg := rec.config(smsc.addr())
	cfg.Window = 2
	c := newClient(t, cfg)
	run(t, c)
	waitBound(t, c)

	results := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := c.Submit(context.Background(), &SM{ShortMessage: []byte("x")})
			results <- err
		}()
	}
	smsc.next(t, CmdSubmitSM)
	smsc.next(t, CmdSubmitSM)
	eventually(t, "a third submit waiting for the window", func() bool { return blockedIn(inWindowWait) == 1 })

	// A submit that gives up while waiting was certainly not sent.
	ctx, cancel := context.WithCancel(context.Background())
	fourth := make(chan error, 1)
	go func() {
		_, err := c.Submit(ctx, &SM{ShortMessage: []byte("y")})
		fourth <- err
	}()
	eventually(t, "a fourth submit waiting", func() bool { return blockedIn(inWindowWait) == 2 })
	cancel()
	if err := <-fourth; !errors.Is(err, ErrNotSent) {
		t.Fatalf("cancelled wait for the window: %v, want ErrNotSent", err)
	}
	select {
	case e := <-smsc.events:
		t.Fatalf("the SMSC received %s while the window was full", e.p.Command)
	default:
	}

	smsc.release()
	e := smsc.next(t, CmdSubmitSM) // the third goes once there is room
	smsc.answerSubmit(e.c, e.p)
	for range 3 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
}

func TestThrottlingIsRetryableAndDistinct(t *testing.T) {
	noLeaks(t)
	smsc := newFakeSMSC(t, nil)
	var rec recorder
	c := newClient(t, rec.config(smsc.addr()))
	run(t, c)
	waitBound(t, c)
	ctx := context.Background()

	smsc.set(func(s *fakeSMSC) { s.refuse = []Status{StatusThrottled, StatusMsgQueueFull, StatusSubmitFailed} })
	_, err := c.Submit(ctx, &SM{ShortMessage: []byte("a")})
	var se *StatusError
	if !errors.As(err, &se) || !errors.Is(err, StatusThrottled) || !se.Retryable() {
		t.Fatalf("throttled submit: %v", err)
	}
	if _, err = c.Submit(ctx, &SM{ShortMessage: []byte("a")}); !errors.Is(err, StatusMsgQueueFull) || errors.Is(err, StatusThrottled) {
		t.Fatalf("queue-full submit: %v", err)
	}
	if _, err = c.Submit(ctx, &SM{ShortMessage: []byte("a")}); !errors.Is(err, StatusSubmitFailed) || !errors.As(err, &se) || se.Retryable() {
		t.Fatalf("failed submit: %v", err)
	}
	for range 3 {
		smsc.next(t, CmdSubmitSM)
	}

	// Send resubmits the same part while the SMSC throttles, and only then.
	smsc.set(func(s *fakeSMSC) { s.refuse = []Status{StatusThrottled, StatusThrottled, StatusMsgQueueFull} })
	ids, err := c.Send(ctx, Message{Text: "hello"})
	if err != nil || len(ids) != 1 {
		t.Fatalf("Send after throttling = %v, %v", ids, err)
	}
	for range 4 {
		if sm := smsc.next(t, CmdSubmitSM).p.Body.(*SM); string(sm.ShortMessage) != "hello" {
			t.Fatalf("resubmitted %q", sm.ShortMessage)
		}
	}
	smsc.set(func(s *fakeSMSC) { s.refuse = []Status{StatusInvalidDest} })
	if ids, err := c.Send(ctx, Message{Text: "x"}); !errors.Is(err, StatusInvalidDest) || len(ids) != 0 {
		t.Fatalf("Send refused = %v, %v, want ESME_RINVDSTADR and no retry", ids, err)
	}
	smsc.next(t, CmdSubmitSM)
	select {
	case e := <-smsc.events:
		t.Fatalf("after a refusal that is not retryable the SMSC received %s", e.p.Command)
	default:
	}
}

func TestEnquireLinkBothWays(t *testing.T) {
	noLeaks(t)
	smsc := newFakeSMSC(t, nil)
	var rec recorder
	cfg := rec.config(smsc.addr())
	cfg.EnquireLink = 20 * time.Millisecond
	cfg.ResponseTimeout = 2 * time.Second // how long the silent SMSC is given; generous for a loaded machine
	c := newClient(t, cfg)
	run(t, c)
	conn := smsc.next(t, CmdBindTransceiver).c
	waitBound(t, c)

	// The SMSC's enquire_link is answered with its sequence number.
	seq := conn.request(&PDU{Command: CmdEnquireLink})
	if r := smsc.next(t, CmdEnquireLinkResp).p; r.Seq != seq {
		t.Fatalf("enquire_link_resp seq %d, want %d", r.Seq, seq)
	}
	// On a quiet link the client asks, and the SMSC answers.
	smsc.next(t, CmdEnquireLink)
	smsc.next(t, CmdEnquireLink)
	if st := c.State(); st.Link != Bound {
		t.Fatalf("state %+v after answered enquire_links", st)
	}
	// An SMSC that stops answering is a dead link: the client rebinds.
	smsc.set(func(s *fakeSMSC) { s.silent = true })
	smsc.next(t, CmdEnquireLink)
	eventually(t, "the link declared dead", func() bool { return errors.Is(c.State().LastError, ErrLinkDead) })
	smsc.set(func(s *fakeSMSC) { s.silent = false })
	smsc.next(t, CmdBindTransceiver)
	waitBound(t, c)
}

func TestResponseTimeoutIsAnUnknownOutcome(t *testing.T) {
	noLeaks(t)
	smsc := newFakeSMSC(t, nil)
	var rec recorder
	cfg := rec.config(smsc.addr())
	cfg.ResponseTimeout = 100 * time.Millisecond
	c := newClient(t, cfg)
	run(t, c)
	waitBound(t, c)
	smsc.set(func(s *fakeSMSC) { s.hold = true })
	if _, err := c.Submit(context.Background(), &SM{ShortMessage: []byte("x")}); !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("unanswered submit: %v, want ErrOutcomeUnknown", err)
	}
	smsc.next(t, CmdBindTransceiver) // the client gave that session up and bound again
	eventually(t, "rebound", func() bool {
		st := c.State()
		return st.Link == Bound && errors.Is(st.LastError, ErrResponseTimeout)
	})
}

func TestReconnectAcrossAddressesAfterDrops(t *testing.T) {
	noLeaks(t)
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	smsc := newFakeSMSC(t, nil)
	var rec recorder
	c := newClient(t, rec.config(deadAddr, smsc.addr()))
	run(t, c)
	conn := smsc.next(t, CmdBindTransceiver).c
	waitBound(t, c)
	if st := c.State(); st.Addr != smsc.addr() || st.LastError == nil {
		t.Fatalf("state %+v: want bound to the second address, the first one's error kept", st)
	}

	// The SMSC drops the link; a submit made meanwhile goes on the next bind.
	conn.Close()
	eventually(t, "the drop noticed", func() bool { return c.State().Link != Bound })
	id, err := c.Submit(context.Background(), &SM{ShortMessage: []byte("after the drop")})
	if err != nil || id == "" {
		t.Fatalf("Submit across a reconnect = %q, %v", id, err)
	}
	smsc.next(t, CmdBindTransceiver)

	// The SMSC unbinds: answered, and bound again.
	conn = smsc.next(t, CmdSubmitSM).c
	conn.request(&PDU{Command: CmdUnbind})
	smsc.next(t, CmdUnbindResp)
	eventually(t, "down after unbind", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for _, s := range rec.states {
			if s.Link == Down && errors.Is(s.LastError, ErrUnbound) {
				return true
			}
		}
		return false
	})
	smsc.next(t, CmdBindTransceiver)
	waitBound(t, c)
	rec.mu.Lock()
	var links []Link
	for _, s := range rec.states {
		if len(links) == 0 || links[len(links)-1] != s.Link {
			links = append(links, s.Link)
		}
	}
	rec.mu.Unlock()
	if got := linksString(links); !strings.HasPrefix(got, "connecting bound down connecting bound down connecting bound") {
		t.Errorf("states went %s", got)
	}
}

func linksString(ls []Link) string {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = string(l)
	}
	return strings.Join(s, " ")
}

func TestRefusedBindBacksOff(t *testing.T) {
	noLeaks(t)
	smsc := newFakeSMSC(t, nil)
	smsc.set(func(s *fakeSMSC) { s.password = "other" })
	var rec recorder
	c := newClient(t, rec.config(smsc.addr()))
	run(t, c)
	var at []time.Time
	for range 4 {
		smsc.next(t, CmdBindTransceiver)
		at = append(at, time.Now())
	}
	st := c.State()
	if st.Link == Bound || !errors.Is(st.LastError, StatusInvalidPassword) {
		t.Fatalf("state %+v, want down with ESME_RINVPASWD", st)
	}
	// Waits of 5, 10, 20 ms at least: never a tight loop.
	for i, want := range []time.Duration{5, 10, 20} {
		if gap := at[i+1].Sub(at[i]); gap < want*time.Millisecond {
			t.Errorf("bind %d came %v after the previous, want at least %v", i+2, gap, want*time.Millisecond)
		}
	}
	if _, err := c.Submit(canceled(), &SM{}); !errors.Is(err, ErrNotSent) {
		t.Errorf("Submit while down: %v, want ErrNotSent", err)
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestStopWaitsForSubmitsThenUnbinds(t *testing.T) {
	noLeaks(t)
	smsc := newFakeSMSC(t, nil)
	var rec recorder
	c := newClient(t, rec.config(smsc.addr()))
	stop := run(t, c)
	waitBound(t, c)
	smsc.set(func(s *fakeSMSC) { s.hold = true })
	res := make(chan error, 1)
	go func() {
		_, err := c.Submit(context.Background(), &SM{ShortMessage: []byte("x")})
		res <- err
	}()
	smsc.next(t, CmdSubmitSM)
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	eventually(t, "no longer taking submits", func() bool {
		_, err := c.Submit(canceled(), &SM{})
		return errors.Is(err, ErrNotSent)
	})
	smsc.release()
	if err := <-res; err != nil {
		t.Fatalf("the submit in flight at stop: %v", err)
	}
	smsc.next(t, CmdUnbind)
	<-stopped
	if st := c.State(); st.Link != Down || !errors.Is(st.LastError, ErrClosed) {
		t.Fatalf("state after stop %+v", st)
	}
	if _, err := c.Submit(context.Background(), &SM{}); !errors.Is(err, ErrNotSent) || !errors.Is(err, ErrClosed) {
		t.Fatalf("Submit after stop: %v", err)
	}
}

func TestMalformedAndUnknownPDUsAreNacked(t *testing.T) {
	noLeaks(t)
	smsc := newFakeSMSC(t, nil)
	var rec recorder
	c := newClient(t, rec.config(smsc.addr()))
	run(t, c)
	conn := smsc.next(t, CmdBindTransceiver).c
	waitBound(t, c)
	conn.Write(pdu(t, "00000012 00000103 00000000 00000077 0102")) // data_sm: not supported
	if r := smsc.next(t, CmdGenericNack).p; r.Status != StatusInvalidCmdID || r.Seq != 0x77 {
		t.Fatalf("generic_nack %+v", r)
	}
	conn.Write(pdu(t, "00000014 00000005 00000000 00000078 41424344")) // deliver_sm cut short
	if r := smsc.next(t, CmdGenericNack).p; r.Status != StatusInvalidCmdLen || r.Seq != 0x78 {
		t.Fatalf("generic_nack %+v", r)
	}
	if c.State().Link != Bound {
		t.Fatal("a malformed PDU ended the session")
	}
}

func TestTLS(t *testing.T) {
	noLeaks(t)
	cert, pool := selfSigned(t)
	smsc := newFakeSMSC(t, &tls.Config{Certificates: []tls.Certificate{cert}})
	var rec recorder
	cfg := rec.config(smsc.addr())
	cfg.TLS = &tls.Config{RootCAs: pool}
	c := newClient(t, cfg)
	run(t, c)
	waitBound(t, c)
	if id, err := c.Submit(context.Background(), &SM{ShortMessage: []byte("over TLS")}); err != nil || id == "" {
		t.Fatalf("Submit over TLS = %q, %v", id, err)
	}
}

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "smsc"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

func TestSendGivenUpWhileThrottled(t *testing.T) {
	noLeaks(t)
	smsc := newFakeSMSC(t, nil)
	var rec recorder
	cfg := rec.config(smsc.addr())
	cfg.ThrottleWait = time.Hour
	c := newClient(t, cfg)
	run(t, c)
	waitBound(t, c)
	smsc.set(func(s *fakeSMSC) { s.refuse = []Status{StatusThrottled} })
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() {
		_, err := c.Send(ctx, Message{Text: "x"})
		res <- err
	}()
	eventually(t, "Send waiting to resubmit", func() bool { return blockedIn(inThrottleWait) == 1 })
	cancel()
	if err := <-res; !errors.Is(err, StatusThrottled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Send given up while throttled: %v, want ESME_RTHROTTLED and the cancellation", err)
	}
}
