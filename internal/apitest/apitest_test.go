package apitest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"switchboard/api"
)

// recorder is a testing.TB that records Errorf calls instead of failing, so
// the tests can assert that bad responses are detected.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.errors
	r.errors = nil
	return e
}

const validUser = `{"id":7,"username":"ada","firstName":"Ada","lastName":"Lovelace","title":"","email":"ada@example.com","mobile":"","company":"Example","timeZone":"Europe/London","extension":"201","extensions":["201"],"lines":[],"numbers":["15551234567"],"voicemails":[]}`

// fakeAPI answers with canned responses chosen by the request's "case" query
// parameter (or by its path), good and bad.
func fakeAPI(w http.ResponseWriter, r *http.Request) {
	c := r.URL.Query().Get("case")
	if c != "no-request-id" {
		w.Header().Set("X-Request-Id", "req-1")
	}
	writeJSON := func(status int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
	switch c {
	case "valid", "no-request-id":
		writeJSON(200, `{"data":[`+validUser+`]}`)
	case "missing-field":
		writeJSON(200, `{"data":[`+strings.Replace(validUser, `"timeZone":"Europe/London",`, "", 1)+`]}`)
	case "extra-field":
		writeJSON(200, `{"data":[`+strings.Replace(validUser, `"id":7,`, `"id":7,"secret":"x",`, 1)+`]}`)
	case "float-id":
		writeJSON(200, `{"data":[`+strings.Replace(validUser, `"id":7,`, `"id":7.5,`, 1)+`]}`)
	case "unknown-error-type":
		writeJSON(403, `{"error":{"type":"brand_new_type","message":"something new"}}`)
	case "undocumented-status":
		writeJSON(404, `{"error":{"type":"not_found","message":"no"}}`)
	case "401-no-challenge":
		writeJSON(401, `{"error":{"type":"unauthenticated","message":"no"}}`)
	case "401":
		w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard", error="invalid_token", scope="users:read"`)
		writeJSON(401, `{"error":{"type":"unauthenticated","message":"no"}}`)
	case "sent":
		writeJSON(201, `{"data":{"from":"15551234567","billing":{"billed":true,"currency":"USD","type":"mms","units":1,"totalPrice":0.02,"recipientCount":2,"skippedCount":1},`+
			`"messages":[{"id":1,"to":["15557654321","447700900123"],"type":"mms","status":"sent","units":1,"unitPrice":0.02,"price":0.02}],`+
			`"skipped":[{"to":"555-765-4321","reason":"duplicate"}]}}`)
	case "bad-skip-reason":
		writeJSON(200, `{"data":{"from":"15551234567","billing":{"billed":true,"currency":"USD","type":"sms","units":0,"totalPrice":0,"recipientCount":0,"skippedCount":1},`+
			`"messages":[],"skipped":[{"to":"5557654321","reason":"blocked"}]}}`)
	case "plain-404":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(404)
		io.WriteString(w, "404 page not found\n")
	case "json-404":
		writeJSON(404, `{"error":{"type":"not_found","message":"no such route"}}`)
	case "json-500":
		writeJSON(500, `{"error":{"type":"internal_error","message":"internal error"}}`)
	case "405":
		w.Header().Set("Allow", "GET")
		writeJSON(405, `{"error":{"type":"invalid_request","message":"method not allowed"}}`)
	case "405-no-allow":
		writeJSON(405, `{"error":{"type":"invalid_request","message":"method not allowed"}}`)
	case "plain-text":
		w.Header().Del("X-Request-Id")
		io.WriteString(w, "ok\n")
	default:
		http.Error(w, "fake API: unknown case "+c, http.StatusTeapot)
	}
}

func TestTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(fakeAPI))
	defer srv.Close()
	rec := &recorder{TB: t}
	client := &http.Client{Transport: Transport(rec, nil)}
	localhost := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)

	tests := []struct {
		name, method, url string
		wantFail          string // substring of the reported failure; "" means must pass
	}{
		{"valid users", "GET", srv.URL + "/api/public/v1/users?case=valid", ""},
		{"another host", "GET", localhost + "/api/public/v1/users?case=valid", ""},
		{"missing required field", "GET", srv.URL + "/api/public/v1/users?case=missing-field", `property "timeZone" is missing`},
		{"unknown field", "GET", srv.URL + "/api/public/v1/users?case=extra-field", `"secret"`},
		{"number where integer", "GET", srv.URL + "/api/public/v1/users?case=float-id", "integer"},
		{"unknown error type is open", "GET", srv.URL + "/api/public/v1/users?case=unknown-error-type", ""},
		{"undocumented status", "GET", srv.URL + "/api/public/v1/users?case=undocumented-status", "status is not supported"},
		{"401 without challenge", "GET", srv.URL + "/api/public/v1/sms/lines?case=401-no-challenge", "WWW-Authenticate"},
		{"401 with challenge", "GET", srv.URL + "/api/public/v1/sms/lines?case=401", ""},
		{"send result", "POST", srv.URL + "/api/public/v1/sms/messages?case=sent", ""},
		{"closed enum", "POST", srv.URL + "/api/public/v1/sms/messages?case=bad-skip-reason", "/data/skipped/0/reason"},
		{"missing X-Request-Id", "GET", srv.URL + "/api/public/v1/users?case=no-request-id", "X-Request-Id"},
		{"unknown route, plain text", "GET", srv.URL + "/api/public/v1/nope?case=plain-404", "Content-Type"},
		{"unknown route, JSON 404", "GET", srv.URL + "/api/public/v1/nope?case=json-404", ""},
		{"prefix itself, JSON 404", "GET", srv.URL + "/api/public/v1?case=json-404", ""},
		{"unknown route, 500", "GET", srv.URL + "/api/public/v1/nope?case=json-500", "status is not supported"},
		{"wrong method, 405", "DELETE", srv.URL + "/api/public/v1/users?case=405", ""},
		{"wrong method, 405 without Allow", "DELETE", srv.URL + "/api/public/v1/users?case=405-no-allow", "Allow"},
		{"wrong method, 404", "DELETE", srv.URL + "/api/public/v1/users?case=json-404", "status is not supported"},
		{"outside the prefix", "GET", srv.URL + "/healthz?case=plain-text", ""},
		{"lookalike prefix", "GET", srv.URL + "/api/public/v10/x?case=plain-text", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, tc.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if len(body) == 0 {
				t.Error("response body was not restored for the caller")
			}
			got := rec.take()
			switch {
			case tc.wantFail == "" && len(got) > 0:
				t.Errorf("valid response reported as invalid:\n%s", strings.Join(got, "\n"))
			case tc.wantFail != "" && len(got) == 0:
				t.Errorf("invalid response not detected (want a failure mentioning %q)", tc.wantFail)
			case tc.wantFail != "" && !strings.Contains(strings.Join(got, "\n"), tc.wantFail):
				t.Errorf("failure does not mention %q:\n%s", tc.wantFail, strings.Join(got, "\n"))
			}
			for _, msg := range got {
				// The report names the method, path and status.
				if !strings.Contains(msg, tc.method+" ") || !strings.Contains(msg, fmt.Sprintf("-> %d", resp.StatusCode)) {
					t.Errorf("report lacks method or status: %s", msg)
				}
			}
		})
	}
}

func TestBodyExcerptIsBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "r")
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(404)
		io.WriteString(w, strings.Repeat("x", 2000))
	}))
	defer srv.Close()
	rec := &recorder{TB: t}
	resp, err := (&http.Client{Transport: Transport(rec, nil)}).Get(srv.URL + "/api/public/v1/nope")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(body) != 2000 {
		t.Errorf("caller got %d body bytes, want 2000", len(body))
	}
	got := rec.take()
	if len(got) != 1 {
		t.Fatalf("got %d failures, want 1: %q", len(got), got)
	}
	if !strings.Contains(got[0], strings.Repeat("x", bodyExcerpt)) || strings.Contains(got[0], strings.Repeat("x", bodyExcerpt+1)) {
		t.Errorf("failure does not quote exactly the first %d body bytes", bodyExcerpt)
	}
}

func TestValidatorBuiltOnce(t *testing.T) {
	a := Transport(t, nil).(*transport)
	b := Client(t).Transport.(*transport)
	if a.v != b.v {
		t.Error("validator rebuilt for a second transport")
	}
}

func TestServedDocumentValidates(t *testing.T) {
	// The document endpoint itself is described: a server serving api.JSON()
	// passes.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "r")
		w.Header().Set("Content-Type", "application/json")
		b, err := apiJSON()
		if err != nil {
			t.Error(err)
		}
		w.Write(b)
	}))
	defer srv.Close()
	rec := &recorder{TB: t}
	resp, err := (&http.Client{Transport: Transport(rec, nil)}).Get(srv.URL + "/api/public/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := rec.take(); len(got) > 0 {
		t.Errorf("served document reported as invalid: %q", got)
	}
}

var apiJSON = api.JSON

// TestConcurrentUse checks that one validator serves parallel tests safely
// (run with -race).
func TestConcurrentUse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(fakeAPI))
	defer srv.Close()
	rec := &recorder{TB: t}
	client := &http.Client{Transport: Transport(rec, nil)}
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			method, url := "GET", srv.URL+"/api/public/v1/users?case=valid"
			if i%2 == 1 {
				method, url = "POST", srv.URL+"/api/public/v1/sms/messages?case=sent"
			}
			for range 20 {
				req, err := http.NewRequest(method, url, strings.NewReader(`{}`))
				if err != nil {
					t.Error(err)
					return
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	if got := rec.take(); len(got) > 0 {
		t.Errorf("valid responses reported as invalid: %q", got)
	}
}

// TestValidate checks the entry point for responses read without Transport:
// a response the document allows passes, one it does not is reported, and
// the caller can still read the body.
func TestValidate(t *testing.T) {
	req := httptest.NewRequest("GET", "/api/public/v1/nope", nil)
	for _, tt := range []struct {
		name, contentType, body string
		failures                int
	}{
		{"error envelope", "application/json", `{"error":{"type":"not_found","message":"no such route"}}`, 0},
		{"not the envelope", "text/plain", "nope", 1},
	} {
		rec := &recorder{TB: t}
		resp := &http.Response{StatusCode: 404, Header: http.Header{"Content-Type": {tt.contentType}, "X-Request-Id": {"r"}},
			Body: io.NopCloser(strings.NewReader(tt.body))}
		Validate(rec, req, resp)
		if got := rec.take(); len(got) != tt.failures {
			t.Errorf("%s: %d failures, want %d: %q", tt.name, len(got), tt.failures, got)
		}
		if b, _ := io.ReadAll(resp.Body); string(b) != tt.body {
			t.Errorf("%s: body after Validate = %q", tt.name, b)
		}
	}
}
