package client

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func parseAll(t *testing.T, stream string) ([]sseMessage, *sseParser) {
	t.Helper()
	p := newSSEParser(strings.NewReader(stream), "", DefaultMaxMessageSize)
	var out []sseMessage
	for {
		m, err := p.next()
		if errors.Is(err, io.EOF) {
			return out, p
		}
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		out = append(out, m)
	}
}

// The cases follow the WHATWG HTML standard's event stream interpretation
// (section 9.2.6) and its examples.
func TestSSEParser(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		want         []sseMessage
		lastID       string
	}{
		{"the server's own frames",
			"retry: 1000\n\n: keepalive\n\nid: evt_42\nevent: AccountSMS\ndata: {\"id\":\"evt_42\"}\n\n",
			[]sseMessage{{"evt_42", "AccountSMS", `{"id":"evt_42"}`}}, "evt_42"},
		{"data lines join with LF, the last LF dropped",
			"data: YHOO\ndata: +2\ndata: 10\n\n",
			[]sseMessage{{"", "message", "YHOO\n+2\n10"}}, ""},
		{"one space after the colon is dropped, not two",
			"data:test\n\ndata:  test\n\n",
			[]sseMessage{{"", "message", "test"}, {"", "message", " test"}}, ""},
		{"a field without a colon has an empty value",
			"data\n\ndata\ndata\n\ndata:\n",
			[]sseMessage{{"", "message", ""}, {"", "message", "\n"}}, ""},
		{"CRLF and CR end lines too",
			"id: 1\r\ndata: a\r\n\r\nid: 2\rdata: b\r\r",
			[]sseMessage{{"1", "message", "a"}, {"2", "message", "b"}}, "2"},
		{"the id carries over to later messages without one",
			"id: evt_1\ndata: a\n\ndata: b\n\n",
			[]sseMessage{{"evt_1", "message", "a"}, {"evt_1", "message", "b"}}, "evt_1"},
		{"an id with NUL is ignored",
			"id: evt_1\ndata: a\n\nid: evt\x002\ndata: b\n\n",
			[]sseMessage{{"evt_1", "message", "a"}, {"evt_1", "message", "b"}}, "evt_1"},
		{"an empty id resets it",
			"id: evt_1\ndata: a\n\nid\ndata: b\n\n",
			[]sseMessage{{"evt_1", "message", "a"}, {"", "message", "b"}}, ""},
		{"an event type without data dispatches nothing and does not leak",
			"event: reset\n\ndata: x\n\n",
			[]sseMessage{{"", "message", "x"}}, ""},
		{"an id without data still moves the last id",
			"id: evt_7\n\n",
			nil, "evt_7"},
		{"a message cut off at the end is discarded, its id not taken",
			"id: evt_1\ndata: a\n\nid: evt_2\ndata: b\n",
			[]sseMessage{{"evt_1", "message", "a"}}, "evt_1"},
		{"a leading BOM is dropped, once",
			"\xEF\xBB\xBFdata: a\n\n",
			[]sseMessage{{"", "message", "a"}}, ""},
		{"unknown fields and comments are ignored",
			": hi\nfoo: bar\ndata: a\n:\n\n",
			[]sseMessage{{"", "message", "a"}}, ""},
		{"the reset message",
			"id: evt_9\nevent: reset\ndata: {\"type\":\"reset\"}\n\n",
			[]sseMessage{{"evt_9", "reset", `{"type":"reset"}`}}, "evt_9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, p := parseAll(t, tc.stream)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("messages %q, want %q", got, tc.want)
			}
			if p.lastID != tc.lastID {
				t.Errorf("last id %q, want %q", p.lastID, tc.lastID)
			}
		})
	}
}

func TestSSEParserRetry(t *testing.T) {
	for stream, want := range map[string]time.Duration{
		"retry: 1000\n\n":          time.Second,
		"retry: 250\nretry: x\n\n": 250 * time.Millisecond,
		"retry: -5\n\n":            0,
		"retry:\n\n":               0,
		"retry: 1e3\n\n":           0,
	} {
		_, p := parseAll(t, stream)
		if p.retry != want {
			t.Errorf("%q: retry %v, want %v", stream, p.retry, want)
		}
	}
}

// A stream read one byte at a time (the network splits it anywhere) parses
// the same, and a CR at the end of a read does not wait for the next byte.
func TestSSEParserSplitReads(t *testing.T) {
	stream := "id: evt_1\r\nevent: AccountSMS\r\ndata: {\"a\":1}\r\n\r\nid: evt_2\rdata: b\r\r"
	p := newSSEParser(iotest.OneByteReader(strings.NewReader(stream)), "", DefaultMaxMessageSize)
	var got []sseMessage
	for {
		m, err := p.next()
		if err != nil {
			break
		}
		got = append(got, m)
	}
	want := []sseMessage{{"evt_1", "AccountSMS", `{"a":1}`}, {"evt_2", "message", "b"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}

	pr, pw := io.Pipe()
	p = newSSEParser(pr, "", DefaultMaxMessageSize)
	done := make(chan sseMessage)
	go func() {
		m, _ := p.next()
		done <- m
	}()
	pw.Write([]byte("data: now\r\r")) // and nothing more for now
	select {
	case m := <-done:
		if m.data != "now" {
			t.Errorf("got %q", m.data)
		}
	case <-time.After(5 * time.Second):
		t.Error("a message ended by CR waited for the next byte")
	}
	pw.Close()
}

// The bound is on a whole message, every line of it until the empty line,
// terminators not counted: many short data lines cannot add up past it
// (they did: 400 MiB of "data:" lines grew the heap past 1 GiB), while
// messages each within it may follow one another without end.
func TestSSEParserMessageLimit(t *testing.T) {
	const max = 64
	read := func(stream string) ([]sseMessage, error) {
		p := newSSEParser(strings.NewReader(stream), "", max)
		var got []sseMessage
		for {
			m, err := p.next()
			if err != nil {
				return got, err
			}
			got = append(got, m)
		}
	}
	exactly := "id: 1\nevent: e\ndata: " + strings.Repeat("x", max-len("id: 1event: edata: ")) + "\n\n"
	for name, tc := range map[string]struct {
		stream string
		n      int
		want   error
	}{
		"a message of exactly the bound":            {strings.Repeat(exactly, 100), 100, io.EOF},
		"one byte more":                             {"data: " + strings.Repeat("x", max-len("data: ")+1) + "\n\n", 0, errSSEMessageTooLong},
		"data lines adding up past it":              {strings.Repeat("data: xxxxx\n", max/len("data: xxxxx")+1) + "\n", 0, errSSEMessageTooLong},
		"comments without an empty line":            {strings.Repeat(":\n", max+1), 0, errSSEMessageTooLong},
		"one line past it, its end never coming":    {strings.Repeat("d", 10*max), 0, errSSEMessageTooLong},
		"short messages, far more than it together": {strings.Repeat("data: a\n\n: keepalive\n\n", 10*max), 10 * max, io.EOF},
		"id and event lines count, not only data":   {"id: " + strings.Repeat("i", max/2) + "\nevent: " + strings.Repeat("e", max/2) + "\ndata: x\n\n", 0, errSSEMessageTooLong},
	} {
		got, err := read(tc.stream)
		if len(got) != tc.n || !errors.Is(err, tc.want) {
			t.Errorf("%s: %d messages, %v; want %d, %v", name, len(got), err, tc.n, tc.want)
		}
	}
}
