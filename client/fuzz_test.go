package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"
)

// The fuzz targets run their seeds (below and testdata/fuzz) as part of
// go test; to search further:
//
//	go test -run '^$' -fuzz FuzzHostileServer -fuzztime 5m .
//	go test -run '^$' -fuzz FuzzSSEParser -fuzztime 5m .

// fuzzMaxMessage is the message bound the fuzz targets parse with, so that
// their small inputs reach it.
const fuzzMaxMessage = 64

// FuzzSSEParser: whatever the bytes, the parser ends (each message takes
// at least one line of input), never holds more than its bound of one
// message, never takes an id with NUL, and parses the same however the
// network splits the stream.
func FuzzSSEParser(f *testing.F) {
	for _, s := range []string{
		"retry: 1000\n\n: keepalive\n\nid: evt_42\nevent: AccountSMS\ndata: {\"id\":\"evt_42\"}\n\n",
		"data: YHOO\ndata: +2\ndata: 10\n\n",
		"id: 1\r\ndata: a\r\n\r\nid: 2\rdata: b\r\r",
		"\xEF\xBB\xBFdata: a\n\nid: evt\x002\ndata: b\n\n",
		"event: reset\n\ndata: x\n\nid\n\n",
		strings.Repeat("data: xxxxxxxx\n", 10) + "\n",
		strings.Repeat(":\n", 100),
		"retry: 99999999999999999999\nretry: 1\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		whole := parseBounded(t, bytes.NewReader(stream), len(stream))
		split := parseBounded(t, iotest.OneByteReader(bytes.NewReader(stream)), len(stream))
		if !reflect.DeepEqual(whole, split) {
			t.Errorf("read whole %+v, read a byte at a time %+v", whole, split)
		}
	})
}

type parsed struct {
	messages []sseMessage
	lastID   string
	err      error
}

func parseBounded(t *testing.T, r io.Reader, n int) parsed {
	p := newSSEParser(r, "", fuzzMaxMessage)
	var out parsed
	for range n + 1 {
		m, err := p.next()
		if p.size > fuzzMaxMessage || p.dataBuf.Len() > fuzzMaxMessage || len(p.idBuf) > fuzzMaxMessage || len(p.eventBuf) > fuzzMaxMessage {
			t.Fatalf("the parser holds %d bytes of a message, data %d, id %d, event %d: more than %d", p.size, p.dataBuf.Len(), len(p.idBuf), len(p.eventBuf), fuzzMaxMessage)
		}
		if strings.IndexByte(p.lastID, 0) >= 0 {
			t.Fatalf("last id %q has NUL", p.lastID)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, errSSEMessageTooLong) {
				t.Fatalf("error %v", err)
			}
			out.lastID, out.err = p.lastID, err
			return out
		}
		out.messages = append(out.messages, m)
	}
	t.Fatalf("more than %d messages from %d bytes", n, n)
	return out
}

// FuzzHostileServer answers every request with the fuzzed status, content
// type, Retry-After and body (a few times, then 401) and runs Events and
// each page iterator against it: each must end by itself (no panic, no
// endless loop), Events must never wait less than MinReconnectWait nor
// yield an event over its bound, and no run may send more than the
// answers allow.
func FuzzHostileServer(f *testing.F) {
	const ok, sse, js = 200, "text/event-stream", "application/json"
	for _, seed := range []struct {
		status            int
		ctype, retryAfter string
		body              string
	}{
		{ok, sse, "", "retry: 1000\nid: evt_7\n\n" + frame("evt_8")},
		{ok, sse, "", "retry: 1\n\n"},
		{ok, sse + "; charset=utf-8", "", "data: a\r\rdata: b"},
		{ok, sse, "", strings.Repeat("data: xxxxxxxx\n", 20)},
		{http.StatusAccepted, sse, "", frame("evt_1")},
		{http.StatusNoContent, "", "", ""},
		{http.StatusPartialContent, sse, "", "data: x\n\n"},
		{ok, "text/html", "", "<html><body>proxy login</body></html>"},
		{http.StatusTooManyRequests, js, "1", `{"error":{"type":"rate_limited","message":"too many streams"}}`},
		{http.StatusServiceUnavailable, js, "99999999999999999", `{"error":{"type":"unavailable","message":"db"}}`},
		{http.StatusForbidden, js, "", `{"error":{"type":"insufficient_scope","message":"x","scope":"messages:read"}}`},
		{http.StatusFound, "", "", ""},
		{ok, js, "", `{"data":[{"id":"c1"},{"id":"c2"}]}`},
		{ok, js, "", `{"data":{"messages":[{"id":"m1"}]}}`},
		{ok, js, "", `{"data":[{"id":1}],"next":5}`},
		{ok, js, "", `{"data":{"calls":[{"id":"a"}],"limit":1,"offset":0,"total":9}}`},
		{ok, js, "", `{"data":null}`},
		{ok, js, "", `null`},
		{ok, js, "", `{"data":[`},
	} {
		f.Add(seed.status, seed.ctype, seed.retryAfter, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, status int, ctype, retryAfter string, body []byte) {
		status = 200 + (status%400+400)%400 // 200 to 599: what WriteHeader takes and a client sees
		const answers = 3
		var requests atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if requests.Add(1) > answers {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, `{"error":{"type":"unauthenticated","message":"done"}}`)
				return
			}
			w.Header().Set("Content-Type", ctype)
			w.Header().Set("Retry-After", retryAfter)
			w.WriteHeader(status)
			w.Write(body)
		}))
		defer srv.Close()
		api, err := New(srv.URL, "k")
		if err != nil {
			t.Fatal(err)
		}
		clock := &fakeClock{t: time.Unix(1790000000, 0)}
		api.sleep, api.now = clock.sleep, clock.now

		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var last error
		for ev, err := range api.Events(ctx, EventsOptions{MaxMessageSize: fuzzMaxMessage}) {
			if err != nil {
				last = err
				continue
			}
			if len(ev.Data) > fuzzMaxMessage {
				t.Fatalf("an event of %d bytes, over the bound %d", len(ev.Data), fuzzMaxMessage)
			}
		}
		if ctx.Err() != nil || last == nil {
			t.Fatalf("Events did not end by itself with an error (context: %v, last error: %v)", ctx.Err(), last)
		}
		if n := requests.Load(); n > answers+1 {
			t.Fatalf("Events made %d requests after the 401", n)
		}
		for _, w := range clock.recorded() {
			if w < MinReconnectWait {
				t.Fatalf("a reconnection after %v, under %v", w, MinReconnectWait)
			}
		}

		for name, run := range iterators(api) {
			requests.Store(0)
			done := make(chan struct{})
			go func() {
				defer close(done)
				run()
			}()
			select {
			case <-done:
			case <-ctx.Done():
				t.Fatalf("%s did not end", name)
			}
			if n := requests.Load(); n > answers+1 {
				t.Fatalf("%s made %d requests after the 401", name, n)
			}
		}
	})
}
