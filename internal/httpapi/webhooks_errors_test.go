package httpapi_test

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/httpapi"
	"switchboard/internal/sms"
	"switchboard/internal/users"
	"switchboard/internal/webhooks"
)

// TestWebhookAttemptErrorsAreCategories makes test sends fail every way a
// transport can and checks what the client is shown, in the test's answer
// and in the delivery list: a category and a fixed sentence, never an
// address or the resolver (before, "dial tcp 127.0.0.1:…: connect:
// connection refused", "lookup … on 127.0.0.53:53: …").
func TestWebhookAttemptErrorsAreCategories(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		allow := webhooks.ParseAllowList("127.0.0.1,nonexistent.invalid")
		logs := &lockedBuffer{}
		hooks := webhooks.New(webhooks.Config{Store: f.st, AllowHosts: allow, Log: slog.New(slog.NewTextHandler(logs, nil))})
		// Test sends go through the dispatcher. Its timeout ends the slow
		// case; every other case must finish within it, a TLS handshake
		// included, which took over 300 ms on a loaded CI machine.
		hooks.Dispatcher(webhooks.DispatcherConfig{Timeout: 3 * time.Second})
		srv := httptest.NewServer(httpapi.New(httpapi.Config{
			Store: f.st, Auth: &auth.Authenticator{Store: f.st},
			SMS: sms.New(sms.Config{Store: f.st}), Users: users.New(users.Config{Store: f.st}),
			Webhooks: hooks,
			Log:      slog.New(slog.DiscardHandler),
		}))
		t.Cleanup(srv.Close)
		f.url = srv.URL

		plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		t.Cleanup(plain.Close)
		selfSigned := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		t.Cleanup(selfSigned.Close)
		release := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
		t.Cleanup(slow.Close)
		t.Cleanup(func() { close(release) })
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		must(t, err)
		closed := "http://" + ln.Addr().String() + "/in"
		ln.Close()
		plainPort := plain.URL[strings.LastIndex(plain.URL, ":"):]

		for _, tc := range []struct {
			name, url, want string
			direct          bool // stored without the save-time check
		}{
			{"refused", closed, "connection_refused: the endpoint refused the connection", false},
			{"no such host", "http://nonexistent.invalid/in", "dns_failure: ", false},
			{"timeout", slow.URL, "timeout: the endpoint did not answer in time", false},
			{"plain http to https", "https://127.0.0.1" + plainPort + "/in", "tls_error: the endpoint did not answer with TLS", false},
			{"untrusted certificate", selfSigned.URL, "tls_error: the endpoint's certificate is not signed by a trusted authority", false},
			{"name resolving to loopback", "http://localhost" + plainPort + "/in", "destination_refused: the host resolves to a loopback address, which deliveries may not reach", true},
			{"status", "", "http_status: the endpoint answered HTTP 503", false},
		} {
			url := tc.url
			if tc.name == "status" {
				r := newTestReceiver(t, 503)
				url = r.srv.URL
			}
			var id int64
			if tc.direct {
				w := domain.Webhook{AccountID: f.users["Alice"].AccountID, URL: url, Type: domain.EventAccountSMS, Secret: webhooks.NewSecret()}
				must(t, f.st.CreateWebhook(ctx, &w))
				id = w.ID
			} else {
				id = f.createWebhook(t, f.keys["acme"], `{"url":"`+url+`","type":"AccountSMS"}`).ID
			}
			status, _, b := f.do(t, "POST", "/api/public/v1/webhooks/"+strconv.FormatInt(id, 10)+"/test", f.keys["acme"], "")
			if status != 200 {
				t.Errorf("%s: test %d %s", tc.name, status, b)
				continue
			}
			shown := decodeInto[struct{ Data testDelivery }](t, b).Data.LastAttempt.Error
			listed := decodeInto[struct{ Data []testDelivery }](t, mustBody(t, f, "GET", "/webhooks/"+strconv.FormatInt(id, 10)+"/deliveries", f.keys["acme"])).Data[0].LastAttempt.Error
			for _, got := range []string{shown, listed} {
				if !strings.HasPrefix(got, tc.want) {
					t.Errorf("%s: error %q, want %q", tc.name, got, tc.want)
				}
				for _, leak := range []string{"127.0.0.", ":53", "lookup", "dial", "tcp", "x509", "Post "} {
					if strings.Contains(got, leak) {
						t.Errorf("%s: error %q shows %q", tc.name, got, leak)
					}
				}
			}
		}
		// The detail is in the server log.
		for _, want := range []string{"connect: connection refused", "refusing to connect to 127.0.0.1", "certificate signed by unknown authority"} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("the server log lacks %q:\n%s", want, logs.String())
			}
		}
	})
}
