package httpapi_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/httpapi"
	"switchboard/internal/sms"
	"switchboard/internal/store/storetest"
	"switchboard/internal/users"
	"switchboard/internal/webhooks"
)

// scriptedReceiver answers each request with the next of its answers (the
// last one once they run out) and keeps each request's webhook-id.
type scriptedReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	// answers are status and body; ids the webhook-ids received, in order.
	answers []struct {
		status int
		body   string
	}
	ids []string
	got chan *http.Request
}

func newScriptedReceiver(t *testing.T) *scriptedReceiver {
	r := &scriptedReceiver{got: make(chan *http.Request, 100)}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.ids = append(r.ids, req.Header.Get("webhook-id"))
		a := r.answers[min(len(r.ids), len(r.answers))-1]
		r.mu.Unlock()
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
		r.got <- req
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// answer sets the answers from the next request on.
func (r *scriptedReceiver) answer(statusBody ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	done := len(r.ids)
	r.answers = r.answers[:min(done, len(r.answers))]
	for len(r.answers) < done {
		r.answers = append(r.answers, r.answers[len(r.answers)-1])
	}
	for i := 0; i < len(statusBody); i += 2 {
		r.answers = append(r.answers, struct {
			status int
			body   string
		}{statusBody[i].(int), statusBody[i+1].(string)})
	}
}

func (r *scriptedReceiver) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ids...)
}

// deliveringServer points f at a server whose webhooks may reach
// 127.0.0.1, and starts a dispatcher retrying after retry (each wait).
func (f *fixture) deliveringServer(t *testing.T, retry time.Duration) *webhooks.Dispatcher {
	t.Helper()
	allow := webhooks.ParseAllowList("127.0.0.1")
	d := webhooks.NewDispatcher(webhooks.DispatcherConfig{Store: f.st, AllowHosts: allow, Poll: 10 * time.Millisecond,
		Retry: []time.Duration{retry, retry, retry, retry, retry, retry}})
	must(t, d.Start(ctx))
	t.Cleanup(d.Stop)
	srv := httptest.NewServer(httpapi.New(httpapi.Config{
		Store: f.st, Auth: &auth.Authenticator{Store: f.st},
		SMS: sms.New(sms.Config{Store: f.st}), Users: users.New(users.Config{Store: f.st}),
		Webhooks: webhooks.New(webhooks.Config{Store: f.st, AllowHosts: allow, Dispatcher: d}),
		Log:      slog.New(slog.DiscardHandler),
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return d
}

type attemptResp struct {
	ID         int64  `json:"id"`
	At         string `json:"at"`
	StatusCode int    `json:"statusCode"`
	LatencyMs  int64  `json:"latencyMs"`
	Error      string `json:"error"`
	Response   string `json:"response"`
}

type deliveryResp struct {
	ID         int64         `json:"id"`
	EventID    string        `json:"eventId"`
	State      string        `json:"state"`
	Attempts   int           `json:"attempts"`
	AttemptLog []attemptResp `json:"attemptLog"`
	RecoveryID int64         `json:"recoveryId"`
}

// deliveries lists the webhook's deliveries through the API, newest first.
func (f *fixture) deliveries(t *testing.T, key string, hook int64) []deliveryResp {
	t.Helper()
	status, _, b := f.do(t, "GET", "/api/public/v1/webhooks/"+strconv.FormatInt(hook, 10)+"/deliveries?limit=200", key, "")
	if status != 200 {
		t.Fatalf("deliveries: %d %s", status, b)
	}
	return decodeInto[struct{ Data []deliveryResp }](t, b).Data
}

// waitDeliveries polls the deliveries list until cond holds (10 s at most).
func (f *fixture) waitDeliveries(t *testing.T, key string, hook int64, what string, cond func([]deliveryResp) bool) []deliveryResp {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l := f.deliveries(t, key, hook)
		if cond(l) {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: deliveries %+v", what, l)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWebhookAttemptLog checks, through the router and a real dispatcher,
// that the 500s before a 200 are visible: each delivery carries every
// attempt, newest first, with the status, latency, error and the start of
// the endpoint's answer, and GET …/attempts pages them; another account
// cannot read them.
func TestWebhookAttemptLog(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		f.deliveringServer(t, 20*time.Millisecond)
		r := newScriptedReceiver(t)
		r.answer(500, "<html>Internal & Server Error</html>", 503, "\x00\xffdown", 200, "thanks")
		w := f.createWebhook(t, f.keys["acme"], `{"url":"`+r.srv.URL+`/in","type":"AccountSMS","enabled":true}`)
		must(t, f.st.AddEvents(ctx, f.users["Alice"].AccountID, []domain.Event{{Type: "AccountSMS", Payload: []byte(`{"event":"message.sent"}`)}}))

		l := f.waitDeliveries(t, f.keys["acme"], w.ID, "success after two failures", func(l []deliveryResp) bool {
			return len(l) == 1 && l[0].State == "succeeded"
		})
		d := l[0]
		if d.Attempts != 3 || len(d.AttemptLog) != 3 {
			t.Fatalf("delivery %+v, want 3 attempts in its log", d)
		}
		for i, want := range []struct {
			status          int
			errText, answer string
		}{{200, "", "thanks"}, {503, "HTTP 503", "\uFFFD\uFFFDdown"}, {500, "HTTP 500", "<html>Internal & Server Error</html>"}} {
			a := d.AttemptLog[i]
			if a.StatusCode != want.status || a.Response != want.answer || (want.errText == "") != (a.Error == "") || a.ID == 0 || a.At == "" || a.LatencyMs < 0 {
				t.Errorf("attemptLog[%d] = %+v, want status %d, response %q", i, a, want.status, want.answer)
			}
		}
		if d.AttemptLog[0].ID <= d.AttemptLog[1].ID || d.AttemptLog[1].ID <= d.AttemptLog[2].ID {
			t.Errorf("attempt log not newest first: %+v", d.AttemptLog)
		}

		// The sub-resource pages the same attempts.
		path := "/api/public/v1/webhooks/" + strconv.FormatInt(w.ID, 10) + "/deliveries/" + strconv.FormatInt(d.ID, 10) + "/attempts"
		status, _, b := f.do(t, "GET", path+"?limit=2", f.keys["acme"], "")
		p := decodeInto[struct {
			Data []attemptResp
			Next *int64
		}](t, b)
		if status != 200 || len(p.Data) != 2 || p.Next == nil || p.Data[0] != d.AttemptLog[0] || p.Data[1] != d.AttemptLog[1] {
			t.Fatalf("first page of attempts: %d %s", status, b)
		}
		_, _, b = f.do(t, "GET", path+"?limit=2&before="+strconv.FormatInt(*p.Next, 10), f.keys["acme"], "")
		if p2 := decodeInto[struct {
			Data []attemptResp
			Next *int64
		}](t, b); len(p2.Data) != 1 || p2.Next != nil || p2.Data[0] != d.AttemptLog[2] {
			t.Errorf("second page of attempts: %s", b)
		}
		for _, q := range []string{"?limit=0", "?limit=201", "?limit=x", "?before=0", "?before=x"} {
			if status, _, b := f.do(t, "GET", path+q, f.keys["acme"], ""); status != 400 {
				t.Errorf("GET attempts%s: %d %s, want 400", q, status, b)
			}
		}
		other := f.createWebhook(t, f.keys["acme"], `{"url":"https://o.example.com","type":"AccountSMS"}`)
		for _, tc := range []struct{ key, path string }{
			{f.keys["beta"], path},
			{f.keys["acme"], "/api/public/v1/webhooks/" + strconv.FormatInt(other.ID, 10) + "/deliveries/" + strconv.FormatInt(d.ID, 10) + "/attempts"},
			{f.keys["acme"], "/api/public/v1/webhooks/" + strconv.FormatInt(w.ID, 10) + "/deliveries/99999/attempts"},
			{f.keys["acme"], "/api/public/v1/webhooks/" + strconv.FormatInt(w.ID, 10) + "/deliveries/x/attempts"},
		} {
			if status, _, b := f.do(t, "GET", tc.path, tc.key, ""); status != 404 || decodeInto[errorEnvelope](t, b).Error.Type != "not_found" {
				t.Errorf("GET %s: %d %s, want 404 not_found", tc.path, status, b)
			}
		}
		_, smsOnly := storetest.Key(t, f.st, f.users["Alice"].AccountID, auth.SMSRead)
		if status, _, b := f.do(t, "GET", path, smsOnly, ""); status != 403 || decodeInto[errorEnvelope](t, b).Error.Scope != "webhooks:read" {
			t.Errorf("attempts without webhooks:read: %d %s", status, b)
		}
	})
}
