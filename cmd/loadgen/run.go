package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
)

// Config describes one measured server. The ceiling and the target get the
// same Config apart from Name and URL, so the two runs differ only in the
// server being measured.
type Config struct {
	Name        string // "ceiling" or "target", shown in progress and output
	URL         string
	Method      string
	Header      http.Header // shared read-only by all workers
	Host        string      // overrides the URL's host in the Host header
	Body        []byte
	Concurrency int
	Requests    int           // measured requests; 0 means run for Duration
	Duration    time.Duration // measured time when Requests == 0
	Warmup      time.Duration // unmeasured time before measuring
	Timeout     time.Duration // per request, including reading the body
	Expect      int           // expected status; 0 means any 2xx

	// OnPhase, if set, is called as each phase (warmup, measurement) starts
	// with counters that workers update live; the progress line reads them.
	OnPhase func(name string, start time.Time, c *Counters)
}

// Counters are updated atomically by workers as requests complete.
type Counters struct {
	Done   atomic.Int64 // completed requests, successful or not
	Errors atomic.Int64
}

// Result is the outcome of measuring one server.
type Result struct {
	Summary
	ErrorSamples []ErrorSample // first distinct errors, in order of appearance
	OtherErrors  int64         // errors not represented in ErrorSamples
	Interrupted  bool
}

// ErrorSample is one distinct error message and how often it occurred.
type ErrorSample struct {
	Message string
	Count   int64
}

// maxErrorSamples bounds the distinct error messages kept: enough to show a
// 401 next to a 500 or a timeout, few enough that a message containing a
// changing port number cannot grow memory without bound.
const maxErrorSamples = 5

// clientMark in a body is replaced by each worker's number (0, 1, …, zero-padded
// to the width of the largest, so that every body has one length), so that the
// workers' requests differ: e.g. a send per worker to a recipient of its own,
// instead of every send to one conversation.
const clientMark = "{{client}}"

// forClient is cfg with worker i's body (see clientMark).
func (cfg *Config) forClient(i int) *Config {
	if !bytes.Contains(cfg.Body, []byte(clientMark)) {
		return cfg
	}
	c := *cfg
	n := fmt.Sprintf("%0*d", len(strconv.Itoa(cfg.Concurrency-1)), i)
	c.Body = bytes.ReplaceAll(cfg.Body, []byte(clientMark), []byte(n))
	return &c
}

// Run warms up, then measures cfg.URL. It returns an error only if requests
// cannot be built at all; failed requests are counted in the Result.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Concurrency < 1 {
		return nil, fmt.Errorf("concurrency %d: want at least 1", cfg.Concurrency)
	}
	clients := make([]*client, cfg.Concurrency)
	for i := range clients {
		req, err := newWireRequest(cfg.forClient(i))
		if err != nil {
			return nil, err
		}
		clients[i] = &client{req: req, timeout: cfg.Timeout}
	}
	stop := interruptOnDone(ctx, clients)
	defer func() {
		stop()
		// Close the connections so the target does not carry the ceiling's
		// (or a previous run's) idle connections.
		for _, c := range clients {
			c.close()
		}
	}()

	// Warmup is a separate phase rather than a time cut-off inside one phase:
	// it opens all keep-alive connections and warms both processes' caches,
	// and the measured phase then starts with every worker at the same time.
	if cfg.Warmup > 0 {
		warm := runPhase(ctx, &cfg, clients, cfg.Name+" warmup", 0, cfg.Warmup, false)
		if warm.Interrupted {
			return warm, nil
		}
	}
	return runPhase(ctx, &cfg, clients, cfg.Name, cfg.Requests, cfg.Duration, true), nil
}

func (cfg *Config) statusOK(code int) bool {
	if cfg.Expect == 0 {
		return code >= 200 && code <= 299
	}
	return code == cfg.Expect
}

// phase is the state shared by the workers of one warmup or measurement.
type phase struct {
	cfg      *Config
	measure  bool
	n        int64     // requests to issue; 0 means until deadline
	deadline time.Time // used when n == 0
	issued   atomic.Int64
	counters Counters
	errs     errorLog
}

// worker holds what one goroutine records; keeping latencies per worker
// avoids a lock on the hot path, and they are merged once at the end.
type worker struct {
	latencies []time.Duration
	bytes     int64
}

func runPhase(ctx context.Context, cfg *Config, clients []*client, name string, n int, d time.Duration, measure bool) *Result {
	p := &phase{cfg: cfg, measure: measure, n: int64(n)}
	start := time.Now()
	p.deadline = start.Add(d)
	if cfg.OnPhase != nil {
		cfg.OnPhase(name, start, &p.counters)
	}

	workers := make([]worker, cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range workers {
		w := &workers[i]
		if n > 0 {
			w.latencies = make([]time.Duration, 0, n/cfg.Concurrency+1)
		}
		c := clients[i]
		wg.Go(func() { p.loop(ctx, c, w) })
	}
	wg.Wait()
	// In duration mode this includes the requests still in flight at the
	// deadline: they were started within it, so they count, and dividing by
	// the real elapsed time keeps requests/s honest.
	elapsed := time.Since(start)

	var all []time.Duration
	var total int64
	for i := range workers {
		total += workers[i].bytes
		all = append(all, workers[i].latencies...)
	}
	res := &Result{
		Summary:     summarize(all, p.counters.Done.Load(), p.counters.Errors.Load(), elapsed, total),
		Interrupted: ctx.Err() != nil,
	}
	res.ErrorSamples, res.OtherErrors = p.errs.samples()
	return res
}

func (p *phase) loop(ctx context.Context, c *client, w *worker) {
	for ctx.Err() == nil {
		if p.n > 0 {
			if p.issued.Add(1) > p.n {
				return
			}
		} else if !time.Now().Before(p.deadline) {
			return
		}
		p.do(ctx, c, w)
	}
}

// do sends one request and records its outcome.
func (p *phase) do(ctx context.Context, c *client, w *worker) {
	start := time.Now()
	// The whole body is read: the server's work includes producing it, and
	// an unread body would stop the connection from being reused.
	resp, err := c.do(func(status int) bool { return !p.cfg.statusOK(status) })
	latency := time.Since(start)
	switch {
	case err != nil:
		if ctx.Err() == nil { // an interrupted request is neither success nor failure
			p.fail(err.Error())
		}
	case !p.cfg.statusOK(resp.status):
		p.fail(statusMessage(resp.status, resp.sample))
	default:
		p.counters.Done.Add(1)
		if p.measure {
			w.latencies = append(w.latencies, latency)
			w.bytes += resp.bytes
		}
	}
}

func (p *phase) fail(msg string) {
	p.counters.Done.Add(1)
	p.counters.Errors.Add(1)
	if p.measure {
		p.errs.add(msg)
	}
}

// statusMessage describes an unexpected response by status and the start of
// its body, which usually says why (e.g. a 401's "missing token").
func statusMessage(code int, body []byte) string {
	s := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, string(bytes.ToValidUTF8(body, []byte("?"))))
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 160 {
		s = string(r[:160]) + "…"
	}
	msg := fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
	if s != "" {
		msg += ": " + s
	}
	return msg
}

// errorLog counts the first maxErrorSamples distinct error messages. It is
// only touched on the error path, so a mutex is fine.
type errorLog struct {
	mu     sync.Mutex
	order  []string
	counts map[string]int64
	other  int64
}

func (l *errorLog) add(msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts == nil {
		l.counts = map[string]int64{}
	}
	if _, seen := l.counts[msg]; !seen && len(l.order) >= maxErrorSamples {
		l.other++
		return
	} else if !seen {
		l.order = append(l.order, msg)
	}
	l.counts[msg]++
}

func (l *errorLog) samples() ([]ErrorSample, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]ErrorSample, 0, len(l.order))
	for _, m := range l.order {
		out = append(out, ErrorSample{Message: m, Count: l.counts[m]})
	}
	return out, l.other
}
