package httpapi_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"switchboard/internal/apitest"
	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/httpapi"
	"switchboard/internal/sms"
	"switchboard/internal/store/storetest"
	"switchboard/internal/users"
	"switchboard/internal/webhooks"
)

// scriptedReceiver answers each request with the next of its answers (the
// last one once they run out) and keeps each request.
type scriptedReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	// answers are status and body; got the requests received, in order.
	answers []struct {
		status int
		body   string
	}
	ids    []string
	got    []http.Header
	bodies [][]byte
}

func newScriptedReceiver(t *testing.T) *scriptedReceiver {
	r := &scriptedReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.ids = append(r.ids, req.Header.Get("webhook-id"))
		r.got, r.bodies = append(r.got, req.Header.Clone()), append(r.bodies, b)
		a := r.answers[min(len(r.ids), len(r.answers))-1]
		r.mu.Unlock()
		w.WriteHeader(a.status)
		io.WriteString(w, a.body)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// request returns request i (from 0) once it has arrived.
func (r *scriptedReceiver) request(t *testing.T, i int) (http.Header, []byte) {
	t.Helper()
	apitest.Eventually(t, fmt.Sprintf("request %d", i), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return i < len(r.got)
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.got[i], r.bodies[i]
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
	hooks := webhooks.New(webhooks.Config{Store: f.st, AllowHosts: allow})
	d := hooks.Dispatcher(webhooks.DispatcherConfig{Poll: 10 * time.Millisecond,
		Retry: []time.Duration{retry, retry, retry, retry, retry, retry}})
	must(t, d.Start(ctx))
	t.Cleanup(d.Stop)
	f.serveWebhooks(t, hooks)
	return d
}

// serveWebhooks points f at a server of its store whose webhooks service is
// hooks (one that may reach 127.0.0.1, as with serve --webhook-allow-hosts),
// and returns its route table.
func (f *fixture) serveWebhooks(t *testing.T, hooks *webhooks.Service) []httpapi.Route {
	t.Helper()
	s := httpapi.New(httpapi.Config{
		Store: f.st, Auth: &auth.Authenticator{Store: f.st},
		SMS: sms.New(sms.Config{Store: f.st}), Users: users.New(users.Config{Store: f.st}),
		Webhooks: hooks,
		Log:      slog.New(slog.DiscardHandler),
	})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	f.url = srv.URL
	return httpapi.APIRoutes(s)
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

// waitDeliveries polls the deliveries list until cond holds.
func (f *fixture) waitDeliveries(t *testing.T, key string, hook int64, what string, cond func([]deliveryResp) bool) []deliveryResp {
	t.Helper()
	var l []deliveryResp
	apitest.Eventually(t, what, func() bool {
		l = f.deliveries(t, key, hook)
		return cond(l)
	})
	return l
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

type recoveryResp struct {
	ID         int64  `json:"id"`
	WebhookID  int64  `json:"webhookId"`
	Status     string `json:"status"`
	Since      string `json:"since"`
	Until      string `json:"until"`
	Queued     int    `json:"queued"`
	Deliveries struct {
		Pending, Succeeded, Failed, Skipped int
	} `json:"deliveries"`
	FinishedAt string `json:"finishedAt"`
}

// TestWebhookRecover checks POST /webhooks/{id}/recover through the router
// and a real dispatcher: after an outage (every attempt failed until the
// schedule gave up) and a time disabled (events skipped), a recover sends
// each of those events again, once, with its original webhook-id, signed
// with the current secret; GET follows the job to done; the deliveries show
// the job. Then what it refuses.
func TestWebhookRecover(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		f.deliveringServer(t, 10*time.Millisecond)
		r := newScriptedReceiver(t)
		r.answer(503, "down for maintenance")
		w := f.createWebhook(t, f.keys["acme"], `{"url":"`+r.srv.URL+`/in","type":"AccountSMS","enabled":true}`)
		hook := "/api/public/v1/webhooks/" + strconv.FormatInt(w.ID, 10)
		account := f.users["Alice"].AccountID
		since := time.Now().Add(-time.Second).UTC().Truncate(time.Microsecond)
		event := func() {
			t.Helper()
			must(t, f.st.AddEvents(ctx, account, []domain.Event{{Type: "AccountSMS", Payload: []byte(`{"event":"message.sent"}`)}}))
		}
		// The outage: three events, each given up after the schedule.
		for range 3 {
			event()
		}
		f.waitDeliveries(t, f.keys["acme"], w.ID, "three failed deliveries", func(l []deliveryResp) bool {
			return len(l) == 3 && l[0].State == "failed" && l[1].State == "failed" && l[2].State == "failed"
		})
		// Disabled for a while: two events skipped.
		if status, _, b := f.do(t, "POST", hook+"/disable", f.keys["acme"], ""); status != 200 {
			t.Fatalf("disable: %d %s", status, b)
		}
		event()
		event()
		before := f.waitDeliveries(t, f.keys["acme"], w.ID, "two skipped deliveries", func(l []deliveryResp) bool {
			return len(l) == 5 && l[0].State == "skipped" && l[1].State == "skipped"
		})
		// Disabled, a recover is refused: what it queued would be skipped.
		body := `{"since":"` + since.Format(time.RFC3339Nano) + `"}`
		if status, _, b := f.do(t, "POST", hook+"/recover", f.keys["acme"], body); status != 409 || decodeInto[errorEnvelope](t, b).Error.Type != "conflict" {
			t.Errorf("recover of a disabled webhook: %d %s, want 409 conflict", status, b)
		}
		if status, _, b := f.do(t, "POST", hook+"/enable", f.keys["acme"], ""); status != 200 {
			t.Fatalf("enable: %d %s", status, b)
		}
		// The secret rotated meanwhile: recovered deliveries are signed
		// with the current one.
		status, _, b := f.do(t, "POST", hook+"/secret/rotate", f.keys["acme"], "")
		if status != 200 {
			t.Fatalf("rotate: %d %s", status, b)
		}
		secret := decodeInto[struct{ Data struct{ Secret string } }](t, b).Data.Secret
		r.answer(204, "")
		seen := len(r.received())

		status, h, b := f.do(t, "POST", hook+"/recover", f.keys["acme"], body)
		rc := decodeInto[struct{ Data recoveryResp }](t, b).Data
		if status != 202 || rc.ID == 0 || rc.WebhookID != w.ID || (rc.Status != "running" && rc.Status != "done") || rc.Since != since.Format(time.RFC3339Nano) || rc.Until == "" {
			t.Fatalf("recover: %d %s", status, b)
		}
		job := hook + "/recover/" + strconv.FormatInt(rc.ID, 10)
		if loc := h.Get("Location"); loc != job {
			t.Errorf("Location %q, want %q", loc, job)
		}
		apitest.Eventually(t, "the recover job done with 5 deliveries succeeded", func() bool {
			if rc.Status == "done" && rc.Deliveries.Succeeded == 5 {
				return true
			}
			status, _, b := f.do(t, "GET", job, f.keys["acme"], "")
			if status != 200 {
				t.Fatalf("GET recover: %d %s", status, b)
			}
			rc = decodeInto[struct{ Data recoveryResp }](t, b).Data
			return false
		})
		if rc.Queued != 5 || rc.FinishedAt == "" || rc.Deliveries.Pending+rc.Deliveries.Failed+rc.Deliveries.Skipped != 0 {
			t.Errorf("done job %+v", rc)
		}
		// Each event once more, with its own webhook-id, signed with the
		// current secret (the reference library checks).
		want := map[string]bool{}
		for _, d := range before {
			want[d.EventID] = true
		}
		wh, err := standardwebhooks.NewWebhook(secret)
		must(t, err)
		got := map[string]int{}
		for i := seen; i < seen+5; i++ {
			h, body := r.request(t, i)
			got[h.Get("webhook-id")]++
			if err := wh.Verify(body, h); err != nil {
				t.Errorf("recovered delivery %s does not verify with the current secret: %v", h.Get("webhook-id"), err)
			}
		}
		if len(got) != 5 || len(r.received()) != seen+5 {
			t.Errorf("received again %v (%d requests), want each of %v once", got, len(r.received())-seen, want)
		}
		for id := range got {
			if !want[id] {
				t.Errorf("received %s, not one of the events recovered %v", id, want)
			}
		}
		after := f.deliveries(t, f.keys["acme"], w.ID)
		if len(after) != 10 {
			t.Fatalf("%d deliveries after the recover, want 10", len(after))
		}
		for _, d := range after[:5] {
			if d.RecoveryID != rc.ID || d.State != "succeeded" || !want[d.EventID] {
				t.Errorf("recovered delivery %+v, want succeeded, recoveryId %d", d, rc.ID)
			}
		}
	})
}

// TestWebhookRecoverRefusals checks what POST /webhooks/{id}/recover
// refuses, each with a message naming the field, and who may read a job.
func TestWebhookRecoverRefusals(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		w := f.createWebhook(t, f.keys["acme"], `{"url":"https://a.example.com","type":"AccountSMS","enabled":true}`)
		hook := "/api/public/v1/webhooks/" + strconv.FormatInt(w.ID, 10)
		now := time.Now().UTC()
		at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339) }
		for _, c := range []struct{ body, field string }{
			{``, "body"},
			{`{}`, "since"},
			{`{"since":null}`, "since"},
			{`{"since":"yesterday"}`, "since"},
			{`{"since":1700000000}`, "since"},
			{`{"since":"` + at(-time.Hour) + `","until":"soon"}`, "until"},
			{`{"since":"` + at(-time.Hour) + `","bogus":1}`, "bogus"},
			{`{"Since":"` + at(-time.Hour) + `"}`, "Since"},
			{`{"since":"` + at(-time.Hour) + `","until":"` + at(-2*time.Hour) + `"}`, "until"},
			{`{"since":"` + at(-time.Hour) + `","until":"` + at(-time.Hour) + `"}`, "until"},
			{`{"since":"` + at(-31*24*time.Hour) + `"}`, "since"},
			{`{"since":"` + at(time.Hour) + `"}`, "since"},
		} {
			status, _, b := f.do(t, "POST", hook+"/recover", f.keys["acme"], c.body)
			e := decodeInto[errorEnvelope](t, b).Error
			if status != 400 || e.Type != "invalid_request" || !strings.Contains(e.Message, c.field) {
				t.Errorf("recover %s: %d %s, want 400 invalid_request naming %s", c.body, status, b, c.field)
			}
		}
		body := `{"since":"` + at(-time.Hour) + `"}`
		for _, c := range []struct{ key, path string }{
			{f.keys["beta"], hook},
			{f.keys["acme"], "/api/public/v1/webhooks/99999"},
			{f.keys["acme"], "/api/public/v1/webhooks/x"},
		} {
			if status, _, b := f.do(t, "POST", c.path+"/recover", c.key, body); status != 404 || decodeInto[errorEnvelope](t, b).Error.Type != "not_found" {
				t.Errorf("recover %s: %d %s, want 404 not_found", c.path, status, b)
			}
		}
		_, readOnly := storetest.Key(t, f.st, f.users["Alice"].AccountID, auth.WebhooksRead)
		if status, _, b := f.do(t, "POST", hook+"/recover", readOnly, body); status != 403 || decodeInto[errorEnvelope](t, b).Error.Scope != "webhooks:write" {
			t.Errorf("recover with webhooks:read only: %d %s, want 403 naming webhooks:write", status, b)
		}

		// No dispatcher runs here: the job stays running, and a second one
		// is refused until it is done.
		status, h, b := f.do(t, "POST", hook+"/recover", f.keys["acme"], body)
		rc := decodeInto[struct{ Data recoveryResp }](t, b).Data
		if status != 202 || rc.Status != "running" || h.Get("Location") == "" {
			t.Fatalf("recover: %d %s", status, b)
		}
		if status, _, b := f.do(t, "POST", hook+"/recover", f.keys["acme"], body); status != 409 || !strings.Contains(decodeInto[errorEnvelope](t, b).Error.Message, "running") {
			t.Errorf("a second recover while one runs: %d %s, want 409", status, b)
		}
		if status, _, b := f.do(t, "GET", h.Get("Location"), readOnly, ""); status != 200 || decodeInto[struct{ Data recoveryResp }](t, b).Data.ID != rc.ID {
			t.Errorf("GET the job with webhooks:read: %d %s", status, b)
		}
		other := f.createWebhook(t, f.keys["acme"], `{"url":"https://b.example.com","type":"AccountSMS"}`)
		for _, c := range []struct{ key, path string }{
			{f.keys["beta"], h.Get("Location")},
			{f.keys["acme"], "/api/public/v1/webhooks/" + strconv.FormatInt(other.ID, 10) + "/recover/" + strconv.FormatInt(rc.ID, 10)},
			{f.keys["acme"], hook + "/recover/99999"},
			{f.keys["acme"], hook + "/recover/x"},
		} {
			if status, _, b := f.do(t, "GET", c.path, c.key, ""); status != 404 || decodeInto[errorEnvelope](t, b).Error.Type != "not_found" {
				t.Errorf("GET %s: %d %s, want 404 not_found", c.path, status, b)
			}
		}
	})
}
