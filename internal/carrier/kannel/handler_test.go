package kannel

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"switchboard/internal/carrier"
)

// recordingSink stores what it is given, or fails when err is set.
type recordingSink struct {
	mu       sync.Mutex
	err      error
	receipts []carrier.Receipt
	inbound  []carrier.Inbound
}

func (s *recordingSink) Receipt(_ context.Context, r carrier.Receipt) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.receipts = append(s.receipts, r)
	return nil
}

// got returns copies of what the sink has stored so far.
func (s *recordingSink) got() ([]carrier.Receipt, []carrier.Inbound) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]carrier.Receipt(nil), s.receipts...), append([]carrier.Inbound(nil), s.inbound...)
}

func (s *recordingSink) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func (s *recordingSink) Inbound(_ context.Context, in carrier.Inbound) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.inbound = append(s.inbound, in)
	return nil
}

var fixedNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// setupHandler returns the driver's handler mounted the documented way,
// under /carrier/kannel, on a real test server.
func setupHandler(t *testing.T) (*httptest.Server, *recordingSink) {
	t.Helper()
	d := newDriver(t, testConfig("http://127.0.0.1:13013"))
	d.now = func() time.Time { return fixedNow }
	sink := &recordingSink{}
	mux := http.NewServeMux()
	mux.Handle("/carrier/kannel/", http.StripPrefix("/carrier/kannel", d.Handler(sink)))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, sink
}

// kannelFill substitutes Kannel escape codes in a dlr-url or get-url the
// way smsbox does: values are URL-encoded, unknown codes stay as they are.
func kannelFill(pattern string, values map[byte]string) string {
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		if pattern[i] == '%' && i+1 < len(pattern) {
			if v, ok := values[pattern[i+1]]; ok {
				b.WriteString(url.QueryEscape(v))
				i++
				continue
			}
		}
		b.WriteByte(pattern[i])
	}
	return b.String()
}

func get(t *testing.T, rawURL string) (int, string) {
	t.Helper()
	resp, err := http.Get(rawURL)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// dlrCallback is the URL Kannel would call for a report on message id.
func dlrCallback(base string, id int64, values map[byte]string) string {
	d, err := New(Config{SendURL: "http://k/cgi-bin/sendsms", Username: "u", Password: "p",
		CallbackURL: base + "/carrier/kannel", Secret: testSecret})
	if err != nil {
		panic(err)
	}
	return kannelFill(d.dlrURL(id), values)
}

func TestDLRMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ, reply, ts string
		want           carrier.Receipt
	}{
		{"1", "", "1795366935", carrier.Receipt{MessageID: 42, Status: "delivered", At: time.Unix(1795366935, 0).UTC()}},
		{"8", "ACK/", "1795366935", carrier.Receipt{MessageID: 42, Status: "smsc_submit", At: time.Unix(1795366935, 0).UTC()}},
		{"4", "buffered at SMSC", "1795366935", carrier.Receipt{MessageID: 42, Status: "buffered", At: time.Unix(1795366935, 0).UTC()}},
		{"2", "id:1 sub:001 dlvrd:000 stat:UNDELIV err:001", "1795366935",
			carrier.Receipt{MessageID: 42, Status: "undelivered", Error: "id:1 sub:001 dlvrd:000 stat:UNDELIV err:001", At: time.Unix(1795366935, 0).UTC()}},
		{"16", "NACK/0x00000045/Submit failed", "", carrier.Receipt{MessageID: 42, Status: "smsc_reject", Error: "NACK/0x00000045/Submit failed", At: fixedNow}},
		{"16", "", "", carrier.Receipt{MessageID: 42, Status: "smsc_reject", Error: "smsc_reject", At: fixedNow}},
		{"32", "x", "", carrier.Receipt{MessageID: 42, Status: "smsc_intermediate", At: fixedNow}},
		{"64", "x", "", carrier.Receipt{MessageID: 42, Status: "dlr_64", At: fixedNow}},
	}
	for _, tt := range tests {
		t.Run(tt.want.Status+"/"+tt.typ, func(t *testing.T) {
			t.Parallel()
			srv, sink := setupHandler(t)
			vals := map[byte]string{'d': tt.typ, 'A': tt.reply, 'T': tt.ts}
			code, body := get(t, dlrCallback(srv.URL, 42, vals))
			if code != http.StatusOK || body != "" {
				t.Fatalf("got %d %q, want 200 with empty body", code, body)
			}
			receipts, _ := sink.got()
			if len(receipts) != 1 {
				t.Fatalf("sink got %d receipts, want 1", len(receipts))
			}
			if got := receipts[0]; got != tt.want {
				t.Errorf("receipt = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDLRRejectsMalformed(t *testing.T) {
	t.Parallel()
	srv, sink := setupHandler(t)
	base := srv.URL + "/carrier/kannel/dlr?secret=" + testSecret
	for _, q := range []string{
		"&type=1",                             // no id
		"&id=abc&type=1",                      // id not a number
		"&id=-4&type=1",                       // id not positive
		"&id=4",                               // no type
		"&id=4&type=x",                        // type not a number
		"&id=4&type=1&ts=yester",              // bad time
		"&id=4&type=1&ts=%ZZ&x=1",             // undecodable query
		"&id=%2B4&type=1",                     // id with a sign
		"&id=4&type=1&ts=9223372036854775807", // ts past the year 9999
		"&id=4&type=1&ts=253402300800",        // 10000-01-01
	} {
		if code, _ := get(t, base+q); code != http.StatusBadRequest {
			t.Errorf("query %q: status %d, want 400", q, code)
		}
	}
	if receipts, _ := sink.got(); len(receipts) != 0 {
		t.Errorf("sink got %d receipts from malformed reports, want 0", len(receipts))
	}
}

func TestSecretIsChecked(t *testing.T) {
	t.Parallel()
	srv, sink := setupHandler(t)
	for _, path := range []string{"/dlr?id=1&type=1", "/inbound?from=1555&to=1556&text=hi"} {
		for _, secret := range []string{"", "&secret=", "&secret=wrong", "&secret=" + testSecret + "x", "&secret=" + testSecret[:len(testSecret)-1]} {
			code, _ := get(t, srv.URL+"/carrier/kannel"+path+secret)
			if code != http.StatusUnauthorized {
				t.Errorf("%s with %q: status %d, want 401", path, secret, code)
			}
		}
		// The right secret twice, or beside a wrong one, is not one secret.
		for _, secret := range []string{"&secret=" + testSecret + "&secret=" + testSecret, "&secret=" + testSecret + "&secret=x"} {
			if code, _ := get(t, srv.URL+"/carrier/kannel"+path+secret); code != http.StatusUnauthorized {
				t.Errorf("%s with %q: status %d, want 401", path, secret, code)
			}
		}
		// HEAD (which a GET route would otherwise let through) runs nothing.
		resp, err := http.Head(srv.URL + "/carrier/kannel" + path + "&secret=" + testSecret)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("HEAD %s: status %d, want 405", path, resp.StatusCode)
		}
		if code, _ := get(t, srv.URL+"/carrier/kannel"+path+"&secret="+testSecret); code != http.StatusOK {
			t.Errorf("%s with the right secret: status %d, want 200", path, code)
		}
	}
	if receipts, inbound := sink.got(); len(receipts) != 1 || len(inbound) != 1 {
		t.Errorf("sink got %d receipts and %d inbound, want 1 and 1", len(receipts), len(inbound))
	}
}

func TestInboundParsing(t *testing.T) {
	t.Parallel()
	ucs2 := func(s string) string {
		var b []byte
		for _, u := range utf16.Encode([]rune(s)) {
			b = append(b, byte(u>>8), byte(u))
		}
		return string(b)
	}
	tests := []struct {
		name                  string
		from, to              string
		text, coding, charset string
		ts                    string
		want                  carrier.Inbound
	}{
		{
			name: "7-bit UTF-8 keeps its whitespace", from: "15550001", to: "15550002",
			text: "Hello  there\nline two", coding: "0", charset: "UTF-8", ts: "1795366950",
			want: carrier.Inbound{From: "15550001", To: "15550002", Text: "Hello  there\nline two", At: time.Unix(1795366950, 0).UTC()},
		},
		{
			name: "UCS-2 with emoji", from: "+15550001", to: "+15550002",
			text: ucs2("Grüße €5 — ok 😀"), coding: "2", charset: "UTF-16BE", ts: "1795366951",
			want: carrier.Inbound{From: "15550001", To: "15550002", Text: "Grüße €5 — ok 😀", At: time.Unix(1795366951, 0).UTC()},
		},
		{
			name: "UCS-2 without charset", from: "15550001", to: "15550002",
			text: ucs2("Привет"), coding: "2",
			want: carrier.Inbound{From: "15550001", To: "15550002", Text: "Привет", At: fixedNow},
		},
		{
			name: "recoded to WINDOWS-1252", from: "15550001", to: "15550002",
			text: "\x80 caf\xe9 \x93q\x94", coding: "0", charset: "WINDOWS-1252",
			want: carrier.Inbound{From: "15550001", To: "15550002", Text: "€ café “q”", At: fixedNow},
		},
		{
			name: "international prefix 00 instead of +", from: "00447911123456", to: "0015550002",
			text: "STOP", coding: "0",
			want: carrier.Inbound{From: "447911123456", To: "15550002", Text: "STOP", At: fixedNow},
		},
		{
			name: "a national number keeps its 0", from: "07911123456", to: "15550002",
			text: "hi", coding: "0",
			want: carrier.Inbound{From: "07911123456", To: "15550002", Text: "hi", At: fixedNow},
		},
		{
			name: "8-bit binary that is not UTF-8 reads as Latin-1", from: "15550001", to: "15550002",
			text: "caf\xe9", coding: "1", charset: "8-BIT",
			want: carrier.Inbound{From: "15550001", To: "15550002", Text: "café", At: fixedNow},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, sink := setupHandler(t)
			getURL := InboundGetURL(srv.URL+"/carrier/kannel", testSecret)
			u := kannelFill(getURL, map[byte]string{
				'p': tt.from, 'P': tt.to, 'b': tt.text, 'c': tt.coding, 'C': tt.charset, 'T': tt.ts,
			})
			code, body := get(t, u)
			if code != http.StatusOK || body != "" {
				t.Fatalf("got %d %q, want 200 with empty body", code, body)
			}
			_, inbound := sink.got()
			if len(inbound) != 1 {
				t.Fatalf("sink got %d inbound, want 1", len(inbound))
			}
			got := inbound[0]
			if got.From != tt.want.From || got.To != tt.want.To || got.Text != tt.want.Text || !got.At.Equal(tt.want.At) ||
				len(got.Media) != 0 || len(got.Participants) != 0 {
				t.Errorf("inbound = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestInboundRejectsBadNumbers(t *testing.T) {
	t.Parallel()
	srv, sink := setupHandler(t)
	base := srv.URL + "/carrier/kannel/inbound?secret=" + testSecret + "&text=hi"
	for _, q := range []string{"&to=1556", "&from=1555", "&from=BANK&to=1556", "&from=1555&to=1-556", "&from=%2B&to=1556", "&from=1555&to=1556&coding=x",
		"&from=1234567890123456&to=1556", // 16 digits: longer than E.164 allows
	} {
		if code, _ := get(t, base+q); code != http.StatusBadRequest {
			t.Errorf("query %q: status %d, want 400", q, code)
		}
	}
	if _, inbound := sink.got(); len(inbound) != 0 {
		t.Errorf("sink got %d inbound, want 0", len(inbound))
	}
}

func TestSinkFailureAnswers500(t *testing.T) {
	t.Parallel()
	srv, sink := setupHandler(t)
	sink.fail(errors.New("database is down"))
	for _, path := range []string{"/dlr?id=1&type=1", "/inbound?from=1555&to=1556&text=hi"} {
		code, body := get(t, srv.URL+"/carrier/kannel"+path+"&secret="+testSecret)
		if code != http.StatusInternalServerError {
			t.Errorf("%s: status %d, want 500", path, code)
		}
		if strings.Contains(body, "database") {
			t.Errorf("%s: body %q exposes the sink error", path, body)
		}
	}
}

func TestHandlerLimits(t *testing.T) {
	t.Parallel()
	srv, sink := setupHandler(t)
	long := srv.URL + "/carrier/kannel/inbound?secret=" + testSecret + "&from=1555&to=1556&text=" + strings.Repeat("a", maxQueryBytes)
	if code, _ := get(t, long); code != http.StatusRequestURITooLong {
		t.Errorf("oversized query: status %d, want 414", code)
	}
	resp, err := http.Post(srv.URL+"/carrier/kannel/dlr?id=1&type=1&secret="+testSecret, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /dlr: status %d, want 405", resp.StatusCode)
	}
	if code, _ := get(t, srv.URL+"/carrier/kannel/other?secret="+testSecret); code != http.StatusNotFound {
		t.Errorf("unknown route: status %d, want 404", code)
	}
	if receipts, inbound := sink.got(); len(receipts)+len(inbound) != 0 {
		t.Errorf("sink got events from refused requests")
	}
}

func TestDecodeText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		coding  int
		charset string
		want    string
	}{
		{"plain", 0, "UTF-8", "plain"},
		{"bad \xff utf8", 0, "UTF-8", "bad \uFFFD utf8"},
		{"\x00A\x00", 2, "UTF-16BE", "A\uFFFD"}, // odd length
		{"\xd8\x3d\xde\x00", 2, "", "😀"},
		{"\x81", 0, "WINDOWS-1252", "\uFFFD"}, // undefined in cp1252
		{"\xe9", 0, "ISO-8859-1", "é"},
		{"\xe9", -1, "", "é"},
		{"ok", -1, "", "ok"},
	}
	for _, tt := range tests {
		if got := decodeText([]byte(tt.in), tt.coding, tt.charset); got != tt.want {
			t.Errorf("decodeText(%q, %d, %q) = %q, want %q", tt.in, tt.coding, tt.charset, got, tt.want)
		}
	}
}

func TestSMSServiceNeverReplies(t *testing.T) {
	t.Parallel()
	conf := SMSService("https://sb.example.com/carrier/kannel/", testSecret)
	for _, line := range []string{
		"group = sms-service\n",
		"max-messages = 0\n",
		"omit-empty = true\n",
		`get-url = "https://sb.example.com/carrier/kannel/inbound?secret=` + testSecret +
			`&from=%p&to=%P&text=%b&coding=%c&charset=%C&ts=%T"` + "\n",
	} {
		if !strings.Contains(conf, line) {
			t.Errorf("SMSService lacks %q:\n%s", line, conf)
		}
	}
}
