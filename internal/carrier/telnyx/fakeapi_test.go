package telnyx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
)

const testAPIKey = "KEY0199AAF1B2C3D4E5F6_test"

// fakeAPI is a stand-in for api.telnyx.com: it records every request to
// POST /v2/messages and answers with the test's handler.
type fakeAPI struct {
	srv *httptest.Server

	mu     sync.Mutex
	got    []apiRequest
	answer http.HandlerFunc
}

// apiRequest is what the fake saw of one request.
type apiRequest struct {
	Method, Path  string
	Authorization string
	ContentType   string
	Body          map[string]any // the JSON body decoded; nil if it was not JSON
}

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	f := &fakeAPI{answer: answerJSON(http.StatusOK, `{"data":{"record_type":"message","id":"40385f64-aaaa-bbbb-cccc-2c963f66afa6","to":[{"phone_number":"+15557654321","status":"queued"}]}}`)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if json.Unmarshal(raw, &body) != nil {
		body = nil
	}
	f.mu.Lock()
	f.got = append(f.got, apiRequest{
		Method: r.Method, Path: r.URL.Path,
		Authorization: r.Header.Get("Authorization"),
		ContentType:   r.Header.Get("Content-Type"),
		Body:          body,
	})
	answer := f.answer
	f.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(raw)) // for an answer that depends on it
	answer(w, r)
}

func (f *fakeAPI) setAnswer(h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answer = h
}

func (f *fakeAPI) requests() []apiRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]apiRequest(nil), f.got...)
}

// answerJSON answers as Telnyx does: a status and a JSON body.
func answerJSON(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// telnyxErrors is an answer body in Telnyx's error form.
func telnyxErrors(code, title, detail string) string {
	b, _ := json.Marshal(map[string]any{"errors": []map[string]any{{
		"code": code, "title": title, "detail": detail,
		"source": map[string]string{"pointer": "/to"},
		"meta":   map[string]string{"url": "https://developers.telnyx.com/docs/overview/errors/" + code},
	}}})
	return string(b)
}

// checkRequest holds one request to what Telnyx documents for sending a
// message: POST /v2/messages, a bearer key, a JSON body of exactly want.
func checkRequest(t *testing.T, got apiRequest, apiKey string, want map[string]any) {
	t.Helper()
	if got.Method != http.MethodPost || got.Path != "/v2/messages" {
		t.Errorf("request %s %s, want POST /v2/messages", got.Method, got.Path)
	}
	if got.Authorization != "Bearer "+apiKey {
		t.Errorf("Authorization %q, want %q", got.Authorization, "Bearer "+apiKey)
	}
	if got.ContentType != "application/json" {
		t.Errorf("Content-Type %q, want application/json", got.ContentType)
	}
	if !reflect.DeepEqual(got.Body, want) {
		t.Errorf("body\n got %s\nwant %s", jsonString(got.Body), jsonString(want))
	}
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
