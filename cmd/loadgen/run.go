package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
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

// Run warms up, then measures cfg.URL. It returns an error only if requests
// cannot be built at all; failed requests are counted in the Result.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Concurrency < 1 {
		return nil, fmt.Errorf("concurrency %d: want at least 1", cfg.Concurrency)
	}
	if _, err := cfg.newRequest(ctx); err != nil {
		return nil, err
	}
	tr := newTransport(cfg.Concurrency)
	// Close pooled connections afterwards so the target does not carry the
	// ceiling's (or a previous run's) idle connections.
	defer tr.CloseIdleConnections()
	client := &http.Client{
		Transport: tr,
		Timeout:   cfg.Timeout,
		// A followed redirect would count two round trips as one request
		// and hide the 3xx; report it as the response it is.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}

	// Warmup is a separate phase rather than a time cut-off inside one phase:
	// it opens all keep-alive connections and warms both processes' caches,
	// and the measured phase then starts with every worker at the same time.
	if cfg.Warmup > 0 {
		warm := runPhase(ctx, &cfg, client, cfg.Name+" warmup", 0, cfg.Warmup, false)
		if warm.Interrupted {
			return warm, nil
		}
	}
	return runPhase(ctx, &cfg, client, cfg.Name, cfg.Requests, cfg.Duration, true), nil
}

// newTransport returns the one Transport shared by all workers of a run.
func newTransport(concurrency int) *http.Transport {
	var protos http.Protocols
	// HTTP/1.1 only: with HTTP/2 all workers would multiplex over one
	// connection, and a plain-HTTP ceiling could not be compared with it.
	protos.SetHTTP1(true)
	return &http.Transport{
		// Never go through $HTTP_PROXY: we measure the server, not a proxy.
		Proxy:       nil,
		DialContext: (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		// Every worker keeps its connection between requests; with fewer
		// idle slots than workers, connections would be closed and redialled
		// and we would be measuring TCP setup.
		MaxIdleConns:        0, // no global limit
		MaxIdleConnsPerHost: concurrency,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		// Otherwise the transport asks for gzip and decompresses bodies,
		// adding client CPU the user did not ask for. Use -H to ask for it.
		DisableCompression: true,
		Protocols:          &protos,
	}
}

// newRequest builds one request. Requests are not reused across iterations:
// a Request may still be referenced by the transport after Do returns.
func (cfg *Config) newRequest(ctx context.Context) (*http.Request, error) {
	var body io.Reader
	if len(cfg.Body) > 0 {
		body = bytes.NewReader(cfg.Body) // also sets ContentLength and GetBody
	}
	req, err := http.NewRequestWithContext(ctx, cfg.Method, cfg.URL, body)
	if err != nil {
		return nil, err
	}
	if cfg.Header != nil {
		// Shared, not cloned: net/http clones the map before it modifies it.
		req.Header = cfg.Header
	}
	if cfg.Host != "" {
		req.Host = cfg.Host
	}
	return req, nil
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
	client   *http.Client
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

func runPhase(ctx context.Context, cfg *Config, client *http.Client, name string, n int, d time.Duration, measure bool) *Result {
	p := &phase{cfg: cfg, client: client, measure: measure, n: int64(n)}
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
		wg.Go(func() { p.loop(ctx, w) })
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

func (p *phase) loop(ctx context.Context, w *worker) {
	for ctx.Err() == nil {
		if p.n > 0 {
			if p.issued.Add(1) > p.n {
				return
			}
		} else if !time.Now().Before(p.deadline) {
			return
		}
		p.do(ctx, w)
	}
}

// do sends one request and records its outcome.
func (p *phase) do(ctx context.Context, w *worker) {
	req, err := p.cfg.newRequest(ctx)
	if err != nil {
		p.fail(err.Error())
		return
	}
	start := time.Now()
	resp, err := p.client.Do(req)
	if err != nil {
		if ctx.Err() == nil { // an interrupted request is neither success nor failure
			p.fail(err.Error())
		}
		return
	}
	ok := p.cfg.statusOK(resp.StatusCode)
	var sample []byte
	if !ok {
		sample, _ = io.ReadAll(io.LimitReader(resp.Body, 512))
	}
	// Read the body to the end: the server's work includes producing it, and
	// an unread body would stop the connection from being reused.
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	latency := time.Since(start)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			p.fail("reading body: " + err.Error())
		}
	case !ok:
		p.fail(statusMessage(resp.StatusCode, sample))
	default:
		p.counters.Done.Add(1)
		if p.measure {
			w.latencies = append(w.latencies, latency)
			w.bytes += n
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
