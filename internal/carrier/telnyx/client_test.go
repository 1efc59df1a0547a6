package telnyx

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// outcome names the class of Send's error, failing the test when an error
// falls in no class or in more than one.
func outcome(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return "ok"
	}
	var classes []string
	var e *Error
	if errors.As(err, &e) && e.Refused() {
		classes = append(classes, "refused")
	}
	if errors.As(err, &e) && e.Throttled() {
		classes = append(classes, "throttled")
	}
	if errors.Is(err, ErrNotSent) {
		classes = append(classes, "not sent")
	}
	if errors.Is(err, ErrUnknown) {
		classes = append(classes, "unknown")
	}
	if len(classes) != 1 {
		t.Errorf("error %q is in classes %v, want exactly one", err, classes)
		return "unclassified"
	}
	return classes[0]
}

func newTestClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	if cfg.APIKey == "" {
		cfg.APIKey = testAPIKey
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var testMessage = Message{From: "+15551234567", To: "+15557654321", Text: "Hello & <welcome>, ünïcode ✓"}

func TestSendRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		profile string
		msg     Message
		want    map[string]any
	}{
		{
			name: "text only",
			msg:  testMessage,
			want: map[string]any{"from": "+15551234567", "to": "+15557654321", "text": "Hello & <welcome>, ünïcode ✓"},
		},
		{
			name:    "every field",
			profile: "4001767e-ce0f-4cae-9d5f-0d5e636e7809",
			msg: Message{
				From: "+15551234567", To: "+15557654321", Text: "look",
				MediaURLs:  []string{"https://media.example/a.jpg", "https://media.example/b.png"},
				WebhookURL: "https://switchboard.example/carrier/telnyx/webhook",
			},
			want: map[string]any{
				"from": "+15551234567", "to": "+15557654321", "text": "look",
				"media_urls":           []any{"https://media.example/a.jpg", "https://media.example/b.png"},
				"webhook_url":          "https://switchboard.example/carrier/telnyx/webhook",
				"messaging_profile_id": "4001767e-ce0f-4cae-9d5f-0d5e636e7809",
			},
		},
		{
			name:    "media only, sender from the profile",
			profile: "4001767e-ce0f-4cae-9d5f-0d5e636e7809",
			msg:     Message{To: "+15557654321", MediaURLs: []string{"https://media.example/a.jpg"}},
			want: map[string]any{
				"to": "+15557654321", "media_urls": []any{"https://media.example/a.jpg"},
				"messaging_profile_id": "4001767e-ce0f-4cae-9d5f-0d5e636e7809",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t)
			c := newTestClient(t, Config{APIBase: api.srv.URL, MessagingProfileID: tt.profile})
			id, err := c.Send(context.Background(), tt.msg)
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			if id != "40385f64-aaaa-bbbb-cccc-2c963f66afa6" {
				t.Errorf("id %q, want the answer's data.id", id)
			}
			got := api.requests()
			if len(got) != 1 {
				t.Fatalf("fake saw %d requests, want 1", len(got))
			}
			checkRequest(t, got[0], testAPIKey, tt.want)
		})
	}
}

func TestSendAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		answer     http.HandlerFunc
		want       string // outcome
		wantStatus int
		wantCode   string
		wantWait   time.Duration
	}{
		{name: "200 with data", answer: answerJSON(200, `{"data":{"id":"m-1","record_type":"message"}}`), want: "ok"},
		{name: "202 with data", answer: answerJSON(202, `{"data":{"id":"m-1"}}`), want: "ok"},
		{
			name:   "400 invalid number",
			answer: answerJSON(400, telnyxErrors("40310", "Invalid 'to' address", "The 'to' address should be in E.164 format")),
			want:   "refused", wantStatus: 400, wantCode: "40310",
		},
		{
			name:   "422 missing parameter",
			answer: answerJSON(422, telnyxErrors("10004", "Missing required parameter", "The 'to' parameter is required.")),
			want:   "refused", wantStatus: 422, wantCode: "10004",
		},
		{
			name:   "401 with the code as a number",
			answer: answerJSON(401, `{"errors":[{"code":10009,"title":"Authentication failed","detail":"bad key"}]}`),
			want:   "refused", wantStatus: 401, wantCode: "10009",
		},
		{
			name:   "403 from a proxy, HTML",
			answer: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "<h1>Forbidden</h1>", 403) },
			want:   "refused", wantStatus: 403,
		},
		{
			name:   "307 is not followed",
			answer: func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/v2/elsewhere", 307) },
			want:   "refused", wantStatus: 307,
		},
		{
			name: "429 rate limit with Retry-After",
			answer: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "7")
				answerJSON(429, telnyxErrors("10011", "Too many requests", "You have exceeded the maximum number of allowed requests."))(w, r)
			},
			want: "throttled", wantStatus: 429, wantCode: "10011", wantWait: 7 * time.Second,
		},
		{
			name: "429 queue full with x-ratelimit-reset",
			answer: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Ratelimit-Reset", "2")
				answerJSON(429, telnyxErrors("40318", "Message queue full", "Slow down."))(w, r)
			},
			want: "throttled", wantStatus: 429, wantCode: "40318", wantWait: 2 * time.Second,
		},
		{
			name:   "400 carrying the queue-full code",
			answer: answerJSON(400, telnyxErrors("40318", "Message queue full", "")),
			want:   "throttled", wantStatus: 400, wantCode: "40318",
		},
		{
			name: "429 asking for a day is capped",
			answer: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "99999999999999")
				answerJSON(429, `{}`)(w, r)
			},
			want: "throttled", wantStatus: 429, wantWait: time.Hour,
		},
		{
			name:   "500",
			answer: answerJSON(500, telnyxErrors("10007", "Unexpected error", "An unexpected error occured.")),
			want:   "unknown", wantStatus: 500, wantCode: "10007",
		},
		{
			name:   "503 without a body",
			answer: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) },
			want:   "unknown", wantStatus: 503,
		},
		{name: "200 not JSON", answer: answerJSON(200, `<html>ok</html>`), want: "unknown"},
		{name: "200 without data.id", answer: answerJSON(200, `{"data":{"record_type":"message"}}`), want: "unknown"},
		{name: "200 with data null", answer: answerJSON(200, `{"data":null}`), want: "unknown"},
		{
			name: "200 longer than 1 MiB",
			answer: func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, `{"data":{"id":"m-1","text":"`+strings.Repeat("x", maxAnswerBytes)+`"}}`)
			},
			want: "unknown",
		},
		{
			name: "connection closed after the request was read",
			answer: func(w http.ResponseWriter, r *http.Request) {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					panic(err)
				}
				conn.Close()
			},
			want: "unknown",
		},
		{
			name: "200 cut short",
			answer: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", "100")
				w.WriteHeader(200)
				io.WriteString(w, `{"data":{"id":"m-1"`)
				http.NewResponseController(w).Flush()
				conn, _, _ := http.NewResponseController(w).Hijack()
				conn.Close()
			},
			want: "unknown",
		},
		{
			name:   "401 echoing the API key",
			answer: answerJSON(401, telnyxErrors("10009", "Authentication failed", "no such key "+testAPIKey)),
			want:   "refused", wantStatus: 401, wantCode: "10009",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t)
			api.setAnswer(tt.answer)
			c := newTestClient(t, Config{APIBase: api.srv.URL})
			id, err := c.Send(context.Background(), testMessage)
			if got := outcome(t, err); got != tt.want {
				t.Fatalf("Send = %q, %v: outcome %s, want %s", id, err, got, tt.want)
			}
			if n := len(api.requests()); n != 1 {
				t.Errorf("fake saw %d requests, want 1", n)
			}
			if err == nil {
				if id != "m-1" {
					t.Errorf("id %q, want m-1", id)
				}
				return
			}
			if strings.Contains(err.Error(), testAPIKey) {
				t.Errorf("error %q contains the API key", err)
			}
			var e *Error
			if tt.wantStatus == 0 {
				if errors.As(err, &e) {
					t.Errorf("error is an *Error %+v, want none", e)
				}
				return
			}
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *Error", err)
			}
			if e.HTTPStatus != tt.wantStatus || e.Code != tt.wantCode || e.RetryAfter != tt.wantWait {
				t.Errorf("got status %d code %q wait %v, want %d %q %v", e.HTTPStatus, e.Code, e.RetryAfter, tt.wantStatus, tt.wantCode, tt.wantWait)
			}
		})
	}
}

func TestSendErrorText(t *testing.T) {
	t.Parallel()
	api := newFakeAPI(t)
	api.setAnswer(answerJSON(422, telnyxErrors("10004", "Missing required parameter", "The 'to' parameter is required.")))
	c := newTestClient(t, Config{APIBase: api.srv.URL})
	_, err := c.Send(context.Background(), testMessage)
	want := "telnyx: answered 422 10004: Missing required parameter: The 'to' parameter is required."
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestSendTimeout: Telnyx took the request and has not answered when the
// caller's deadline passes.
func TestSendTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		ctx    time.Duration // the caller's deadline, or 0
		client time.Duration // the HTTPClient's Timeout, or 0
	}{
		{name: "context deadline", ctx: 100 * time.Millisecond},
		{name: "http.Client timeout", client: 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t)
			api.setAnswer(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
			cfg := Config{APIBase: api.srv.URL}
			if tt.client > 0 {
				cfg.HTTPClient = &http.Client{Timeout: tt.client}
			}
			c := newTestClient(t, cfg)
			ctx := context.Background()
			if tt.ctx > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctx)
				defer cancel()
			}
			_, err := c.Send(ctx, testMessage)
			if got := outcome(t, err); got != "unknown" {
				t.Fatalf("Send: %v: outcome %s, want unknown", err, got)
			}
			if len(api.requests()) != 1 {
				t.Errorf("fake saw %d requests, want 1", len(api.requests()))
			}
		})
	}
}

// TestSendNotSent: failures before any of the request was written.
func TestSendNotSent(t *testing.T) {
	t.Parallel()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String()
	closed.Close()

	untrusted := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("untrusted server got %s %s", r.Method, r.URL)
	}))
	untrusted.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake failure is the point
	untrusted.StartTLS()
	defer untrusted.Close()

	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	api := newFakeAPI(t)
	tests := []struct {
		name string
		base string
		ctx  context.Context
		msg  Message
	}{
		{name: "connection refused", base: closedURL, ctx: context.Background(), msg: testMessage},
		{name: "TLS certificate not trusted", base: untrusted.URL, ctx: context.Background(), msg: testMessage},
		{name: "context already canceled", base: api.srv.URL, ctx: canceled, msg: testMessage},
		{name: "no recipient", base: api.srv.URL, ctx: context.Background(), msg: Message{From: "+15551234567", Text: "hi"}},
		{name: "neither text nor media", base: api.srv.URL, ctx: context.Background(), msg: Message{From: "+15551234567", To: "+15557654321"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestClient(t, Config{APIBase: tt.base})
			_, err := c.Send(tt.ctx, tt.msg)
			if got := outcome(t, err); got != "not sent" {
				t.Fatalf("Send: %v: outcome %s, want not sent", err, got)
			}
			if strings.Contains(err.Error(), testAPIKey) {
				t.Errorf("error %q contains the API key", err)
			}
		})
	}
	if n := len(api.requests()); n != 0 {
		t.Errorf("fake saw %d requests, want none", n)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
		wantURL string
	}{
		{name: "defaults", cfg: Config{APIKey: "k"}, wantURL: "https://api.telnyx.com/v2/messages"},
		{name: "base with a slash", cfg: Config{APIKey: "k", APIBase: "http://127.0.0.1:8080/"}, wantURL: "http://127.0.0.1:8080/v2/messages"},
		{name: "base with a path", cfg: Config{APIKey: "k", APIBase: "https://proxy.example/telnyx"}, wantURL: "https://proxy.example/telnyx/v2/messages"},
		{name: "no key", cfg: Config{}, wantErr: "API key is required"},
		{name: "key with a newline", cfg: Config{APIKey: "KEYabc\nX-Evil: 1"}, wantErr: "API key holds"},
		{name: "base without scheme", cfg: Config{APIKey: "k", APIBase: "api.telnyx.com"}, wantErr: "not an http(s) URL"},
		{name: "base with credentials", cfg: Config{APIKey: "k", APIBase: "https://u:p@api.telnyx.com"}, wantErr: "not an http(s) URL"},
		{name: "short public key", cfg: Config{APIKey: "k", PublicKey: make([]byte, 31)}, wantErr: "must be 32 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New: %v, want an error containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "X-Evil") {
					t.Errorf("error %q repeats the key", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.sendURL != tt.wantURL {
				t.Errorf("send URL %q, want %q", c.sendURL, tt.wantURL)
			}
		})
	}
}

// TestNewKeepsCallerClient: the caller's client is copied, not changed.
func TestNewKeepsCallerClient(t *testing.T) {
	t.Parallel()
	hc := &http.Client{Timeout: time.Second}
	c := newTestClient(t, Config{HTTPClient: hc})
	if hc.CheckRedirect != nil {
		t.Error("New set CheckRedirect on the caller's http.Client")
	}
	if c.http == hc || c.http.Timeout != time.Second {
		t.Errorf("client's http.Client %p timeout %v, want a copy of %p with 1s", c.http, c.http.Timeout, hc)
	}
}
