package webhooks_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/switchboard-server/switchboard/client/webhook"
	"switchboard/internal/webhooks"
)

// The Go client's verifier (a module of its own, which cannot import the
// server) accepts what the server's signing code signs, and both agree
// with the Standard Webhooks reference library in both directions.
func TestClientVerifierAgrees(t *testing.T) {
	secret, old := webhooks.NewSecret(), webhooks.NewSecret()
	ref, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"id":"evt_42","type":"AccountSMS","timestamp":"2026-09-21T13:33:20Z","data":{"event":"message.sent"}}`)
	now := time.Now()
	ours, err := webhooks.Sign(secret, "evt_42", now, body)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := ref.Sign("evt_42", now, body)
	if err != nil || theirs != ours {
		t.Fatalf("the server signs %q, the library %q (%v)", ours, theirs, err)
	}
	if clients, err := webhook.Sign(secret, "evt_42", now, body); err != nil || clients != ours {
		t.Fatalf("the client signs %q (%v), the server %q", clients, err, ours)
	}
	rotated, err := webhooks.Sign(old, "evt_42", now, body)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set("Webhook-Id", "evt_42")
	h.Set("Webhook-Timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("Webhook-Signature", rotated+" "+ours) // a rotation: the previous secret signs first
	if err := ref.Verify(body, h); err != nil {
		t.Errorf("the library refuses what the server signs: %v", err)
	}
	for _, s := range []string{secret, old} {
		if err := webhook.Verify(s, h, body, now); err != nil {
			t.Errorf("the client refuses what the server signs: %v", err)
		}
	}
	if err := webhook.Verify(webhooks.NewSecret(), h, body, now); err == nil {
		t.Error("the client accepts another secret's signatures")
	}
}
