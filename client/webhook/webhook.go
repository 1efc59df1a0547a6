// Package webhook verifies Switchboard's webhook deliveries, which are
// signed per Standard Webhooks (https://www.standardwebhooks.com):
//
//   - webhook-id: the event's id (evt_N), the same on every retry; use it
//     to drop a delivery you already handled;
//   - webhook-timestamp: unix seconds of the attempt;
//   - webhook-signature: "v1," and base64 of HMAC-SHA256 over
//     "<webhook-id>.<webhook-timestamp>.<body>", keyed by the base64-decoded
//     part of the subscription's "whsec_" secret; one such signature per
//     secret that signs (during a rotation the previous secret signs too),
//     space-separated.
//
// A receiver verifies the exact bytes it received, before decoding them:
//
//	body, _ := io.ReadAll(r.Body)
//	if err := webhook.Verify(secret, r.Header, body, time.Now()); err != nil {
//		http.Error(w, "bad signature", http.StatusUnauthorized)
//		return
//	}
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Tolerance is how far webhook-timestamp may be from the receiver's clock,
// either way: a replay of a captured delivery is refused once it is older.
const Tolerance = 5 * time.Minute

// secretPrefix starts every Switchboard signing secret.
const secretPrefix = "whsec_"

var (
	// ErrMissingHeader: webhook-id, webhook-timestamp or webhook-signature
	// is absent or empty.
	ErrMissingHeader = errors.New("webhook: missing webhook-id, webhook-timestamp or webhook-signature")
	// ErrTimestamp: webhook-timestamp is not unix seconds, or is further
	// than Tolerance from now.
	ErrTimestamp = errors.New("webhook: timestamp outside the tolerance")
	// ErrSignature: no v1 signature in webhook-signature matches.
	ErrSignature = errors.New("webhook: no matching signature")
	// ErrSecret: the secret is not "whsec_" and base64.
	ErrSecret = errors.New("webhook: secret is not whsec_ and base64")
)

// Verify checks that body, with the delivery's headers, was signed with
// secret (the subscription's "whsec_…" secret; the prefix may be left out)
// at a time within Tolerance of now. It returns nil if one of the
// signatures matches, and an error wrapping one of the Err values
// otherwise. Signatures of other versions than v1 are ignored.
func Verify(secret string, header http.Header, body []byte, now time.Time) error {
	key, err := decodeSecret(secret)
	if err != nil {
		return err
	}
	id, ts, sigs := header.Get("Webhook-Id"), header.Get("Webhook-Timestamp"), header.Get("Webhook-Signature")
	if id == "" || ts == "" || sigs == "" {
		return ErrMissingHeader
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %q is not unix seconds", ErrTimestamp, ts)
	}
	at := time.Unix(sec, 0)
	if d := now.Sub(at); d > Tolerance || d < -Tolerance {
		return fmt.Errorf("%w: signed at %s, %s from now", ErrTimestamp, at.UTC().Format(time.RFC3339), d.Round(time.Second))
	}
	want := mac(key, id, ts, body)
	for _, s := range strings.Fields(sigs) {
		version, sig, ok := strings.Cut(s, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err != nil {
			continue
		}
		// hmac.Equal takes the same time wherever the bytes differ.
		if hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrSignature
}

// Sign returns the webhook-signature value Switchboard would send for body
// as the delivery id at ts: for testing a receiver.
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := decodeSecret(secret)
	if err != nil {
		return "", err
	}
	return "v1," + base64.StdEncoding.EncodeToString(mac(key, id, strconv.FormatInt(ts.Unix(), 10), body)), nil
}

func decodeSecret(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	if err != nil || len(key) == 0 {
		return nil, ErrSecret
	}
	return key, nil
}

func mac(key []byte, id, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}
