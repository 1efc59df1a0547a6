package kannel

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/carrier"
)

const testSecret = "s3cret-Token_0123456789"

// fakeKannel stands in for smsbox's sendsms interface: it records each
// query and answers with a fixed status and body.
type fakeKannel struct {
	srv    *httptest.Server
	status int
	answer string
	delay  time.Duration

	mu      sync.Mutex
	queries []url.Values
	paths   []string
}

func newFakeKannel(t *testing.T, status int, answer string) *fakeKannel {
	t.Helper()
	f := &fakeKannel{status: status, answer: answer}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.queries = append(f.queries, r.URL.Query())
		f.paths = append(f.paths, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
		if f.delay > 0 {
			select {
			case <-time.After(f.delay):
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(f.status)
		_, _ = w.Write([]byte(f.answer))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// last returns the method and path, and the query, of the latest request.
func (f *fakeKannel) last(t *testing.T) (string, url.Values) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queries) == 0 {
		t.Fatal("Kannel got no request")
	}
	return f.paths[len(f.paths)-1], f.queries[len(f.queries)-1]
}

func (f *fakeKannel) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queries)
}

func testConfig(sendURL string) Config {
	return Config{
		SendURL:     sendURL + "/cgi-bin/sendsms",
		Username:    "sb",
		Password:    "pw-not-in-errors",
		CallbackURL: "https://sb.example.com/carrier/kannel/",
		Secret:      testSecret,
	}
}

func newDriver(t *testing.T, cfg Config) *Driver {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return d
}

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	good := testConfig("http://127.0.0.1:13013")
	if _, err := New(good); err != nil {
		t.Fatalf("New(good config) = %v, want nil", err)
	}
	tests := []struct {
		name   string
		modify func(*Config)
	}{
		{"no SendURL", func(c *Config) { c.SendURL = "" }},
		{"SendURL not http", func(c *Config) { c.SendURL = "ftp://127.0.0.1/cgi-bin/sendsms" }},
		{"SendURL without host", func(c *Config) { c.SendURL = "http:///cgi-bin/sendsms" }},
		{"SendURL with query", func(c *Config) { c.SendURL = "http://127.0.0.1:13013/cgi-bin/sendsms?user=x" }},
		{"no username", func(c *Config) { c.Username = "" }},
		{"no password", func(c *Config) { c.Password = "" }},
		{"no CallbackURL", func(c *Config) { c.CallbackURL = "" }},
		{"relative CallbackURL", func(c *Config) { c.CallbackURL = "/carrier/kannel" }},
		{"CallbackURL with percent", func(c *Config) { c.CallbackURL = "https://sb.example.com/a%20b" }},
		{"CallbackURL with query", func(c *Config) { c.CallbackURL = "https://sb.example.com/k?x=1" }},
		{"short secret", func(c *Config) { c.Secret = "short" }},
		{"secret needs escaping", func(c *Config) { c.Secret = "0123456789abcdef&x=%d" }},
		{"SMSC with space", func(c *Config) { c.SMSC = "a b" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.modify(&cfg)
			if _, err := New(cfg); err == nil {
				t.Fatalf("New accepted a config with %s", tt.name)
			}
		})
	}
}

func TestSendRequestParameters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		smsc       string
		msg        carrier.Message
		wantTo     string
		wantText   string
		wantCoding string
	}{
		{
			name:       "GSM text goes 7-bit",
			msg:        carrier.Message{ID: 7, From: "15550001", To: []string{"15550002"}, Text: "Hello {world} €5 [ok]"},
			wantTo:     "15550002",
			wantText:   "Hello {world} €5 [ok]",
			wantCoding: "0",
		},
		{
			name:       "non-GSM text goes UCS-2",
			msg:        carrier.Message{ID: 8, From: "15550001", To: []string{"15550002"}, Text: "Grüße €5 — ok 😀"},
			wantTo:     "15550002",
			wantText:   "Grüße €5 — ok 😀",
			wantCoding: "2",
		},
		{
			name: "group with media is one SMS to every recipient",
			smsc: "smpp-a",
			msg: carrier.Message{ID: 9, From: "15550001", To: []string{"15550002", "15550003", "15550004"},
				Text: "Look", Media: []string{"https://sb.example.com/m/a.jpg", "https://sb.example.com/m/b.png"}},
			wantTo:     "15550002 15550003 15550004",
			wantText:   "Look\nhttps://sb.example.com/m/a.jpg\nhttps://sb.example.com/m/b.png",
			wantCoding: "0",
		},
		{
			name:       "media only",
			msg:        carrier.Message{ID: 10, From: "15550001", To: []string{"15550002"}, Media: []string{"https://sb.example.com/m/a.jpg"}},
			wantTo:     "15550002",
			wantText:   "https://sb.example.com/m/a.jpg",
			wantCoding: "0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := newFakeKannel(t, http.StatusAccepted, "0: Accepted for delivery")
			cfg := testConfig(k.srv.URL)
			cfg.SMSC = tt.smsc
			d := newDriver(t, cfg)
			acc, err := d.Send(context.Background(), tt.msg)
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			if acc.Ref != "" {
				t.Errorf("Ref = %q, want empty (Kannel 1.4.5 gives no id)", acc.Ref)
			}
			path, q := k.last(t)
			if want := "GET /cgi-bin/sendsms"; path != want {
				t.Errorf("request = %q, want %q", path, want)
			}
			want := map[string]string{
				"username": "sb",
				"password": "pw-not-in-errors",
				"from":     "15550001",
				"to":       tt.wantTo,
				"text":     tt.wantText,
				"charset":  "UTF-8",
				"coding":   tt.wantCoding,
				"dlr-mask": "31",
				"dlr-url": "https://sb.example.com/carrier/kannel/dlr?id=" + strconv.FormatInt(tt.msg.ID, 10) +
					"&secret=" + testSecret + "&type=%d&reply=%A&ts=%T",
				"smsc": tt.smsc,
			}
			for k, v := range want {
				if got := q.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if len(q) != len(want)-boolInt(tt.smsc == "") {
				t.Errorf("got parameters %v, want exactly %d", q, len(want)-boolInt(tt.smsc == ""))
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestSendAnswerMapping(t *testing.T) {
	t.Parallel()
	msg := carrier.Message{ID: 1, From: "15550001", To: []string{"15550002"}, Text: "hi"}
	tests := []struct {
		status  int
		answer  string
		wantErr bool
	}{
		{http.StatusAccepted, "0: Accepted for delivery", false},
		{http.StatusAccepted, "3: Queued for later delivery", false},
		{http.StatusAccepted, "0: Accepted for delivery\n", false},
		{http.StatusAccepted, "Sent.", true}, // immediate-sendsms-reply: nothing known yet
		{http.StatusForbidden, "Authorization failed for sendsms", true},
		{http.StatusForbidden, "Not routable. Do not try again.", true},
		{http.StatusServiceUnavailable, "Temporal failure, try again later.", true},
		{http.StatusBadRequest, "Charset or body misformed, rejected", true},
		{http.StatusInternalServerError, "Sending failed.", true},
		{http.StatusOK, "0: Accepted for delivery", true}, // wrong status: not smsbox's accept
		{http.StatusAccepted, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.answer, func(t *testing.T) {
			t.Parallel()
			k := newFakeKannel(t, tt.status, tt.answer)
			d := newDriver(t, testConfig(k.srv.URL))
			_, err := d.Send(context.Background(), msg)
			if tt.wantErr {
				if !errors.Is(err, carrier.ErrUnavailable) {
					t.Fatalf("Send on %d %q: err = %v, want ErrUnavailable", tt.status, tt.answer, err)
				}
				if strings.Contains(err.Error(), "pw-not-in-errors") {
					t.Errorf("error %q leaks the Kannel password", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Send on %d %q: %v, want accepted", tt.status, tt.answer, err)
			}
		})
	}
}

// TestSendDoesNotFollowRedirects: the sendsms request carries the password,
// the callback secret and attachment URLs, so a redirect must not take it
// anywhere, and an "accepted" answer from elsewhere is not smsbox's.
func TestSendDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "0: Accepted for delivery")
	}))
	defer other.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/elsewhere", http.StatusFound)
	}))
	defer redirecting.Close()
	d := newDriver(t, testConfig(redirecting.URL))
	_, err := d.Send(context.Background(), carrier.Message{ID: 1, From: "15550001", To: []string{"15550002"}, Text: "hi"})
	if !errors.Is(err, carrier.ErrUnavailable) {
		t.Errorf("Send through a redirect: err = %v, want ErrUnavailable", err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect was followed (%d requests elsewhere)", n)
	}
}

func TestSendNetworkErrors(t *testing.T) {
	t.Parallel()
	msg := carrier.Message{ID: 1, From: "15550001", To: []string{"15550002"}, Text: "hi"}

	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		k := newFakeKannel(t, http.StatusAccepted, "0: Accepted for delivery")
		k.srv.Close()
		d := newDriver(t, testConfig(k.srv.URL))
		_, err := d.Send(context.Background(), msg)
		if !errors.Is(err, carrier.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnavailable", err)
		}
		if strings.Contains(err.Error(), "pw-not-in-errors") || strings.Contains(err.Error(), "sendsms?") {
			t.Errorf("error %q leaks the request URL", err)
		}
	})

	t.Run("context deadline", func(t *testing.T) {
		t.Parallel()
		k := newFakeKannel(t, http.StatusAccepted, "0: Accepted for delivery")
		k.delay = 10 * time.Second
		d := newDriver(t, testConfig(k.srv.URL))
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := d.Send(ctx, msg)
		// The request was written: smsbox may have queued the message.
		if !errors.Is(err, carrier.ErrUnknown) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want ErrUnknown and DeadlineExceeded", err)
		}
		if strings.Contains(err.Error(), "pw-not-in-errors") {
			t.Errorf("error %q leaks the Kannel password", err)
		}
	})

	t.Run("client timeout", func(t *testing.T) {
		t.Parallel()
		k := newFakeKannel(t, http.StatusAccepted, "0: Accepted for delivery")
		k.delay = 10 * time.Second
		cfg := testConfig(k.srv.URL)
		cfg.HTTPClient = &http.Client{Timeout: 50 * time.Millisecond}
		d := newDriver(t, cfg)
		_, err := d.Send(context.Background(), msg)
		if !errors.Is(err, carrier.ErrUnknown) || errors.Is(err, carrier.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnknown (not ErrUnavailable: the request was sent)", err)
		}
		if strings.Contains(err.Error(), "pw-not-in-errors") {
			t.Errorf("error %q leaks the Kannel password", err)
		}
	})
}

// A carrier that answers after the driver's own HTTP timeout may have taken
// the message: that is an unknown outcome, never "not sent" (before, it was
// ErrUnavailable and the client got a 503 for a message that was delivered).
// Without a client timeout of its own the driver reads the late answer until
// the context's deadline. A connection lost after the request was written
// is unknown too; one refused before anything was written is not sent.
func TestSendUnknownOutcomes(t *testing.T) {
	t.Parallel()
	msg := carrier.Message{ID: 1, From: "15550001", To: []string{"15550002"}, Text: "hi"}

	t.Run("answer after the client timeout", func(t *testing.T) {
		t.Parallel()
		k := newFakeKannel(t, http.StatusAccepted, "0: Accepted for delivery")
		k.delay = 300 * time.Millisecond
		cfg := testConfig(k.srv.URL)
		cfg.HTTPClient = &http.Client{Timeout: 100 * time.Millisecond}
		_, err := newDriver(t, cfg).Send(context.Background(), msg)
		if !errors.Is(err, carrier.ErrUnknown) || errors.Is(err, carrier.ErrUnavailable) {
			t.Fatalf("err = %v, want ErrUnknown", err)
		}
	})

	t.Run("late answer read by the default client", func(t *testing.T) {
		t.Parallel()
		k := newFakeKannel(t, http.StatusAccepted, "0: Accepted for delivery")
		k.delay = 300 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := newDriver(t, testConfig(k.srv.URL)).Send(ctx, msg); err != nil {
			t.Fatalf("a late acceptance within the deadline: err = %v, want accepted", err)
		}
	})

	t.Run("connection lost after the request was written", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		}))
		t.Cleanup(srv.Close)
		_, err := newDriver(t, testConfig(srv.URL)).Send(context.Background(), msg)
		if !errors.Is(err, carrier.ErrUnknown) {
			t.Fatalf("err = %v, want ErrUnknown", err)
		}
	})

	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		k := newFakeKannel(t, http.StatusAccepted, "0: Accepted for delivery")
		k.srv.Close()
		_, err := newDriver(t, testConfig(k.srv.URL)).Send(context.Background(), msg)
		if !errors.Is(err, carrier.ErrUnavailable) || errors.Is(err, carrier.ErrUnknown) {
			t.Fatalf("err = %v, want ErrUnavailable only", err)
		}
	})
}

func TestSendRejectsInvalidMessages(t *testing.T) {
	t.Parallel()
	k := newFakeKannel(t, http.StatusAccepted, "0: Accepted for delivery")
	d := newDriver(t, testConfig(k.srv.URL))
	tests := []struct {
		name string
		msg  carrier.Message
	}{
		{"no id", carrier.Message{From: "1555", To: []string{"1556"}, Text: "x"}},
		{"no from", carrier.Message{ID: 1, To: []string{"1556"}, Text: "x"}},
		{"formatted from", carrier.Message{ID: 1, From: "+1555", To: []string{"1556"}, Text: "x"}},
		{"no recipient", carrier.Message{ID: 1, From: "1555", Text: "x"}},
		{"bad recipient", carrier.Message{ID: 1, From: "1555", To: []string{"1556", "15 57"}, Text: "x"}},
		{"nothing to send", carrier.Message{ID: 1, From: "1555", To: []string{"1556"}}},
		{"empty media", carrier.Message{ID: 1, From: "1555", To: []string{"1556"}, Media: []string{""}}},
	}
	for _, tt := range tests {
		if _, err := d.Send(context.Background(), tt.msg); !errors.Is(err, carrier.ErrUnavailable) {
			t.Errorf("%s: err = %v, want ErrUnavailable", tt.name, err)
		}
	}
	if n := k.count(); n != 0 {
		t.Errorf("Kannel got %d requests for invalid messages, want 0", n)
	}
}
