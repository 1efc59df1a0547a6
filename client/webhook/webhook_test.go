package webhook_test

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"switchboard/client/webhook"
	serverhooks "switchboard/internal/webhooks"
)

// signed returns the headers the server sends with body: the signature
// is made by the server's own signing code (internal/webhooks.Sign), one
// per secret, space-separated, as a rotation sends them.
func signed(t *testing.T, id string, at time.Time, body []byte, secrets ...string) http.Header {
	t.Helper()
	h := http.Header{}
	h.Set("Webhook-Id", id)
	h.Set("Webhook-Timestamp", strconv.FormatInt(at.Unix(), 10))
	sigs := ""
	for i, s := range secrets {
		sig, err := serverhooks.Sign(s, id, at, body)
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
	secret, old, other := serverhooks.NewSecret(), serverhooks.NewSecret(), serverhooks.NewSecret()
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

// Sign and Verify agree with the Standard Webhooks reference library in
// both directions.
func TestAgreesWithReferenceLibrary(t *testing.T) {
	secret := serverhooks.NewSecret()
	ref, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"hello":"world"}`)
	now := time.Now()
	refSig, err := ref.Sign("msg_1", now, body)
	if err != nil {
		t.Fatal(err)
	}
	ourSig, err := webhook.Sign(secret, "msg_1", now, body)
	if err != nil || ourSig != refSig {
		t.Fatalf("Sign: %q %v, the library signs %q", ourSig, err, refSig)
	}
	h := signed(t, "msg_1", now, body, secret)
	if err := ref.Verify(body, h); err != nil {
		t.Errorf("the library refuses what the server signs: %v", err)
	}
	if err := webhook.Verify(secret, h, body, now); err != nil {
		t.Errorf("Verify refuses what the library accepts: %v", err)
	}
}
