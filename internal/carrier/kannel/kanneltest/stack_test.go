package kanneltest

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestParseMT(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line string
		want MT
		ok   bool
	}{
		{"100 200 text hello  world", MT{From: "100", To: "200", Type: "text", Text: "hello  world"}, true},
		{"100 200 text ", MT{From: "100", To: "200", Type: "text", Text: ""}, true},
		{"100 200 ucs-2 %00G%00r%00%FC%00%DF%00e%00++%AC%D8%3D%DE%00", MT{From: "100", To: "200", Type: "ucs-2", Text: "Grüße €😀"}, true},
		{"100 200 data caf%E9", MT{From: "100", To: "200", Type: "data", Text: "caf\xe9"}, true},
		{"100 200 udh %05%00%03%01%02%01 data part+one", MT{From: "100", To: "200", Type: "udh", UDH: []byte{5, 0, 3, 1, 2, 1}, Text: "part one"}, true},
		{"line2", MT{}, false},
		{"a b c", MT{}, false},
		{"100 200 fax x", MT{}, false},
	}
	for _, tt := range tests {
		got, ok := parseMT(tt.line)
		if ok != tt.ok {
			t.Errorf("parseMT(%q) ok = %v, want %v", tt.line, ok, tt.ok)
			continue
		}
		if !ok {
			continue
		}
		tt.want.Raw = tt.line
		if got.From != tt.want.From || got.To != tt.want.To || got.Type != tt.want.Type || got.Text != tt.want.Text ||
			string(got.UDH) != string(tt.want.UDH) || got.Raw != tt.want.Raw {
			t.Errorf("parseMT(%q) = %+v, want %+v", tt.line, got, tt.want)
		}
	}
}

func TestContinuationLines(t *testing.T) {
	t.Parallel()
	s := &Stack{changed: make(chan struct{})}
	for _, l := range []string{"1 2 text first", "second", "", "1 3 ucs-2 %00A", "orphan"} {
		s.addMTLine(l)
	}
	got := s.MTs()
	if len(got) != 2 || got[0].Text != "first\nsecond\n" || got[1].Text != "A" {
		t.Errorf("MTs = %+v, want a text \"first\\nsecond\\n\" and a ucs-2 \"A\"", got)
	}
}

func TestBinariesReportsMissing(t *testing.T) {
	saved := FakeSMSCPath
	t.Cleanup(func() { FakeSMSCPath = saved })
	FakeSMSCPath = "/nonexistent/fakesmsc"
	if err := Binaries(); err == nil || !strings.Contains(err.Error(), "/nonexistent/fakesmsc") {
		t.Errorf("Binaries() = %v, want an error naming the missing fakesmsc", err)
	}
}

// TestStackRoundTrip checks the harness itself: a raw sendsms reaches the
// MT fakesmsc, and Close leaves no process behind.
func TestStackRoundTrip(t *testing.T) {
	s := Start(t, Config{})
	q := url.Values{"username": {s.Username}, "password": {s.Password}, "from": {"100"}, "to": {"200"}, "text": {"ping"}}
	resp, err := http.Get(s.SendURL + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || string(body) != "0: Accepted for delivery" {
		t.Fatalf("sendsms answered %d %q, want 202 \"0: Accepted for delivery\"", resp.StatusCode, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	mt, err := s.WaitMT(ctx, func(m MT) bool { return m.To == "200" })
	if err != nil {
		t.Fatal(err)
	}
	if mt.From != "100" || mt.Type != "text" || mt.Text != "ping" {
		t.Errorf("MT = %+v, want from 100 text ping", mt)
	}

	s.Close()
	for _, p := range s.procs {
		select {
		case <-p.done:
		default:
			t.Errorf("%s still running after Close", p.name)
		}
	}
}
