package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeStream is an events endpoint that answers each connection with the
// next of its scripted handlers and records what each request carried.
type fakeStream struct {
	t       *testing.T
	clock   *fakeClock
	mu      sync.Mutex
	scripts []func(w http.ResponseWriter, r *http.Request)
	reqs    []*http.Request
}

func (f *fakeStream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	n := len(f.reqs)
	f.reqs = append(f.reqs, r.Clone(context.Background()))
	f.mu.Unlock()
	if r.URL.Path != PathPrefix+"/events" {
		f.t.Errorf("request to %s", r.URL.Path)
	}
	if n >= len(f.scripts) {
		http.Error(w, `{"error":{"type":"unauthenticated","message":"done"}}`, http.StatusUnauthorized)
		return
	}
	f.scripts[n](w, r)
}

func (f *fakeStream) requests() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

func sse(w http.ResponseWriter, frames ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, f := range frames {
		fmt.Fprint(w, f)
		w.(http.Flusher).Flush()
	}
}

func frame(id string) string {
	return fmt.Sprintf("id: %s\nevent: AccountSMS\ndata: {\"id\":%q,\"type\":\"AccountSMS\",\"timestamp\":\"2026-11-26T10:00:00Z\",\"data\":{\"event\":\"message.sent\"}}\n\n", id, id)
}

// newFake serves the scripts to a client whose reconnections do not wait
// (f.clock records the waits).
func newFake(t *testing.T, scripts ...func(w http.ResponseWriter, r *http.Request)) (*fakeStream, *API) {
	f := &fakeStream{t: t, scripts: scripts, clock: &fakeClock{t: time.Unix(1790000000, 0)}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	api, err := New(srv.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	api.sleep, api.now = f.clock.sleep, f.clock.now
	return f, api
}

// fakeClock is a clock that moves only when told: a wait is recorded and
// returns at once, moving the clock by its length.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	waits []time.Duration
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.t = c.t.Add(d)
	return ctx.Err() == nil
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *fakeClock) recorded() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.waits)
}

// collect reads the stream until it ends or n events came.
func collect(t *testing.T, api *API, opts EventsOptions, n int) ([]Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []Event
	for ev, err := range api.Events(ctx, opts) {
		if err != nil {
			return got, err
		}
		got = append(got, ev)
		if len(got) == n {
			break
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("timed out with %d events", len(got))
	}
	return got, nil
}

func ids(evs []Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.ID+"/"+ev.Type)
	}
	return out
}

// A new stream starts with an id alone, where it joined: a connection lost
// before any event came resumes with it.
func TestEventsResumeFromJoinID(t *testing.T) {
	f, api := newFake(t,
		func(w http.ResponseWriter, r *http.Request) { sse(w, "retry: 10\nid: evt_7\n\n") },
		func(w http.ResponseWriter, r *http.Request) { sse(w, "retry: 10\n\n", frame("evt_8")) })
	got, err := collect(t, api, EventsOptions{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"evt_8/AccountSMS"}; !slices.Equal(ids(got), want) {
		t.Errorf("events %v, want %v", ids(got), want)
	}
	reqs := f.requests()
	if len(reqs) != 2 || reqs[0].Header.Get("Last-Event-ID") != "" || reqs[1].Header.Get("Last-Event-ID") != "evt_7" {
		t.Errorf("%d connections; Last-Event-ID of the second: %q, want evt_7", len(reqs), reqs[len(reqs)-1].Header.Get("Last-Event-ID"))
	}
}

// A connection that ends mid-message is resumed with the id of the last
// whole message: the cut one comes again, complete, and nothing twice.
func TestEventsResumeAfterDisconnect(t *testing.T) {
	f, api := newFake(t,
		func(w http.ResponseWriter, r *http.Request) {
			sse(w, "retry: 10\n\n", frame("evt_1"), ": keepalive\n\n", frame("evt_2"), "id: evt_3\nevent: AccountSMS\ndata: {\"id\":")
		},
		func(w http.ResponseWriter, r *http.Request) {
			sse(w, "retry: 10\n\n", frame("evt_3"), frame("evt_4"),
				"id: evt_10\nevent: reset\ndata: {\"type\":\"reset\",\"message\":\"reload\"}\n\n", frame("evt_11"))
		})
	var causes []error
	got, err := collect(t, api, EventsOptions{Types: []string{"AccountSMS", "AccountConversations"}, Lines: []string{"14155550100"}, After: "evt_0",
		OnReconnect: func(err error, _ time.Duration) { causes = append(causes, err) }}, 6)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"evt_1/AccountSMS", "evt_2/AccountSMS", "evt_3/AccountSMS", "evt_4/AccountSMS", "evt_10/reset", "evt_11/AccountSMS"}
	if !slices.Equal(ids(got), want) {
		t.Errorf("events %v, want %v", ids(got), want)
	}
	if p, err := got[0].Payload(); err != nil || p.ID != "evt_1" || p.Type != "AccountSMS" || string(p.Data) != `{"event":"message.sent"}` || !p.Timestamp.Equal(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("payload %+v %v", p, err)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d connections, want 2", len(reqs))
	}
	for i, want := range []string{"evt_0", "evt_2"} {
		r := reqs[i]
		if got := r.Header.Get("Last-Event-ID"); got != want {
			t.Errorf("connection %d: Last-Event-ID %q, want %q", i, got, want)
		}
		if r.Header.Get("Authorization") != "Bearer tok" || r.Header.Get("Accept") != "text/event-stream" {
			t.Errorf("connection %d: Authorization %q, Accept %q", i, r.Header.Get("Authorization"), r.Header.Get("Accept"))
		}
		if q := r.URL.Query(); q.Get("types") != "AccountSMS,AccountConversations" || q.Get("lines") != "14155550100" {
			t.Errorf("connection %d: query %v", i, q)
		}
	}
	if len(causes) != 1 {
		t.Errorf("reconnect causes %v, want one", causes)
	}
}

// A refusal ends the sequence with the error; retrying cannot cure it.
func TestEventsRefused(t *testing.T) {
	f, api := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req-1")
		http.Error(w, `{"error":{"type":"insufficient_scope","message":"needs messages:read","scope":"messages:read"}}`, http.StatusForbidden)
	})
	got, err := collect(t, api, EventsOptions{}, 1)
	var apiErr *APIError
	if len(got) != 0 || !errors.As(err, &apiErr) || apiErr.Status != 403 || apiErr.Type != "insufficient_scope" || apiErr.Scope != "messages:read" || apiErr.RequestID != "req-1" {
		t.Fatalf("got %v, %#v", got, err)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// 503 and 429 are retried (429 no sooner than Retry-After); a connection
// that goes silent past IdleTimeout is replaced.
func TestEventsRetriesAndIdle(t *testing.T) {
	f, api := newFake(t,
		func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":{"type":"unavailable","message":"db"}}`, http.StatusServiceUnavailable)
		},
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"error":{"type":"rate_limited","message":"too many streams"}}`, http.StatusTooManyRequests)
		},
		func(w http.ResponseWriter, r *http.Request) {
			sse(w, "retry: 10\n\n", frame("evt_5"))
			<-r.Context().Done() // silent, until the client gives up on it
		},
		func(w http.ResponseWriter, r *http.Request) {
			sse(w, frame("evt_6"))
		})
	var waits []time.Duration
	var causes []error
	got, err := collect(t, api, EventsOptions{IdleTimeout: 300 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		OnReconnect: func(err error, wait time.Duration) { causes, waits = append(causes, err), append(waits, wait) }}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"evt_5/AccountSMS", "evt_6/AccountSMS"}; !slices.Equal(ids(got), want) {
		t.Errorf("events %v, want %v", ids(got), want)
	}
	if len(causes) != 3 {
		t.Fatalf("reconnect causes %v", causes)
	}
	var apiErr *APIError
	if !errors.As(causes[0], &apiErr) || apiErr.Status != 503 {
		t.Errorf("first cause %v", causes[0])
	}
	if !errors.As(causes[1], &apiErr) || apiErr.Status != 429 || waits[1] < time.Second {
		t.Errorf("second cause %v, wait %v (Retry-After is 1 s)", causes[1], waits[1])
	}
	if !errors.Is(causes[2], errIdle) {
		t.Errorf("third cause %v, want the idle timeout", causes[2])
	}
	if last := f.requests()[3].Header.Get("Last-Event-ID"); last != "evt_5" {
		t.Errorf("after the idle connection: Last-Event-ID %q", last)
	}
}

// Stopping the loop closes the connection.
func TestEventsBreakCloses(t *testing.T) {
	closed := make(chan struct{})
	_, api := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, frame("evt_1"), frame("evt_2"))
		<-r.Context().Done()
		close(closed)
	})
	if got, err := collect(t, api, EventsOptions{}, 1); err != nil || len(got) != 1 {
		t.Fatalf("%v %v", got, err)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Error("the connection stayed open after the loop stopped")
	}
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		failures int
		lo, hi   time.Duration
	}{
		{0, time.Second, time.Second}, // jitter does not go under the floor
		{1, time.Second, time.Second},
		{2, time.Second, 2 * time.Second},
		{4, 4 * time.Second, 8 * time.Second},
		{10, 15 * time.Second, 30 * time.Second},
		{1000, 15 * time.Second, 30 * time.Second},
	} {
		for range 50 {
			if d := backoff(time.Second, tc.failures, 30*time.Second); d < tc.lo || d > tc.hi {
				t.Fatalf("%d failures: %v, want %v to %v", tc.failures, d, tc.lo, tc.hi)
			}
		}
	}
	// No overflow on the way to a huge cap.
	if d := backoff(time.Hour, 200, time.Duration(1<<63-1)); d < time.Hour {
		t.Errorf("200 failures under the largest cap: %v", d)
	}
}

func TestNew(t *testing.T) {
	for base, want := range map[string]string{
		"https://sb.example.com":                "https://sb.example.com/api/public/v1/",
		"https://sb.example.com/":               "https://sb.example.com/api/public/v1/",
		"https://sb.example.com/api/public/v1":  "https://sb.example.com/api/public/v1/",
		"https://sb.example.com/api/public/v1/": "https://sb.example.com/api/public/v1/",
		"http://127.0.0.1:8080/proxy":           "http://127.0.0.1:8080/proxy/api/public/v1/",
	} {
		api, err := New(base, "k")
		if err != nil {
			t.Errorf("New(%q): %v", base, err)
		} else if api.raw.Server != want {
			t.Errorf("New(%q): server %q, want %q", base, api.raw.Server, want)
		}
	}
	for _, bad := range []string{"", "sb.example.com", "ftp://x", "https://"} {
		if _, err := New(bad, "k"); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
	if _, err := New("https://sb.example.com", ""); err == nil {
		t.Error("an empty token was accepted")
	}
}

// A 2xx that is not the stream, or a stream of another content type, is an
// error that says what came, not a panic (202, 204 and 206 panicked) and
// not a connection read as events; nothing is retried.
func TestEventsUnexpectedAnswers(t *testing.T) {
	for _, tc := range []struct {
		status int
		ctype  string
	}{
		{http.StatusAccepted, "text/event-stream"},
		{http.StatusNoContent, ""},
		{http.StatusPartialContent, "text/event-stream"},
		{http.StatusOK, "text/html; charset=utf-8"},
		{http.StatusOK, "application/json"},
	} {
		f, api := newFake(t, func(w http.ResponseWriter, r *http.Request) {
			if tc.ctype != "" {
				w.Header().Set("Content-Type", tc.ctype)
			}
			w.WriteHeader(tc.status)
			fmt.Fprint(w, "<html>Sign in to the proxy</html>\n\ndata: x\n\n")
		})
		got, err := collect(t, api, EventsOptions{}, 1)
		var unexpected *UnexpectedResponseError
		if len(got) != 0 || !errors.As(err, &unexpected) || unexpected.Status != tc.status || unexpected.ContentType != tc.ctype {
			t.Errorf("%d %q: events %v, error %#v", tc.status, tc.ctype, got, err)
		} else if want := fmt.Sprintf("HTTP %d with Content-Type %q", tc.status, tc.ctype); !strings.Contains(err.Error(), want) {
			t.Errorf("%d %q: error %q does not say %q", tc.status, tc.ctype, err, want)
		}
		if n := len(f.requests()); n != 1 {
			t.Errorf("%d %q: %d requests, want 1", tc.status, tc.ctype, n)
		}
	}
}

// Reconnections wait at least MinReconnectWait whatever retry says, back
// off while connections fail, and a 200 that closes at once without an
// event is a failure: only a connection that delivered an event or lasted
// healthyConnection starts the backoff over. (retry: 1 with an immediate
// close made 2,634 connections in 3 s.)
func TestEventsReconnectBackoff(t *testing.T) {
	var f *fakeStream
	unavailable := func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"type":"unavailable","message":"db"}}`, http.StatusServiceUnavailable)
	}
	f, api := newFake(t,
		unavailable, unavailable, unavailable,
		func(w http.ResponseWriter, r *http.Request) { sse(w, "retry: 1\nid: evt_1\n\n") },         // no event, at once
		func(w http.ResponseWriter, r *http.Request) { sse(w, "retry: 4000\n\n", frame("evt_2")) }, // an event
		func(w http.ResponseWriter, r *http.Request) {
			sse(w, ": keepalive\n\n")
			f.clock.advance(healthyConnection) // a quiet connection that lasted
		},
		func(w http.ResponseWriter, r *http.Request) { sse(w) }, // nothing, at once
	)
	got, err := collect(t, api, EventsOptions{}, 2)
	var apiErr *APIError
	if len(got) != 1 || !errors.As(err, &apiErr) || apiErr.Status != 401 {
		t.Fatalf("events %v, error %v; want evt_2, then the 401 after the scripts", ids(got), err)
	}
	s := time.Second
	want := [][2]time.Duration{
		{s, s},         // 503: the first wait is retry (1 s), under it the floor
		{s, 2 * s},     // 503 again: doubled, jittered
		{2 * s, 4 * s}, // 503
		{4 * s, 8 * s}, // 200 closed at once: still failing; retry: 1 is taken as 1 s
		{2 * s, 4 * s}, // an event came: the backoff starts over, at retry: 4000
		{2 * s, 4 * s}, // 10 s without an event: starts over too
		{4 * s, 8 * s}, // 200 closed at once: doubled
	}
	waits := f.clock.recorded()
	if len(waits) != len(want) {
		t.Fatalf("waits %v, want %d", waits, len(want))
	}
	for i, w := range want {
		if waits[i] < w[0] || waits[i] > w[1] {
			t.Errorf("wait %d: %v, want %v to %v (all %v)", i+1, waits[i], w[0], w[1], waits)
		}
	}
}

// A server that sends data lines without ever ending the message (400 MiB
// of them grew the heap past 1 GiB) is read up to MaxMessageSize and no
// further, and the sequence ends with the error: the server would send the
// same message again.
func TestEventsMessageTooLong(t *testing.T) {
	var written atomic.Int64
	f, api := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		sse(w, "retry: 1000\n\n")
		line := []byte("data: " + strings.Repeat("x", 1000) + "\n")
		for {
			n, err := w.Write(line)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	got, err := collect(t, api, EventsOptions{}, 1)
	if len(got) != 0 || !errors.Is(err, errSSEMessageTooLong) {
		t.Fatalf("events %v, error %v", got, err)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
	// What the kernel's buffers took beyond the bound, at most.
	if n := written.Load(); n > 4*DefaultMaxMessageSize {
		t.Errorf("the server could write %d bytes", n)
	}
}

// A server that takes the connection and never answers is given up on
// after IdleTimeout, like one that goes silent, and the stream goes on
// with the next connection.
func TestEventsNoAnswer(t *testing.T) {
	var causes []error
	_, api := newFake(t,
		func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, // no header, ever
		func(w http.ResponseWriter, r *http.Request) { sse(w, frame("evt_1")) })
	got, err := collect(t, api, EventsOptions{IdleTimeout: 300 * time.Millisecond,
		OnReconnect: func(err error, _ time.Duration) { causes = append(causes, err) }}, 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("events %v, error %v", ids(got), err)
	}
	if len(causes) != 1 || !errors.Is(causes[0], errIdle) {
		t.Errorf("reconnect causes %v, want the idle timeout", causes)
	}
}
