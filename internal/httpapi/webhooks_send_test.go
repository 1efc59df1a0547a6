package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"switchboard/internal/auth"
	"switchboard/internal/store/storetest"
	"switchboard/internal/webhooks"
)

// testReceiver is an endpoint answering status to every request and
// handing each to the test.
type testReceiver struct {
	srv *httptest.Server
	got chan *http.Request
	// bodies holds each request's body, in arrival order.
	bodies chan []byte
}

func newTestReceiver(t *testing.T, status int) *testReceiver {
	r := &testReceiver{got: make(chan *http.Request, 10), bodies: make(chan []byte, 10)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.got <- req
		r.bodies <- b
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

type testDelivery struct {
	ID            int64  `json:"id"`
	WebhookID     int64  `json:"webhookId"`
	EventID       string `json:"eventId"`
	Type          string `json:"type"`
	State         string `json:"state"`
	Attempts      int    `json:"attempts"`
	NextAttemptAt string `json:"nextAttemptAt"`
	LastAttempt   *struct {
		StatusCode int    `json:"statusCode"`
		LatencyMs  int64  `json:"latencyMs"`
		Error      string `json:"error"`
	} `json:"lastAttempt"`
}

// TestWebhookSendTest sends test events through the router to real
// receivers on loopback (allowed by the operator's list) and checks the
// signature with the Standard Webhooks reference library, the answer, the
// delivery history, and that a test changes nothing about the subscription.
func TestWebhookSendTest(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		f.serveWebhooks(t, webhooks.New(webhooks.Config{Store: f.st, AllowHosts: webhooks.ParseAllowList("127.0.0.1")}))
		send := func(key string, id int64) (int, testDelivery, []byte) {
			t.Helper()
			status, _, b := f.do(t, "POST", "/api/public/v1/webhooks/"+strconv.FormatInt(id, 10)+"/test", key, "")
			var d testDelivery
			if status == 200 {
				d = decodeInto[struct{ Data testDelivery }](t, b).Data
			}
			return status, d, b
		}

		// A disabled subscription is tested too: that is how an endpoint is
		// checked before it is enabled.
		ok := newTestReceiver(t, http.StatusNoContent)
		w := f.createWebhook(t, f.keys["acme"], `{"url":"`+ok.srv.URL+`/in","type":"AccountEndedCalls"}`)
		status, d, b := send(f.keys["acme"], w.ID)
		if status != 200 || d.State != "succeeded" || d.Attempts != 1 || d.WebhookID != w.ID || d.Type != "AccountEndedCalls" ||
			d.LastAttempt == nil || d.LastAttempt.StatusCode != 204 || d.LastAttempt.Error != "" || d.NextAttemptAt != "" {
			t.Fatalf("test of a healthy endpoint: %d %s", status, b)
		}
		req, body := <-ok.got, <-ok.bodies
		wh, err := standardwebhooks.NewWebhook(w.Secret)
		must(t, err)
		if err := wh.Verify(body, req.Header); err != nil {
			t.Errorf("reference library rejects the test event: %v", err)
		}
		if got := req.Header.Get("webhook-id"); got != d.EventID {
			t.Errorf("webhook-id %q, answer's eventId %q", got, d.EventID)
		}
		var payload struct {
			ID   string `json:"id"`
			Type string `json:"type"`
			Data struct {
				Event     string `json:"event"`
				WebhookID int64  `json:"webhookId"`
			} `json:"data"`
		}
		must(t, json.Unmarshal(body, &payload))
		if payload.ID != d.EventID || payload.Type != "AccountEndedCalls" || payload.Data.Event != "test" || payload.Data.WebhookID != w.ID {
			t.Errorf("test payload = %s", body)
		}
		// In the history like any other delivery.
		_, _, b = f.do(t, "GET", "/api/public/v1/webhooks/"+strconv.FormatInt(w.ID, 10)+"/deliveries", f.keys["acme"], "")
		if list := decodeInto[struct{ Data []testDelivery }](t, b).Data; len(list) != 1 || list[0].ID != d.ID || list[0].State != "succeeded" || list[0].EventID != d.EventID {
			t.Errorf("deliveries after a test: %s", b)
		}

		// 410: a failed test, not retried, and the subscription stays as it was.
		gone := newTestReceiver(t, http.StatusGone)
		g := f.createWebhook(t, f.keys["acme"], `{"url":"`+gone.srv.URL+`","type":"AccountSMS","enabled":true}`)
		status, d, b = send(f.keys["acme"], g.ID)
		if status != 200 || d.State != "failed" || d.LastAttempt == nil || d.LastAttempt.StatusCode != 410 || d.LastAttempt.Error != "http_status: the endpoint answered HTTP 410" || d.NextAttemptAt != "" {
			t.Errorf("test of a gone endpoint: %d %s", status, b)
		}
		<-gone.got
		_, _, b = f.do(t, "GET", "/api/public/v1/webhooks/"+strconv.FormatInt(g.ID, 10), f.keys["acme"], "")
		if !decodeInto[struct{ Data webhookResp }](t, b).Data.Enabled {
			t.Errorf("a test's 410 disabled the subscription: %s", b)
		}

		// Nobody listening: failed with no status and the reason.
		down := newTestReceiver(t, 200)
		dw := f.createWebhook(t, f.keys["acme"], `{"url":"`+down.srv.URL+`","type":"AccountSMS"}`)
		down.srv.Close()
		status, d, b = send(f.keys["acme"], dw.ID)
		if status != 200 || d.State != "failed" || d.LastAttempt == nil || d.LastAttempt.StatusCode != 0 || d.LastAttempt.Error == "" {
			t.Errorf("test of an endpoint that is down: %d %s", status, b)
		}

		// Another account's, an unknown and a malformed id are 404; a
		// read-only key is 403.
		for _, tc := range []struct {
			key  string
			id   int64
			want int
		}{{f.keys["beta"], w.ID, 404}, {f.keys["acme"], 999999, 404}} {
			if status, _, b := send(tc.key, tc.id); status != tc.want {
				t.Errorf("test of %d: %d %s, want %d", tc.id, status, b, tc.want)
			}
		}
		if status, _, b := f.do(t, "POST", "/api/public/v1/webhooks/abc/test", f.keys["acme"], ""); status != 404 {
			t.Errorf("test of /webhooks/abc: %d %s, want 404", status, b)
		}
		_, readOnly := storetest.Key(t, f.st, f.users["Alice"].AccountID, auth.WebhooksRead)
		if status, _, b := send(readOnly, w.ID); status != 403 {
			t.Errorf("test with webhooks:read only: %d %s, want 403", status, b)
		}
		if n := len(ok.got) + len(gone.got); n != 0 {
			t.Errorf("%d more requests than tests sent", n)
		}
	})
}
