package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-url", "ceiling", "-c", "0"},
		{"-url", "ceiling", "-c", "many"},
		{"-url", "ceiling", "-n", "10", "-d", "1s"},
		{"-url", "ceiling", "-n", "0"},
		{"-url", "ceiling", "-d", "-1s"},
		{"-url", "ceiling", "-warmup", "-1s"},
		{"-url", "ceiling", "-ceiling=false"},
		{"-url", "localhost:8080"},
		{"-url", "ftp://x/"},
		{"-url", "http://x/", "-H", "NoColon"},
		{"-url", "http://x/", "-H", "Bad Name: v"},
		{"-url", "http://x/", "-expect", "42"},
		{"-url", "http://x/", "-method", "GE T"},
		{"-url", "http://x/", "-body", "a", "-body-file", "f"},
		{"-url", "http://x/", "-body-file", "/does/not/exist"},
		{"-url", "http://x/", "stray"},
		{"-nope"},
	} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		msg := errb.String()
		if code != exitUsage || out.Len() != 0 ||
			!strings.HasPrefix(msg, "loadgen: ") || strings.Count(msg, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one stderr line", args, code, out.String(), msg)
		}
	}
}

func TestHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-h"}, &out, &errb); code != exitOK || !strings.Contains(out.String(), "-ceiling-bytes") {
		t.Errorf("-h: exit %d, output %q", code, out.String())
	}
	if strings.Contains(out.String(), "serve-ceiling") {
		t.Error("usage mentions the hidden -serve-ceiling mode")
	}
}

func TestHeaderParsing(t *testing.T) {
	o, err := parseFlags([]string{"-url", "http://x/", "-H", "Authorization: Bearer a:b", "-H", "host: api.test", "-H", "X-A: 1", "-H", "X-A: 2"})
	if err != nil {
		t.Fatal(err)
	}
	if got := o.header.Get("Authorization"); got != "Bearer a:b" {
		t.Errorf("Authorization = %q", got)
	}
	if o.host != "api.test" || o.header.Get("Host") != "" {
		t.Errorf("host = %q, header Host = %q; want the Host header moved to Request.Host", o.host, o.header.Get("Host"))
	}
	if got := o.header.Values("X-A"); len(got) != 2 {
		t.Errorf("X-A = %q, want both values", got)
	}
	if o.duration.String() != "10s" || o.concurrency != 64 || o.warmup.String() != "1s" || o.method != "GET" || !o.ceiling || o.ceilingBytes != 1024 {
		t.Errorf("defaults: %+v", o)
	}
}

// TestCeilingOnlyJSON runs the whole command with -url ceiling, which starts
// the ceiling subprocess (the test binary, via TestMain) and measures it.
func TestCeilingOnlyJSON(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"-url", "ceiling", "-c", "4", "-n", "200", "-warmup", "50ms", "-ceiling-bytes", "256", "-json", "-label", "ci"}, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	var rep struct {
		Label   string
		Config  struct{ URL string }
		Ceiling *struct {
			Requests, Errors int64
			RequestsPerSec   float64 `json:"requests_per_sec"`
			P99Ms            float64 `json:"p99_ms"`
			MeanBytes        float64 `json:"mean_bytes"`
		}
		Target   *json.RawMessage
		RatioRPS *float64 `json:"ratio_rps"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("want one JSON line, got %q (%v)", out.String(), err)
	}
	c := rep.Ceiling
	if c == nil || c.Requests != 200 || c.Errors != 0 || c.RequestsPerSec <= 0 || c.P99Ms <= 0 || c.MeanBytes != 256 {
		t.Errorf("ceiling = %+v", c)
	}
	if rep.Label != "ci" || rep.Config.URL != "ceiling" || rep.Target != nil || rep.RatioRPS != nil {
		t.Errorf("report = %s", out.String())
	}
}

// TestTargetAndCeilingTable runs ceiling then target and checks the table,
// the ratio line and the error report for unexpected statuses.
func TestTargetAndCeilingTable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			http.Error(w, `{"error":"missing token"}`, http.StatusUnauthorized)
			return
		}
		w.Write([]byte(`{"data":[]}`))
	}))
	defer srv.Close()

	var out, errb bytes.Buffer
	code := run([]string{"-url", srv.URL + "/users", "-c", "4", "-n", "100", "-warmup", "0", "-label", "users"}, &out, &errb)
	text := out.String()
	if code != exitFailed {
		t.Errorf("exit %d, want 1 because every target request got a 401", code)
	}
	for _, want := range []string{"label: users", "ceiling", "target", "target/ceiling req/s: 0.000", "HTTP 401 Unauthorized: {\"error\":\"missing token\"}"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}

	out.Reset()
	code = run([]string{"-url", srv.URL + "/users", "-c", "4", "-n", "100", "-warmup", "0", "-H", "Authorization: Bearer x"}, &out, &errb)
	if code != exitOK || !strings.Contains(out.String(), "target/ceiling req/s:") || strings.Contains(out.String(), "errors (first") {
		t.Errorf("exit %d, output:\n%s", code, out.String())
	}
}
