package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testConfig is a small fixed-count run with no warmup, so every request the
// server sees is a measured one.
func testConfig(url string, n int) Config {
	return Config{
		Name: "target", URL: url, Method: http.MethodGet,
		Concurrency: 8, Requests: n, Timeout: 5 * time.Second,
	}
}

func TestRunCountsRequestsAndErrors(t *testing.T) {
	var seen atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization"); got != "Bearer t" {
			t.Errorf("Authorization = %q", got)
		}
		if b, _ := io.ReadAll(r.Body); string(b) != `{"q":1}` {
			t.Errorf("body = %q", b)
		}
		// Every third request fails, so exactly n/3 errors are expected.
		if seen.Add(1)%3 == 0 {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		w.Write([]byte(`{"data":[]}`))
	}))
	defer srv.Close()

	cfg := testConfig(srv.URL+"/users", 300)
	cfg.Method = http.MethodPost
	cfg.Header = http.Header{"Authorization": {"Bearer t"}}
	cfg.Body = []byte(`{"q":1}`)
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 300 || seen.Load() != 300 {
		t.Errorf("requests = %d, server saw %d, want 300", res.Requests, seen.Load())
	}
	if res.Errors != 100 {
		t.Errorf("errors = %d, want 100", res.Errors)
	}
	if len(res.ErrorSamples) != 1 || res.ErrorSamples[0].Count != 100 ||
		!strings.HasPrefix(res.ErrorSamples[0].Message, "HTTP 500 Internal Server Error: boom") {
		t.Errorf("error samples = %+v", res.ErrorSamples)
	}
	if res.RPS <= 0 || res.P50 <= 0 || res.Max < res.P99 || res.P99 < res.P50 {
		t.Errorf("implausible figures %+v", res.Summary)
	}
	if res.MeanBytes != float64(len(`{"data":[]}`)) {
		t.Errorf("mean bytes = %v", res.MeanBytes)
	}
}

func TestRunExpectedStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()

	// Default: any 2xx is fine.
	res, err := Run(context.Background(), testConfig(srv.URL, 50))
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 50 || res.Errors != 0 {
		t.Errorf("any-2xx run: requests=%d errors=%d, want 50, 0", res.Requests, res.Errors)
	}

	// -expect 200 turns every 201 into an error.
	cfg := testConfig(srv.URL, 50)
	cfg.Expect = http.StatusOK
	res, err = Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 50 || res.Errors != 50 || res.RPS != 0 {
		t.Errorf("expect-200 run: requests=%d errors=%d rps=%v, want 50, 50, 0", res.Requests, res.Errors, res.RPS)
	}
}

func TestRunKeepsConnections(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("x", 4096))) // body must be drained for reuse
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	cfg := testConfig(srv.URL, 2000)
	cfg.Warmup = 100 * time.Millisecond
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if c := conns.Load(); c > int64(cfg.Concurrency) {
		t.Errorf("server saw %d connections for %d workers: keep-alive is not working", c, cfg.Concurrency)
	}
}

func TestRunDuration(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()

	cfg := testConfig(srv.URL, 0)
	cfg.Duration = 300 * time.Millisecond
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Elapsed < cfg.Duration || res.Elapsed > cfg.Duration+time.Second {
		t.Errorf("requests=%d elapsed=%v for -d %v", res.Requests, res.Elapsed, cfg.Duration)
	}
}

func TestRunInterrupted(t *testing.T) {
	// Every request is still in flight when the interrupt comes: the server
	// answers none (the interrupt closes their connections).
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	cfg := testConfig(srv.URL, 0)
	cfg.Duration = time.Minute
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Requests cut off by the interrupt are not errors.
	if !res.Interrupted || res.Errors != 0 || res.Elapsed > 10*time.Second {
		t.Errorf("interrupted=%v errors=%d elapsed=%v", res.Interrupted, res.Errors, res.Elapsed)
	}
}

func TestErrorLogBounded(t *testing.T) {
	var l errorLog
	for i := range 20 {
		l.add(strings.Repeat("e", i%8+1)) // 8 distinct messages
	}
	samples, other := l.samples()
	if len(samples) != maxErrorSamples {
		t.Fatalf("kept %d samples, want %d", len(samples), maxErrorSamples)
	}
	var kept int64
	for _, s := range samples {
		kept += s.Count
	}
	if kept+other != 20 {
		t.Errorf("kept %d + other %d, want 20 in total", kept, other)
	}
}

// {{client}} in the body gives each worker a body of its own, the same on
// every request it sends: its number, zero-padded to the width of the
// largest (at -c 12, two digits).
func TestRunBodyPerClient(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen[string(b)]++
		mu.Unlock()
	}))
	defer srv.Close()

	cfg := testConfig(srv.URL, 400)
	cfg.Method = http.MethodPost
	cfg.Concurrency = 12
	cfg.Body = []byte(`{"to":"+1212555{{client}}"}`)
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if len(seen) != cfg.Concurrency {
		t.Fatalf("distinct bodies = %d (%v), want one per client (%d)", len(seen), seen, cfg.Concurrency)
	}
	for i := range cfg.Concurrency {
		if body := fmt.Sprintf(`{"to":"+1212555%02d"}`, i); seen[body] == 0 {
			t.Errorf("no request with body %s", body)
		}
	}
}
