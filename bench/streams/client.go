package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// newTransport is a client for thousands of long-lived connections to one
// host: no cap on connections per host, small per-connection buffers (a
// stream reads a few hundred bytes at a time; the default 4 KiB each way
// would be most of the client's memory at 10,000 streams).
func newTransport(conns int, readBuf int) *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		ReadBufferSize:      readBuf,
		WriteBufferSize:     1024,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
}

// streamStats is what the stream goroutines count, across all streams.
type streamStats struct {
	events    atomic.Int64 // dispatched events of every type
	resets    atomic.Int64 // "reset" events
	disorder  atomic.Int64 // events whose id was not above the stream's previous one
	comments  atomic.Int64 // comment lines (keepalives)
	ended     atomic.Int64 // streams the server ended or that failed while the run still wanted them
	endReason atomic.Value // the first such reason (string)
	lat       bounds       // send → receipt, for the events of this run's sends
}

// stream is one open event stream.
type stream struct {
	got      atomic.Int64 // events received
	comments atomic.Int64
	lastID   int64
}

// streamOpts describe how streams are opened.
type streamOpts struct {
	url       string // the events endpoint, query included
	key       string
	lastID    string // Last-Event-ID, "" for none
	bufSize   int    // the parser's initial buffer
	openConc  int    // streams being opened at once
	ledger    *ledger
	transport *http.Transport
}

// openStreams opens n streams and returns once every one is open (status
// 200, headers read) or has failed; each then reads on its own goroutine
// until ctx ends. The error describes the failures, by status, if any.
func openStreams(ctx context.Context, o streamOpts, n int, st *streamStats) ([]*stream, error) {
	client := &http.Client{Transport: o.transport}
	sem := make(chan struct{}, max(o.openConc, 1))
	var (
		mu       sync.Mutex
		failures = map[string]int{}
		open     []*stream
		opened   sync.WaitGroup // the opens only: the readers run on until ctx ends
	)
	for range n {
		sem <- struct{}{}
		opened.Add(1)
		go func() {
			s := &stream{}
			resp, err := dialStream(ctx, client, o)
			mu.Lock()
			if err != nil {
				failures[err.Error()]++
			} else {
				open = append(open, s)
			}
			mu.Unlock()
			<-sem
			opened.Done()
			if err == nil {
				s.read(ctx, resp.Body, o, st)
			}
		}()
	}
	opened.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(failures) > 0 {
		var b bytes.Buffer
		fmt.Fprintf(&b, "%d of %d streams did not open:", n-len(open), n)
		for reason, k := range failures {
			fmt.Fprintf(&b, " %d× %s;", k, reason)
		}
		return open, errors.New(b.String())
	}
	return open, nil
}

// dialStream sends the GET, retrying a failed connection a few times (a
// burst of thousands of connects can overflow the listen backlog), and
// returns the response once it is a 200 text/event-stream.
func dialStream(ctx context.Context, client *http.Client, o streamOpts) (*http.Response, error) {
	var last error
	for attempt := range 5 {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.url, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+o.key)
		req.Header.Set("Accept", "text/event-stream")
		if o.lastID != "" {
			req.Header.Set("Last-Event-ID", o.lastID)
		}
		resp, err := client.Do(req)
		if err != nil {
			last = err
			if ctx.Err() != nil {
				return nil, err
			}
			continue
		}
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
			resp.Body.Close()
			return nil, fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(b))
		}
		if ct := resp.Header.Get("Content-Type"); len(ct) < 17 || ct[:17] != "text/event-stream" {
			resp.Body.Close()
			return nil, fmt.Errorf("Content-Type %q, not text/event-stream", ct)
		}
		return resp, nil
	}
	return nil, last
}

// read parses the stream until it ends, recording each event.
func (s *stream) read(ctx context.Context, body io.ReadCloser, o streamOpts, st *streamStats) {
	defer body.Close()
	p := newParser(body, o.bufSize)
	p.onComment = func() { s.comments.Add(1); st.comments.Add(1) }
	for {
		ev, err := p.next()
		if err != nil {
			if ctx.Err() == nil {
				st.ended.Add(1)
				st.endReason.CompareAndSwap(nil, err.Error())
			}
			return
		}
		now := time.Now()
		s.got.Add(1)
		st.events.Add(1)
		if string(ev.Type) == "reset" {
			st.resets.Add(1)
		}
		if id, ok := eventNumber(ev.ID); ok {
			if id <= s.lastID {
				st.disorder.Add(1)
			}
			s.lastID = id
		}
		if o.ledger != nil {
			if seq, ok := o.ledger.seqOf(ev.Data); ok {
				st.lat.add(now, o.ledger, seq)
			}
		}
	}
}

// eventNumber is N of an event id "evt_N".
func eventNumber(id []byte) (int64, bool) {
	if !bytes.HasPrefix(id, []byte("evt_")) {
		return 0, false
	}
	return digits(id[4:])
}

// ledger remembers when each send of the run started and when its
// response came, by its sequence number, which the send carries as its
// recipient's number (numberBase + seq): the event payload names the
// recipient but carries no text and only a whole-second timestamp, so the
// recipient is how a received event finds its send. The event is created
// by the send's commit, somewhere between the two times, so every latency
// is given as two bounds (see bounds).
type ledger struct {
	sent  []atomic.Int64 // unix ns the POST began; 0: no such send in this run
	done  []atomic.Int64 // unix ns its response arrived; 0: not yet
	phase []atomic.Int32 // which phase of the run sent it
}

// numberBase is the first recipient: +1 212 200-0000, a valid North
// American number, as is every one up to +1 212 999-9999.
const numberBase = 12122000000

func newLedger(capacity int) *ledger {
	capacity = min(capacity, 7_999_999)
	return &ledger{sent: make([]atomic.Int64, capacity), done: make([]atomic.Int64, capacity), phase: make([]atomic.Int32, capacity)}
}

func (l *ledger) record(seq int64, phase int32, at time.Time) {
	l.phase[seq].Store(phase)
	l.sent[seq].Store(at.UnixNano())
}

func (l *ledger) answered(seq int64, at time.Time) { l.done[seq].Store(at.UnixNano()) }

// bounds is a latency measured from both ends of the POST that created the
// event: from its start (an upper bound: it includes the send's handling up
// to its commit, queueing in a busy server included) and from its response
// (a lower bound, 0 when the event arrived first). Stream and webhook are
// measured alike, so their comparison does not depend on which is used.
type bounds struct{ upper, lower hist }

// add records the event of send seq received at now, reporting false for a
// send this run did not make.
func (b *bounds) add(now time.Time, l *ledger, seq int64) bool {
	start := l.sent[seq].Load()
	if start == 0 {
		return false
	}
	b.upper.add(now.Sub(time.Unix(0, start)))
	if done := l.done[seq].Load(); done != 0 {
		b.lower.add(max(now.Sub(time.Unix(0, done)), 0))
	} else {
		b.lower.add(0)
	}
	return true
}

// print writes both bounds, one line each, as "  what, from …: figures".
func (b *bounds) print(out io.Writer, what string) {
	fmt.Fprintf(out, "  %s, from the POST's start (upper bound): %s\n", what, b.upper.summary())
	fmt.Fprintf(out, "  %s, from the POST's response (lower bound): %s\n", what, b.lower.summary())
}

var (
	sentMarker   = []byte(`"event":"message.sent"`)
	numberMarker = []byte(`"number":"`)
)

// seqOf is the send sequence number of a message.sent payload, found by
// scanning rather than decoding: the client parses hundreds of thousands of
// events a second on the cores the server needs.
func (l *ledger) seqOf(data []byte) (int64, bool) {
	if !bytes.Contains(data, sentMarker) {
		return 0, false
	}
	i := bytes.Index(data, numberMarker)
	if i < 0 {
		return 0, false
	}
	rest := data[i+len(numberMarker):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return 0, false
	}
	n, ok := digits(rest[:j])
	seq := n - numberBase
	if !ok || seq < 0 || seq >= int64(len(l.sent)) {
		return 0, false
	}
	return seq, true
}

// recipient is the number send seq goes to.
func recipient(seq int64) string { return "+" + strconv.FormatInt(numberBase+seq, 10) }
