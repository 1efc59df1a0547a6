// Command smsc is the SMSC simulator of the SMPP benchmark
// (bench/smpp-compare.sh): the one SMSC that Switchboard's smpp connection,
// Kannel's smsc = smpp and a bare ESME (smsc rtt) each bind in turn, so
// that the three are measured against the same peer.
//
//	smsc serve [-listen 127.0.0.1:0] [-receipt-delay 5ms] [-receipts=false]
//	smsc rtt -addr HOST:PORT [-c 64] [-window 10] [-d 10s]
//
// serve accepts any number of bind_transceiver sessions (any credentials,
// unless -system-id and -password are given), answers enquire_link, answers
// each submit_sm at once with a fresh decimal message_id and, when it asks
// for one, sends a delivery receipt -receipt-delay later: a deliver_sm with
// the receipt flag in esm_class, the Appendix B text and the
// receipted_message_id and message_state parameters, as real SMSCs do (so
// that an ESME that reads either finds it). A receipt the ESME answers with
// an error (Switchboard answers ESME_RX_T_APPN when the receipt overtook
// the record of its submit) is sent again -retry later, as SMSCs retry.
//
// It prints "listening ADDR" first, then one line per second:
//
//	tick ELAPSED SUBMITS RECEIPTS REFUSED BINDS
//
// ELAPSED is seconds since start (monotonic, so a late tick on a busy
// machine does not distort a rate), the rest are totals so far: submit_sm
// answered, receipts acknowledged, receipts refused (each retried), binds
// accepted. The throughput check reads its rate from these lines: counted
// where the messages arrive, not where they leave.
//
// rtt is the simulator's own round trip: package smpp's client (the one
// Switchboard's connection uses) bound with -window, driven by -c
// goroutines that each submit one text after another, timed from the call
// to the message_id. It is what any ESME at that concurrency and window
// gets from this simulator on this machine, the floor of Switchboard's
// latency through it.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/carrier/smpp"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: smsc serve|rtt [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "rtt":
		err = rtt(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, "usage: smsc serve|rtt [flags]")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "smsc:", err)
		os.Exit(1)
	}
}

// sim is the simulator's configuration and counters, shared by its sessions.
type sim struct {
	systemID, password string
	sendReceipts       bool
	receiptDelay       time.Duration
	retry              time.Duration

	ids                               atomic.Uint64
	submits, receipts, refused, binds atomic.Int64
}

func serve(args []string) error {
	fs := flag.NewFlagSet("smsc serve", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	s := &sim{}
	fs.StringVar(&s.systemID, "system-id", "", "accept only this system_id (default: any)")
	fs.StringVar(&s.password, "password", "", "accept only this password (default: any)")
	fs.BoolVar(&s.sendReceipts, "receipts", true, "send a receipt for each submit_sm that asks for one (false: to see what receipts cost an ESME)")
	fs.DurationVar(&s.receiptDelay, "receipt-delay", 5*time.Millisecond, "from submit_sm_resp to its receipt")
	fs.DurationVar(&s.retry, "retry", time.Second, "wait before sending a refused receipt again")
	fs.Parse(args)

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Println("listening", ln.Addr())
	go s.ticks()
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go s.session(c)
	}
}

// ticks prints the counters once a second.
func (s *sim) ticks() {
	start := time.Now()
	for range time.Tick(time.Second) {
		fmt.Printf("tick %.3f %d %d %d %d\n", time.Since(start).Seconds(),
			s.submits.Load(), s.receipts.Load(), s.refused.Load(), s.binds.Load())
	}
}

// conn is one ESME's session. Writes come from the reader (responses) and
// from receipt timers, so they are serialised; the PDU is written whole in
// one call so that a response is never held behind a buffer.
type conn struct {
	net.Conn
	wmu     sync.Mutex
	seq     atomic.Uint32
	mu      sync.Mutex
	pending map[uint32]*smpp.SM // receipts sent, by sequence number, awaiting deliver_sm_resp
	closed  atomic.Bool
}

func (c *conn) send(p *smpp.PDU) {
	b, err := p.MarshalBinary()
	if err != nil {
		fmt.Fprintln(os.Stderr, "smsc: marshal:", err)
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.Write(b); err != nil {
		c.Close()
	}
}

func (s *sim) session(nc net.Conn) {
	c := &conn{Conn: nc, pending: map[uint32]*smpp.SM{}}
	defer func() { c.closed.Store(true); c.Close() }()
	r := bufio.NewReader(nc)
	bound := false
	for {
		p, err := smpp.ReadPDU(r, 0)
		if p == nil {
			return // an I/O or framing error: the stream is lost
		}
		if err != nil && !p.Command.IsResponse() {
			// Framed but unknown or malformed: say so and read on. A
			// response's header is all that is used below, so it goes on.
			c.send(&smpp.PDU{Command: smpp.CmdGenericNack, Status: smpp.StatusInvalidCmdID, Seq: p.Seq})
			continue
		}
		switch p.Command {
		case smpp.CmdBindTransceiver:
			b := p.Body.(*smpp.Bind)
			st := smpp.StatusOK
			if (s.systemID != "" && b.SystemID != s.systemID) || (s.password != "" && b.Password != s.password) {
				st = smpp.StatusInvalidPassword
			} else {
				bound = true
				s.binds.Add(1)
			}
			c.send(&smpp.PDU{Command: smpp.CmdBindTransceiverResp, Status: st, Seq: p.Seq, Body: &smpp.BindResp{SystemID: "benchsmsc"}})
		case smpp.CmdSubmitSM:
			if !bound {
				c.send(&smpp.PDU{Command: smpp.CmdSubmitSMResp, Status: smpp.StatusInvalidBindState, Seq: p.Seq})
				continue
			}
			sm := p.Body.(*smpp.SM)
			id := strconv.FormatUint(s.ids.Add(1), 10)
			submitted := time.Now()
			c.send(&smpp.PDU{Command: smpp.CmdSubmitSMResp, Seq: p.Seq, Body: &smpp.SMResp{MessageID: id}})
			s.submits.Add(1)
			if s.sendReceipts && sm.RegisteredDelivery&0x03 != 0 {
				rc := receipt(sm, id, submitted)
				time.AfterFunc(s.receiptDelay, func() { s.sendReceipt(c, rc) })
			}
		case smpp.CmdDeliverSMResp:
			c.mu.Lock()
			rc := c.pending[p.Seq]
			delete(c.pending, p.Seq)
			c.mu.Unlock()
			if rc == nil {
				continue
			}
			if p.Status == smpp.StatusOK {
				s.receipts.Add(1)
				continue
			}
			s.refused.Add(1)
			time.AfterFunc(s.retry, func() { s.sendReceipt(c, rc) })
		case smpp.CmdEnquireLink:
			c.send(&smpp.PDU{Command: smpp.CmdEnquireLinkResp, Seq: p.Seq})
		case smpp.CmdUnbind:
			c.send(&smpp.PDU{Command: smpp.CmdUnbindResp, Seq: p.Seq})
			return
		case smpp.CmdEnquireLinkResp, smpp.CmdUnbindResp, smpp.CmdGenericNack:
		default:
			if !p.Command.IsResponse() {
				c.send(&smpp.PDU{Command: smpp.CmdGenericNack, Status: smpp.StatusInvalidCmdID, Seq: p.Seq})
			}
		}
	}
}

// sendReceipt sends rc on c (unless c has gone: the ESME that asked for it
// is gone, and a real SMSC would keep it for the next bind, which no
// benchmark here needs) and remembers it until it is answered.
func (s *sim) sendReceipt(c *conn, rc *smpp.SM) {
	if c.closed.Load() {
		return
	}
	seq := c.seq.Add(1)
	c.mu.Lock()
	c.pending[seq] = rc
	c.mu.Unlock()
	c.send(&smpp.PDU{Command: smpp.CmdDeliverSM, Seq: seq, Body: rc})
}

// receipt is the deliver_sm reporting submit sm (message id) delivered, in
// the form of SMPP 3.4 Appendix B with the 3.4 parameters beside it.
func receipt(sm *smpp.SM, id string, submitted time.Time) *smpp.SM {
	text := sm.ShortMessage
	if sm.ESMClass&smpp.ESMClassUDHI != 0 && len(text) > 0 && int(text[0]) < len(text) {
		text = text[1+int(text[0]):] // the original text, without its header
	}
	if len(text) > 20 {
		text = text[:20]
	}
	date := submitted.UTC().Format("0601021504")
	msg := fmt.Sprintf("id:%s sub:001 dlvrd:001 submit date:%s done date:%s stat:DELIVRD err:000 text:%s", id, date, date, text)
	return &smpp.SM{
		Source: sm.Dest, Dest: sm.Source, // from the handset back to the sender
		ESMClass:     smpp.ESMClassReceipt,
		DataCoding:   sm.DataCoding,
		ShortMessage: []byte(msg),
		TLVs: smpp.TLVs{
			smpp.CStringTLV(smpp.TagReceiptedMessageID, id),
			{Tag: smpp.TagMessageState, Value: []byte{2}}, // DELIVERED
		},
	}
}

// rtt measures the simulator's own round trip (see the package comment).
func rtt(args []string) error {
	fs := flag.NewFlagSet("smsc rtt", flag.ExitOnError)
	addr := fs.String("addr", "", "the simulator's address (required)")
	conc := fs.Int("c", 64, "concurrent senders")
	window := fs.Int("window", 10, "unanswered submit_sm on the bind")
	dur := fs.Duration("d", 10*time.Second, "measured duration")
	warmup := fs.Duration("warmup", time.Second, "unmeasured warm-up before -d")
	fs.Parse(args)
	if *addr == "" {
		return fmt.Errorf("rtt: -addr is required")
	}
	bound := make(chan struct{})
	var once sync.Once
	client, err := smpp.New(smpp.Config{Addrs: []string{*addr}, SystemID: "rtt", Password: "rtt", Window: *window,
		OnState: func(st smpp.State) {
			if st.Link == smpp.Bound {
				once.Do(func() { close(bound) })
			}
		}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { client.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	select {
	case <-bound:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("rtt: no bind to %s within 10 s", *addr)
	}

	var phase atomic.Int32 // 0 warm-up, 1 measuring, 2 done
	var failed atomic.Int64
	lat := make([][]time.Duration, *conc)
	var wg sync.WaitGroup
	for w := range *conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The same text and numbers as the HTTP benchmark's send.
			m := smpp.Message{Source: smpp.DefaultAddress("14155550100"), Dest: smpp.DefaultAddress(fmt.Sprintf("1212555%04d", w)),
				Text: "Your appointment is tomorrow at 9:00. Reply STOP to opt out.", RegisteredDelivery: smpp.ReceiptFinal}
			for {
				p := phase.Load()
				if p == 2 {
					return
				}
				start := time.Now()
				_, err := client.Send(ctx, m)
				took := time.Since(start)
				if p != 1 {
					continue
				}
				if err != nil {
					failed.Add(1)
					continue
				}
				lat[w] = append(lat[w], took)
			}
		}()
	}
	time.Sleep(*warmup) // the load's clock, not a wait for a condition
	phase.Store(1)
	start := time.Now()
	time.Sleep(*dur)
	phase.Store(2)
	elapsed := time.Since(start)
	wg.Wait()

	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	if len(all) == 0 {
		return fmt.Errorf("rtt: no submit answered (%d failed)", failed.Load())
	}
	slices.Sort(all)
	fmt.Printf("smsc rtt: c=%d window=%d: %d submits, %d failed in %.2fs: %.0f submits/s, p50 %.3f ms, p99 %.3f ms\n",
		*conc, *window, len(all), failed.Load(), elapsed.Seconds(), float64(len(all))/elapsed.Seconds(),
		ms(pct(all, 50)), ms(pct(all, 99)))
	return nil
}

// pct is the p-th percentile of sorted durations (nearest rank).
func pct(sorted []time.Duration, p int) time.Duration {
	i := max((len(sorted)*p+99)/100, 1)
	return sorted[i-1]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
