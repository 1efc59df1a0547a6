package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/apitest"
)

// fakeServer stands for the switchboard server as the design document
// describes it: GET /api/public/v1/events streams every event of the
// account (id, event, one-line data: the webhook delivery body), a send
// writes a message.sent event naming its recipient, and one webhook
// subscription receives the same bodies.
type fakeServer struct {
	t      *testing.T
	key    string
	limit  int // open streams allowed; 0: no limit
	mu     sync.Mutex
	subs   map[chan []byte]bool
	nextID int64
	hook   string
	opened int
	resets bool // answer every Last-Event-ID with a reset
}

func newFake(t *testing.T) (*fakeServer, *httptest.Server) {
	f := &fakeServer{t: t, key: "sk_test", subs: map[chan []byte]bool{}, nextID: 1}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+f.key {
		http.Error(w, `{"error":{"type":"unauthorized"}}`, http.StatusUnauthorized)
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/api/public/v1/events":
		f.stream(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/api/public/v1/sms/messages":
		var body struct {
			From    string   `json:"from"`
			To      []string `json:"to"`
			Message string   `json:"message"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.To) != 1 || body.From != "14155550100" {
			http.Error(w, "bad send", http.StatusBadRequest)
			return
		}
		f.publish(strings.TrimPrefix(body.To[0], "+"))
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"data":{}}`)
	case r.Method == http.MethodPost && r.URL.Path == "/api/public/v1/webhooks":
		var body struct{ URL string }
		json.NewDecoder(r.Body).Decode(&body)
		f.mu.Lock()
		f.hook = body.URL
		f.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"data":{"id":"7"}}`)
	case r.Method == http.MethodDelete && r.URL.Path == "/api/public/v1/webhooks/7":
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeServer) publish(number string) {
	f.mu.Lock()
	id := f.nextID
	f.nextID++
	body := fmt.Sprintf(`{"id":"evt_%d","type":"AccountSMS","timestamp":"2026-11-26T17:00:00Z","data":{"event":"message.sent","messageId":%d,"direction":"out","line":"14155550100","number":"%s","numbers":["%s"],"status":"sent"}}`, id, id, number, number)
	msg := []byte(fmt.Sprintf("id: evt_%d\nevent: AccountSMS\ndata: %s\n\n", id, body))
	for c := range f.subs {
		select {
		case c <- msg:
		default:
			f.t.Errorf("a fake stream's buffer is full")
		}
	}
	hook := f.hook
	f.mu.Unlock()
	if hook != "" {
		go func() {
			resp, err := http.Post(hook, "application/json", strings.NewReader(body))
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
}

func (f *fakeServer) stream(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		http.Error(w, "not acceptable", http.StatusNotAcceptable)
		return
	}
	f.mu.Lock()
	if f.limit > 0 && len(f.subs) >= f.limit {
		f.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		http.Error(w, `{"error":{"type":"rate_limited"}}`, http.StatusTooManyRequests)
		return
	}
	c := make(chan []byte, 1024)
	f.subs[c] = true
	f.opened++
	f.mu.Unlock()
	defer func() { f.mu.Lock(); delete(f.subs, c); f.mu.Unlock() }()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	// A keepalive at once (a real server sends one every 15 s), with CRLF
	// line ends to exercise the parser through the transport.
	io.WriteString(w, ": keepalive\r\n\r\n")
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		n, _ := strconv.ParseInt(strings.TrimPrefix(last, "evt_"), 10, 64)
		if f.resets {
			fmt.Fprintf(w, "id: evt_%d\nevent: reset\ndata: {}\n\n", n+1000)
		}
		for id := n + 1; id <= n+300; id++ {
			fmt.Fprintf(w, "id: evt_%d\nevent: AccountSMS\ndata: {\"id\":\"evt_%d\"}\n\n", id, id)
		}
	}
	w.(http.Flusher).Flush()
	for {
		select {
		case msg := <-c:
			w.Write(msg)
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		}
	}
}

func (f *fakeServer) open() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}

// liveChecked runs the live scenario of c and checks its report: every
// event of the sends (sends in each phase) delivered to every stream, the
// baseline's line and wants, and no trouble reported.
func liveChecked(t *testing.T, c config, sends int, wants ...string) {
	t.Helper()
	var out bytes.Buffer
	if err := runLive(context.Background(), c, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	m := regexp.MustCompile(fmt.Sprintf(`delivered (\d+) of (\d+) events \(%d streams × (\d+)\)`, c.streams)).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no delivery line in:\n%s", out.String())
	}
	if m[1] != m[2] || m[3] != fmt.Sprint(sends) {
		t.Errorf("delivered %s of %s (sends %s, want %d)", m[1], m[2], m[3], sends)
	}
	for _, want := range append([]string{fmt.Sprintf("baseline, no stream open: %d sends accepted", sends)}, wants...) {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, bad := range []string{"ended before", "reset events", "not above", "failed (first"} {
		if strings.Contains(out.String(), bad) {
			t.Errorf("output reports %q", bad)
		}
	}
}

// The whole live scenario against the fake: every stream gets every event
// sent while it is open, each is timed, and so is the webhook.
func TestLiveAgainstFake(t *testing.T) {
	f, srv := newFake(t)
	c := config{url: srv.URL, key: f.key, from: "14155550100", pid: os.Getpid(), hz: 100,
		streams: 30, rate: 100, dur: 500 * time.Millisecond, baseline: true, idle: 50 * time.Millisecond,
		webhook: true, bufSize: 64, openConc: 8}
	liveChecked(t, c, 50, "opened 30 streams",
		"stream event-to-client latency, from the POST's start (upper bound): p50",
		"stream event-to-client latency, from the POST's response (lower bound): p50",
		"(1500 samples)",
		"webhook event-to-receiver latency, same events, from the POST's start (upper bound): p50",
		"(30 since the streams opened)")
	// The streams close when the run ends.
	apitest.Eventually(t, "the streams to close after the run", func() bool { return f.open() == 0 })
}

// Past the server's limit the failures are reported by status, and the
// streams that opened are still measured.
func TestOpenReportsRefusals(t *testing.T) {
	f, srv := newFake(t)
	f.limit = 5
	var st streamStats
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := streamOpts{url: srv.URL + "/api/public/v1/events", key: f.key, bufSize: 64, openConc: 4, transport: newTransport(16, 1024)}
	open, err := openStreams(ctx, o, 8, &st)
	if len(open) != 5 {
		t.Fatalf("%d streams open, want 5", len(open))
	}
	if err == nil || !strings.Contains(err.Error(), "3 of 8 streams did not open") || !strings.Contains(err.Error(), "3× status 429") {
		t.Fatalf("err = %v", err)
	}
	o.key = "wrong"
	if _, err := openStreams(ctx, o, 1, &st); err == nil || !strings.Contains(err.Error(), "status 401") {
		t.Fatalf("a wrong key: err = %v", err)
	}
}

func TestReplayAgainstFake(t *testing.T) {
	f, srv := newFake(t)
	c := config{url: srv.URL, key: f.key, replay: "evt_41", replayN: 300}
	var out bytes.Buffer
	if err := runReplay(context.Background(), c, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "replay after evt_41: 300 events") || !strings.Contains(out.String(), "last evt_341; 0 gaps") {
		t.Fatalf("output: %s", out.String())
	}
	f.resets = true
	if err := runReplay(context.Background(), c, &out); err == nil || !strings.Contains(err.Error(), "reset") {
		t.Fatalf("a reset: err = %v", err)
	}
	// A replay that stops short is reported, not waited on forever.
	f.resets = false
	c.stall = 200 * time.Millisecond
	c.replayN = 301
	if err := runReplay(context.Background(), c, &out); err == nil || !strings.Contains(err.Error(), "stalled") || !strings.Contains(err.Error(), "after 300 of 301") {
		t.Fatalf("a short replay: err = %v", err)
	}
	c.replay = "41"
	if err := runReplay(context.Background(), c, &out); err == nil {
		t.Fatal("an id that is not evt_N was taken")
	}
}

func TestLedgerFindsSends(t *testing.T) {
	l := newLedger(100)
	start := time.Unix(1700000000, 0)
	l.record(42, phaseStreams, start)
	body := []byte(`{"id":"evt_9","type":"AccountSMS","timestamp":"x","data":{"event":"message.sent","messageId":3,"direction":"out","line":"14155550100","number":"` + recipient(42)[1:] + `","numbers":["x"]}}`)
	seq, ok := l.seqOf(body)
	if !ok || seq != 42 {
		t.Fatalf("seqOf = %d, %v", seq, ok)
	}
	for name, b := range map[string]string{
		"a delivery event":       strings.Replace(string(body), "message.sent", "message.delivery", 1),
		"a number out of range":  strings.Replace(string(body), recipient(42)[1:], "14155550199", 1),
		"a number past the end":  strings.Replace(string(body), recipient(42)[1:], recipient(100)[1:], 1),
		"no number":              `{"event":"message.sent"}`,
		"an unterminated number": `{"event":"message.sent","number":"1212`,
	} {
		if _, ok := l.seqOf([]byte(b)); ok {
			t.Errorf("%s matched a send", name)
		}
	}
	if recipient(0) != "+12122000000" {
		t.Errorf("recipient(0) = %s", recipient(0))
	}

	// Before the POST's response, the lower bound is 0; after it, the time
	// since the response. A send this run did not make is not counted.
	var b bounds
	if b.add(start.Add(time.Second), l, 43) {
		t.Error("a send of no run was timed")
	}
	b.add(start.Add(30*time.Millisecond), l, 42)
	l.answered(42, start.Add(40*time.Millisecond))
	b.add(start.Add(50*time.Millisecond), l, 42)
	if got := b.upper.quantile(1); got != 50*time.Millisecond {
		t.Errorf("upper max = %v, want 50ms", got)
	}
	if lo, hi := b.lower.quantile(.5), b.lower.quantile(1); lo != 0 || hi != 10*time.Millisecond {
		t.Errorf("lower = %v and %v, want 0 and 10ms", lo, hi)
	}
}
