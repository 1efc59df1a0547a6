package main

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type parsed struct{ id, typ, data string }

// parseAll reads every event of input, fed size bytes at a time.
func parseAll(t *testing.T, input string, size int) ([]parsed, *sseParser) {
	t.Helper()
	var r io.Reader = strings.NewReader(input)
	if size > 0 {
		r = chunked{r, size}
	}
	p := newParser(r, 4) // tiny: lines straddle reads and the buffer grows
	var out []parsed
	for {
		ev, err := p.next()
		if errors.Is(err, io.EOF) {
			return out, p
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, parsed{string(ev.ID), string(ev.Type), string(ev.Data)})
	}
}

// chunked reads at most n bytes per Read.
type chunked struct {
	r io.Reader
	n int
}

func (c chunked) Read(b []byte) (int, error) { return c.r.Read(b[:min(len(b), c.n)]) }

func TestParserWHATWG(t *testing.T) {
	cases := []struct {
		name, in string
		want     []parsed
		comments int64
		retry    int64
	}{
		{"one event", "id: evt_1\nevent: AccountSMS\ndata: {\"a\":1}\n\n",
			[]parsed{{"evt_1", "AccountSMS", `{"a":1}`}}, 0, -1},
		{"default type, id kept across events", "id: 7\ndata: x\n\ndata: y\n\n",
			[]parsed{{"7", "message", "x"}, {"7", "message", "y"}}, 0, -1},
		{"data lines joined by LF", "data: a\ndata:b\ndata\n\n",
			[]parsed{{"", "message", "a\nb\n"}}, 0, -1},
		{"only one leading space goes", "data:  two\n\n",
			[]parsed{{"", "message", " two"}}, 0, -1},
		{"CRLF and lone CR", "id: 1\r\ndata: a\r\n\r\nid: 2\rdata: b\r\r",
			[]parsed{{"1", "message", "a"}, {"2", "message", "b"}}, 0, -1},
		{"comments and keepalives", ": keepalive\n\n:\ndata: x\n\n: keepalive\n\n",
			[]parsed{{"", "message", "x"}}, 3, -1},
		{"no data: no dispatch, and the type does not leak", "event: reset\nid: evt_9\n\ndata: z\n\n",
			[]parsed{{"evt_9", "message", "z"}}, 0, -1},
		{"reset with data", "id: evt_9\nevent: reset\ndata: {}\n\n",
			[]parsed{{"evt_9", "reset", "{}"}}, 0, -1},
		{"id with NUL ignored", "id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n",
			[]parsed{{"1", "message", "a"}, {"1", "message", "b"}}, 0, -1},
		{"empty id resets it", "id: 1\ndata: a\n\nid\ndata: b\n\n",
			[]parsed{{"1", "message", "a"}, {"", "message", "b"}}, 0, -1},
		{"retry digits only", "retry: 3000\nretry: 12x\ndata: a\n\n",
			[]parsed{{"", "message", "a"}}, 0, 3000},
		{"unknown fields ignored", "foo: bar\nDATA: no\ndata: a\n\n",
			[]parsed{{"", "message", "a"}}, 0, -1},
		{"BOM dropped once", "\xEF\xBB\xBFdata: a\n\n",
			[]parsed{{"", "message", "a"}}, 0, -1},
		{"unfinished event at the end discarded", "data: a\n\ndata: b\n",
			[]parsed{{"", "message", "a"}}, 0, -1},
		{"unterminated last line discarded", "data: a\n\ndata: b",
			[]parsed{{"", "message", "a"}}, 0, -1},
		{"a field with a colon in its value", "data: {\"k\":\"v:w\"}\n\n",
			[]parsed{{"", "message", `{"k":"v:w"}`}}, 0, -1},
		{"long line grows the buffer", "data: " + strings.Repeat("x", 5000) + "\n\n",
			[]parsed{{"", "message", strings.Repeat("x", 5000)}}, 0, -1},
		{"short stream, no BOM", ":\n", nil, 1, -1},
	}
	for _, c := range cases {
		for _, size := range []int{0, 1, 2, 3, 7} {
			got, p := parseAll(t, c.in, size)
			if len(got) != len(c.want) {
				t.Fatalf("%s (reads of %d): got %q, want %q", c.name, size, got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("%s (reads of %d): event %d = %q, want %q", c.name, size, i, got[i], c.want[i])
				}
			}
			if p.comments != c.comments || p.retry != c.retry {
				t.Errorf("%s (reads of %d): comments %d retry %d, want %d and %d", c.name, size, p.comments, p.retry, c.comments, c.retry)
			}
		}
	}
}

// A CR at the end of one read and the LF at the start of the next are one
// line ending, not two (which would dispatch early).
func TestParserCRLFAcrossReads(t *testing.T) {
	p := newParser(iotest.OneByteReader(strings.NewReader("data: a\r\ndata: b\r\n\r\n")), 16)
	ev, err := p.next()
	if err != nil || string(ev.Data) != "a\nb" {
		t.Fatalf("got %q, %v; want a\\nb", ev.Data, err)
	}
}

func TestParserLineTooLong(t *testing.T) {
	p := newParser(strings.NewReader("data: "+strings.Repeat("x", maxLine+10)+"\n\n"), 1024)
	if _, err := p.next(); !errors.Is(err, errLineTooLong) {
		t.Fatalf("err = %v, want errLineTooLong", err)
	}
}

func TestParserReadError(t *testing.T) {
	boom := errors.New("boom")
	p := newParser(io.MultiReader(strings.NewReader("data: a\n\ndata: b\n"), iotest.ErrReader(boom)), 64)
	if ev, err := p.next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("first: %q, %v", ev.Data, err)
	}
	if _, err := p.next(); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
}
