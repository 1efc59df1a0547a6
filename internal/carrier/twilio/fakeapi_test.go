package twilio

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
)

const (
	testAccountSID = "AC0123456789abcdef0123456789abcdef"
	testAuthToken  = "f00dfeedcafe0123456789abcdef0123"
	testServiceSID = "MG89abcdef0123456789abcdef01234567"
	testSID        = "SM1234567890abcdef1234567890abcdef"
	messagesPath   = "/2010-04-01/Accounts/" + testAccountSID + "/Messages.json"
)

// fakeAPI is a stand-in for api.twilio.com: it records every request,
// answers a wrong path with 404 and wrong credentials with 401 as Twilio
// does, and anything else with the test's handler.
type fakeAPI struct {
	srv *httptest.Server

	mu     sync.Mutex
	got    []apiRequest
	answer http.HandlerFunc
}

// apiRequest is what the fake saw of one request.
type apiRequest struct {
	Method, Path   string
	User, Password string
	ContentType    string
	Form           url.Values // the body parsed as a form; nil if it was not one
}

func newFakeAPI(t *testing.T) *fakeAPI {
	t.Helper()
	f := &fakeAPI{answer: answerCreated}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	form, err := url.ParseQuery(string(raw))
	if err != nil {
		form = nil
	}
	user, password, _ := r.BasicAuth()
	f.mu.Lock()
	f.got = append(f.got, apiRequest{
		Method: r.Method, Path: r.URL.Path,
		User: user, Password: password,
		ContentType: r.Header.Get("Content-Type"),
		Form:        form,
	})
	answer := f.answer
	f.mu.Unlock()
	switch {
	case r.Method != http.MethodPost || r.URL.Path != messagesPath:
		answerJSON(404, twilioError(20404, "The requested resource "+r.URL.Path+" was not found", 404))(w, r)
	case user != testAccountSID || password != testAuthToken:
		answerJSON(401, twilioError(20003, "Authenticate", 401))(w, r)
	default:
		r.Form = form // for an answer that depends on it
		answer(w, r)
	}
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

// answerCreated answers as Twilio does when it takes a message: 201 and
// the new Message resource.
func answerCreated(w http.ResponseWriter, r *http.Request) {
	status := "queued"
	var service any
	if s := r.Form.Get("MessagingServiceSid"); s != "" {
		status, service = "accepted", s
	}
	body, _ := json.Marshal(map[string]any{
		"account_sid": testAccountSID, "api_version": "2010-04-01",
		"body": r.Form.Get("Body"), "direction": "outbound-api",
		"date_created": "Thu, 24 Aug 2023 05:01:45 +0000", "date_sent": nil, "date_updated": "Thu, 24 Aug 2023 05:01:45 +0000",
		"error_code": nil, "error_message": nil,
		"from": r.Form.Get("From"), "to": r.Form.Get("To"), "messaging_service_sid": service,
		"num_media": fmt.Sprint(len(r.Form["MediaUrl"])), "num_segments": "1",
		"price": nil, "price_unit": "USD", "sid": testSID, "status": status,
		"subresource_uris": map[string]string{"media": "/2010-04-01/Accounts/" + testAccountSID + "/Messages/" + testSID + "/Media.json"},
		"uri":              "/2010-04-01/Accounts/" + testAccountSID + "/Messages/" + testSID + ".json",
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	w.Write(body)
}

// answerJSON answers with a status and a JSON body.
func answerJSON(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// twilioError is an answer body in Twilio's error form.
func twilioError(code int, message string, status int) string {
	b, _ := json.Marshal(map[string]any{
		"code": code, "message": message, "status": status,
		"more_info": fmt.Sprintf("https://www.twilio.com/docs/errors/%d", code),
	})
	return string(b)
}

// checkRequest holds one request to what Twilio documents for creating a
// message: POST …/Accounts/{AccountSid}/Messages.json with basic auth and
// a form body of exactly want.
func checkRequest(t *testing.T, got apiRequest, want url.Values) {
	t.Helper()
	if got.Method != http.MethodPost || got.Path != messagesPath {
		t.Errorf("request %s %s, want POST %s", got.Method, got.Path, messagesPath)
	}
	if got.User != testAccountSID || got.Password != testAuthToken {
		t.Errorf("basic auth %q:%q, want the account SID and auth token", got.User, got.Password)
	}
	if !strings.HasPrefix(got.ContentType, "application/x-www-form-urlencoded") {
		t.Errorf("Content-Type %q, want application/x-www-form-urlencoded", got.ContentType)
	}
	if !reflect.DeepEqual(got.Form, want) {
		t.Errorf("form\n got %v\nwant %v", got.Form, want)
	}
}
