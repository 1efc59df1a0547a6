package webhook_test

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/switchboard-server/switchboard/client/webhook"
)

// Secrets as the server makes them ("whsec_" and base64 of 24 random
// bytes). That the server's own signing code and the Standard Webhooks
// reference library agree with Verify is tested in the server's module
// (internal/webhooks/clientverify_test.go): this module depends on neither.
const (
	secret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
	old    = "whsec_8wYB4hUbHM9ueuAAx1ABxCl5qiKJSmzi"
	other  = "whsec_nGjj3vNs6qO7j0PbodMkHrqVbhp4C0L3"
)

// signed returns the headers of a delivery of body, one signature per
// secret, space-separated, as a rotation sends them.
func signed(t *testing.T, id string, at time.Time, body []byte, secrets ...string) http.Header {
	t.Helper()
	h := http.Header{}
	h.Set("Webhook-Id", id)
	h.Set("Webhook-Timestamp", strconv.FormatInt(at.Unix(), 10))
	sigs := ""
	for i, s := range secrets {
		sig, err := webhook.Sign(s, id, at, body)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			sigs += " "
		}
		sigs += sig
	}
	h.Set("Webhook-Signature", sigs)
	return h
}

func TestVerify(t *testing.T) {
	at := time.Unix(1790000000, 0)
	body := []byte(`{"id":"evt_42","type":"AccountSMS","timestamp":"2026-09-21T13:33:20Z","data":{"event":"message.sent"}}`)
	h := signed(t, "evt_42", at, body, secret)

	if err := webhook.Verify(secret, h, body, at.Add(30*time.Second)); err != nil {
		t.Errorf("a delivery as sent: %v", err)
	}
	// The secret without its prefix works too.
	if err := webhook.Verify(secret[len("whsec_"):], h, body, at); err != nil {
		t.Errorf("the secret without whsec_: %v", err)
	}
	// Within a rotation, either secret verifies, whichever signature comes
	// first.
	rot := signed(t, "evt_42", at, body, secret, old)
	for _, s := range []string{secret, old} {
		if err := webhook.Verify(s, rot, body, at); err != nil {
			t.Errorf("a rotation's delivery with one of its secrets: %v", err)
		}
	}

	for _, tc := range []struct {
		name   string
		secret string
		header func() http.Header
		body   []byte
		now    time.Time
		want   error
	}{
		{"a byte of the body changed", secret, func() http.Header { return h }, append([]byte(`{"id":"evt_43"`), body[len(`{"id":"evt_42"`):]...), at, webhook.ErrSignature},
		{"another secret", other, func() http.Header { return h }, body, at, webhook.ErrSignature},
		{"another id", secret, func() http.Header { c := h.Clone(); c.Set("Webhook-Id", "evt_43"); return c }, body, at, webhook.ErrSignature},
		{"another timestamp within tolerance", secret, func() http.Header {
			c := h.Clone()
			c.Set("Webhook-Timestamp", strconv.FormatInt(at.Unix()+1, 10))
			return c
		}, body, at, webhook.ErrSignature},
		{"too old", secret, func() http.Header { return h }, body, at.Add(webhook.Tolerance + time.Second), webhook.ErrTimestamp},
		{"too new", secret, func() http.Header { return h }, body, at.Add(-webhook.Tolerance - time.Second), webhook.ErrTimestamp},
		{"timestamp not seconds", secret, func() http.Header { c := h.Clone(); c.Set("Webhook-Timestamp", "soon"); return c }, body, at, webhook.ErrTimestamp},
		{"no signature header", secret, func() http.Header { c := h.Clone(); c.Del("Webhook-Signature"); return c }, body, at, webhook.ErrMissingHeader},
		{"no id header", secret, func() http.Header { c := h.Clone(); c.Del("Webhook-Id"); return c }, body, at, webhook.ErrMissingHeader},
		{"only another version's signature", secret, func() http.Header {
			c := h.Clone()
			c.Set("Webhook-Signature", "v1a,"+h.Get("Webhook-Signature")[3:])
			return c
		}, body, at, webhook.ErrSignature},
		{"a signature that is not base64", secret, func() http.Header { c := h.Clone(); c.Set("Webhook-Signature", "v1,!!!"); return c }, body, at, webhook.ErrSignature},
		{"a secret that is not base64", "whsec_!!!", func() http.Header { return h }, body, at, webhook.ErrSecret},
	} {
		if err := webhook.Verify(tc.secret, tc.header(), tc.body, tc.now); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// Unknown and broken entries beside a good one do not hide it.
	mixed := h.Clone()
	mixed.Set("Webhook-Signature", "v2,abc v1,!!! "+h.Get("Webhook-Signature"))
	if err := webhook.Verify(secret, mixed, body, at); err != nil {
		t.Errorf("a good signature after others: %v", err)
	}
}

// The signature of the Standard Webhooks specification's example (its
// reference libraries test the same vector).
func TestKnownSignature(t *testing.T) {
	const (
		key  = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		id   = "msg_p5jXN8AQM9LWM0D4loKWxJek"
		sig  = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
		body = `{"test": 2432232314}`
	)
	at := time.Unix(1614265330, 0)
	if got, err := webhook.Sign(key, id, at, []byte(body)); err != nil || got != sig {
		t.Errorf("Sign: %q %v, want %q", got, err, sig)
	}
	h := http.Header{}
	h.Set("Webhook-Id", id)
	h.Set("Webhook-Timestamp", "1614265330")
	h.Set("Webhook-Signature", sig)
	if err := webhook.Verify(key, h, []byte(body), at); err != nil {
		t.Errorf("Verify: %v", err)
	}
}
