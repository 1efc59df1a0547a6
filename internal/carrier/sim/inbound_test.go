package sim

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestInboundDoor: the door hands a well-formed text with the right secret
// to the sink, numbers normalized, and refuses everything else before the
// sink sees it.
func TestInboundDoor(t *testing.T) {
	const secret = "sim-door-secret-0123456789"
	s := New(Config{})
	defer s.Close()
	sink := newFakeSink()
	s.Attach(sink)
	door := http.StripPrefix("/carrier/sim", s.Handler(secret))
	post := func(method, auth string, form url.Values) int {
		req := httptest.NewRequest(method, "/carrier/sim/inbound", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		door.ServeHTTP(w, req)
		return w.Code
	}
	good := url.Values{"from": {"+1 (212) 555-0100"}, "to": {"+1 415 555 0100"}, "text": {"Running late 😀"}}
	if code := post(http.MethodPost, "Bearer "+secret, good); code != http.StatusNoContent {
		t.Fatalf("a good text: %d, want 204", code)
	}
	if in := recv(t, sink.inbound, "the text"); in.From != "12125550100" || in.To != "14155550100" || in.Text != "Running late 😀" || in.At.IsZero() {
		t.Errorf("the sink got %+v", in)
	}
	for _, c := range []struct {
		name, method, auth string
		form               url.Values
		want               int
	}{
		{"no secret", http.MethodPost, "", good, http.StatusUnauthorized},
		{"a wrong secret", http.MethodPost, "Bearer " + secret + "x", good, http.StatusUnauthorized},
		{"the secret as Basic", http.MethodPost, "Basic " + secret, good, http.StatusUnauthorized},
		{"a GET", http.MethodGet, "Bearer " + secret, good, http.StatusMethodNotAllowed},
		{"a bad number", http.MethodPost, "Bearer " + secret, url.Values{"from": {"pizza"}, "to": {"14155550100"}, "text": {"hi"}}, http.StatusBadRequest},
		{"no text", http.MethodPost, "Bearer " + secret, url.Values{"from": {"12125550100"}, "to": {"14155550100"}}, http.StatusBadRequest},
	} {
		if code := post(c.method, c.auth, c.form); code != c.want {
			t.Errorf("%s: %d, want %d", c.name, code, c.want)
		}
	}
	sink.inboundErr = errors.New("database down")
	if code := post(http.MethodPost, "Bearer "+secret, good); code != http.StatusInternalServerError {
		t.Errorf("the sink failing: %d, want 500", code)
	}
	if len(sink.inbound) != 0 {
		t.Errorf("%d refused texts reached the sink", len(sink.inbound))
	}
}
