package twilio

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
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
	if cfg.AccountSID == "" {
		cfg.AccountSID = testAccountSID
	}
	if cfg.AuthToken == "" {
		cfg.AuthToken = testAuthToken
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var testMessage = Message{From: "+15551234567", To: "+15557654321", Body: "Hello & <welcome>, ünïcode ✓ 1+1=2"}

func TestSendRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		service string
		msg     Message
		want    url.Values
	}{
		{
			name: "text only",
			msg:  testMessage,
			want: url.Values{"From": {"+15551234567"}, "To": {"+15557654321"}, "Body": {"Hello & <welcome>, ünïcode ✓ 1+1=2"}},
		},
		{
			name: "every field, MediaUrl repeated in order",
			msg: Message{
				From: "+15551234567", To: "+15557654321", Body: "look",
				MediaURLs:      []string{"https://media.example/b.png", "https://media.example/a.jpg?x=1&y=2"},
				StatusCallback: "https://switchboard.example/carrier/twilio/status?line=7",
			},
			want: url.Values{
				"From": {"+15551234567"}, "To": {"+15557654321"}, "Body": {"look"},
				"MediaUrl":       {"https://media.example/b.png", "https://media.example/a.jpg?x=1&y=2"},
				"StatusCallback": {"https://switchboard.example/carrier/twilio/status?line=7"},
			},
		},
		{
			name:    "a messaging service in place of From",
			service: testServiceSID,
			msg:     Message{From: "+15551234567", To: "+15557654321", Body: "hi"},
			want:    url.Values{"MessagingServiceSid": {testServiceSID}, "To": {"+15557654321"}, "Body": {"hi"}},
		},
		{
			name:    "media only, no From",
			service: testServiceSID,
			msg:     Message{To: "+15557654321", MediaURLs: []string{"https://media.example/a.jpg"}},
			want:    url.Values{"MessagingServiceSid": {testServiceSID}, "To": {"+15557654321"}, "MediaUrl": {"https://media.example/a.jpg"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t)
			c := newTestClient(t, Config{APIBase: api.srv.URL, MessagingServiceSID: tt.service})
			sid, err := c.Send(context.Background(), tt.msg)
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			if sid != testSID {
				t.Errorf("sid %q, want %q", sid, testSID)
			}
			got := api.requests()
			if len(got) != 1 {
				t.Fatalf("fake saw %d requests, want 1", len(got))
			}
			checkRequest(t, got[0], tt.want)
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
		wantCode   int
		wantWait   time.Duration
	}{
		{name: "201 queued", answer: answerCreated, want: "ok"},
		{name: "200 with a sid", answer: answerJSON(200, `{"sid":"`+testSID+`","status":"accepted"}`), want: "ok"},
		{
			name:   "400 invalid To",
			answer: answerJSON(400, twilioError(21211, "Invalid 'To' Phone Number: +1555", 400)),
			want:   "refused", wantStatus: 400, wantCode: 21211,
		},
		{
			name:   "400 with the code as a string",
			answer: answerJSON(400, `{"code":"21606","message":"The From phone number is not a valid, SMS-capable inbound phone number","status":400}`),
			want:   "refused", wantStatus: 400, wantCode: 21606,
		},
		{
			name:   "401 bad credentials",
			answer: answerJSON(401, twilioError(20003, "Authenticate", 401)),
			want:   "refused", wantStatus: 401, wantCode: 20003,
		},
		{
			name:   "403 from a proxy, HTML",
			answer: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "<h1>Forbidden</h1>", 403) },
			want:   "refused", wantStatus: 403,
		},
		{
			name:   "307 is not followed",
			answer: func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", 307) },
			want:   "refused", wantStatus: 307,
		},
		{
			name: "429 with Retry-After",
			answer: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "7")
				answerJSON(429, twilioError(20429, "Too Many Requests", 429))(w, r)
			},
			want: "throttled", wantStatus: 429, wantCode: 20429, wantWait: 7 * time.Second,
		},
		{
			name:   "429 without a body",
			answer: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(429) },
			want:   "throttled", wantStatus: 429,
		},
		{
			name:   "400 the From number's queue is full",
			answer: answerJSON(400, twilioError(21611, "This 'From' number has exceeded the maximum number of queued messages", 400)),
			want:   "throttled", wantStatus: 400, wantCode: 21611,
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
			name:   "201 already failed",
			answer: answerJSON(201, `{"sid":"`+testSID+`","status":"failed","error_code":30007,"error_message":"Message filtered"}`),
			want:   "refused", wantStatus: 201, wantCode: 30007,
		},
		{
			name:   "201 already failed, queue overflow",
			answer: answerJSON(201, `{"sid":"`+testSID+`","status":"failed","error_code":30001,"error_message":null}`),
			want:   "throttled", wantStatus: 201, wantCode: 30001,
		},
		{
			name:   "500",
			answer: answerJSON(500, twilioError(20500, "An internal server error has occurred", 500)),
			want:   "unknown", wantStatus: 500, wantCode: 20500,
		},
		{
			name:   "503 without a body",
			answer: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) },
			want:   "unknown", wantStatus: 503,
		},
		{name: "201 not JSON", answer: answerJSON(201, `<html>ok</html>`), want: "unknown"},
		{name: "201 without a sid", answer: answerJSON(201, `{"status":"queued"}`), want: "unknown"},
		{name: "201 empty", answer: answerJSON(201, ``), want: "unknown"},
		{
			name: "201 longer than 1 MiB",
			answer: func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, `{"sid":"`+testSID+`","body":"`+strings.Repeat("x", maxAnswerBytes)+`"}`)
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
			name: "201 cut short",
			answer: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", "100")
				w.WriteHeader(201)
				io.WriteString(w, `{"sid":"`+testSID+`"`)
				http.NewResponseController(w).Flush()
				conn, _, _ := http.NewResponseController(w).Hijack()
				conn.Close()
			},
			want: "unknown",
		},
		{
			name:   "401 echoing the auth token",
			answer: answerJSON(401, twilioError(20003, "bad token "+testAuthToken, 401)),
			want:   "refused", wantStatus: 401, wantCode: 20003,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t)
			api.setAnswer(tt.answer)
			c := newTestClient(t, Config{APIBase: api.srv.URL})
			sid, err := c.Send(context.Background(), testMessage)
			if got := outcome(t, err); got != tt.want {
				t.Fatalf("Send = %q, %v: outcome %s, want %s", sid, err, got, tt.want)
			}
			if n := len(api.requests()); n != 1 {
				t.Errorf("fake saw %d requests, want 1", n)
			}
			if err == nil {
				if sid != testSID {
					t.Errorf("sid %q, want %q", sid, testSID)
				}
				return
			}
			if sid != "" {
				t.Errorf("Send returned sid %q with an error", sid)
			}
			if strings.Contains(err.Error(), testAuthToken) {
				t.Errorf("error %q contains the auth token", err)
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
				t.Errorf("got status %d code %d wait %v, want %d %d %v", e.HTTPStatus, e.Code, e.RetryAfter, tt.wantStatus, tt.wantCode, tt.wantWait)
			}
			if strings.Contains(e.Message+e.MoreInfo, testAuthToken) {
				t.Errorf("Error fields %+v contain the auth token", e)
			}
		})
	}
}

func TestSendErrorText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		answer http.HandlerFunc
		want   string
	}{
		{
			answer: answerJSON(400, twilioError(21211, "Invalid 'To' Phone Number: +1555", 400)),
			want:   "twilio: answered 400 21211: Invalid 'To' Phone Number: +1555",
		},
		{
			answer: answerJSON(201, `{"sid":"`+testSID+`","status":"failed","error_code":30007,"error_message":"Message filtered"}`),
			want:   "twilio: answered 201 with message " + testSID + " already failed 30007: status failed: Message filtered",
		},
		{answer: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(502) }, want: "twilio: answered 502"},
	}
	for _, tt := range tests {
		api := newFakeAPI(t)
		api.setAnswer(tt.answer)
		c := newTestClient(t, Config{APIBase: api.srv.URL})
		_, err := c.Send(context.Background(), testMessage)
		if err == nil || err.Error() != tt.want {
			t.Errorf("error %v, want %q", err, tt.want)
		}
	}
}

// TestSendTimeout: Twilio took the request and has not answered when the
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
		name    string
		base    string
		service string
		ctx     context.Context
		msg     Message
	}{
		{name: "connection refused", base: closedURL, ctx: context.Background(), msg: testMessage},
		{name: "TLS certificate not trusted", base: untrusted.URL, ctx: context.Background(), msg: testMessage},
		{name: "context already canceled", base: api.srv.URL, ctx: canceled, msg: testMessage},
		{name: "no recipient", base: api.srv.URL, ctx: context.Background(), msg: Message{From: "+15551234567", Body: "hi"}},
		{name: "no sender, no service", base: api.srv.URL, ctx: context.Background(), msg: Message{To: "+15557654321", Body: "hi"}},
		{name: "neither body nor media", base: api.srv.URL, service: testServiceSID, ctx: context.Background(), msg: Message{To: "+15557654321"}},
		{name: "relative status callback", base: api.srv.URL, ctx: context.Background(), msg: Message{From: "+15551234567", To: "+15557654321", Body: "hi", StatusCallback: "/status"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestClient(t, Config{APIBase: tt.base, MessagingServiceSID: tt.service})
			_, err := c.Send(tt.ctx, tt.msg)
			if got := outcome(t, err); got != "not sent" {
				t.Fatalf("Send: %v: outcome %s, want not sent", err, got)
			}
			if strings.Contains(err.Error(), testAuthToken) {
				t.Errorf("error %q contains the auth token", err)
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
		{
			name:    "defaults",
			cfg:     Config{AccountSID: testAccountSID, AuthToken: "t"},
			wantURL: "https://api.twilio.com/2010-04-01/Accounts/" + testAccountSID + "/Messages.json",
		},
		{
			name:    "base with a slash",
			cfg:     Config{AccountSID: testAccountSID, AuthToken: "t", APIBase: "http://127.0.0.1:8080/"},
			wantURL: "http://127.0.0.1:8080" + messagesPath,
		},
		{
			name:    "a compatible provider's own account ids",
			cfg:     Config{AccountSID: "0b1c2d3e-aaaa-bbbb-cccc-0123456789ab", AuthToken: "PTabc", APIBase: "https://example.signalwire.com/api/laml", MessagingServiceSID: "pool-1"},
			wantURL: "https://example.signalwire.com/api/laml/2010-04-01/Accounts/0b1c2d3e-aaaa-bbbb-cccc-0123456789ab/Messages.json",
		},
		{name: "no account SID", cfg: Config{AuthToken: "t"}, wantErr: "account SID is required"},
		{name: "API key SID for Twilio", cfg: Config{AccountSID: "SK0123456789abcdef0123456789abcdef", AuthToken: "t"}, wantErr: `not "AC" and 32 hex digits`},
		{name: "short account SID", cfg: Config{AccountSID: "AC123", AuthToken: "t"}, wantErr: `not "AC" and 32 hex digits`},
		{name: "account SID with a slash", cfg: Config{AccountSID: "a/../b", AuthToken: "t", APIBase: "http://127.0.0.1:1"}, wantErr: "only letters, digits"},
		{name: "no auth token", cfg: Config{AccountSID: testAccountSID}, wantErr: "auth token is required"},
		{name: "auth token with a newline", cfg: Config{AccountSID: testAccountSID, AuthToken: "abc\nX-Evil: 1"}, wantErr: "auth token holds"},
		{name: "service SID not MG", cfg: Config{AccountSID: testAccountSID, AuthToken: "t", MessagingServiceSID: "PN0123456789abcdef0123456789abcdef"}, wantErr: `not "MG"`},
		{name: "base without scheme", cfg: Config{AccountSID: testAccountSID, AuthToken: "t", APIBase: "api.twilio.com"}, wantErr: "not an http(s) URL"},
		{name: "base with credentials", cfg: Config{AccountSID: testAccountSID, AuthToken: "t", APIBase: "https://u:p@api.twilio.com"}, wantErr: "not an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New: %v, want an error containing %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "X-Evil") {
					t.Errorf("error %q repeats the token", err)
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
