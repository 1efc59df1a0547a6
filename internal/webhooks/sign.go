package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"switchboard/internal/domain"
)

// Sign returns the Standard Webhooks signature of one delivery: "v1," and
// base64 of HMAC-SHA256, keyed by the secret's decoded bytes, over
// "msgID.timestamp.body".
func Sign(secret, msgID string, ts time.Time, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil {
		return "", fmt.Errorf("webhooks: secret is not base64: %w", err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID))
	mac.Write([]byte{'.'})
	mac.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// signatures is the webhook-signature header: one signature per secret,
// space-separated, the current secret first.
func signatures(secrets []string, msgID string, ts time.Time, body []byte) (string, error) {
	out := make([]string, 0, len(secrets))
	for _, s := range secrets {
		sig, err := Sign(s, msgID, ts, body)
		if err != nil {
			return "", err
		}
		out = append(out, sig)
	}
	return strings.Join(out, " "), nil
}

// signingSecrets are the secrets that sign a delivery of w made at now: the
// current one first, then each previous one still within its overlap, newest
// first.
func signingSecrets(w domain.Webhook, now time.Time) []string {
	out := []string{w.Secret}
	for _, p := range w.Previous {
		if p.Secret != "" && now.Before(p.Until) {
			out = append(out, p.Secret)
		}
	}
	return out
}

// payload is the body of every delivery (Standard Webhooks' shape).
type payload struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Timestamp string          `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// Body builds a delivery's body. It depends only on the event, so every
// attempt of one event sends the same bytes.
func Body(msgID, typ string, at time.Time, data json.RawMessage) ([]byte, error) {
	return json.Marshal(payload{ID: msgID, Type: typ, Timestamp: at.UTC().Format(time.RFC3339), Data: data})
}
