package telnyx

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers Telnyx signs each webhook with.
const (
	SignatureHeader = "Telnyx-Signature-Ed25519" // base64 Ed25519 signature of timestamp + "|" + body
	TimestampHeader = "Telnyx-Timestamp"         // unix seconds when the webhook was sent
)

// Tolerance is how far a webhook's timestamp may lie from now, either way.
const Tolerance = 5 * time.Minute

// MaxWebhookBytes bounds the body VerifyRequest reads.
const MaxWebhookBytes = 256 << 10

// ErrSignature reports a webhook whose signature is missing, malformed or
// wrong (or that could not be checked for want of a public key).
var ErrSignature = errors.New("telnyx: webhook signature invalid")

// ErrStale reports a correctly signed webhook whose timestamp lies more
// than Tolerance from now: a replay, or a clock far off.
var ErrStale = errors.New("telnyx: webhook timestamp outside tolerance")

// ErrTooLarge reports a webhook body over MaxWebhookBytes.
var ErrTooLarge = errors.New("telnyx: webhook body too large")

// ParsePublicKey reads the webhook public key as Telnyx's portal shows it:
// the standard base64 of the 32-byte Ed25519 key.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("telnyx: the public key is empty")
	}
	if strings.HasPrefix(s, "-----BEGIN") {
		return nil, errors.New("telnyx: the public key is PEM; give the base64 key the Telnyx portal shows (Keys & Credentials, Public Key)")
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, errors.New("telnyx: the public key is not standard base64; give the key the Telnyx portal shows (Keys & Credentials, Public Key)")
	}
	if len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("telnyx: the public key decodes to %d bytes; an Ed25519 key is %d", len(b), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

// Verify checks a webhook: signature and timestamp are the values of the
// SignatureHeader and TimestampHeader headers, body the request body as
// received, byte for byte. It returns nil, or an error wrapping
// ErrSignature (checked first) or ErrStale. now is the receiver's clock.
func Verify(pub ed25519.PublicKey, body []byte, signature, timestamp string, now time.Time) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: no public key to check it with", ErrSignature)
	}
	if signature == "" {
		return fmt.Errorf("%w: no %s header", ErrSignature, SignatureHeader)
	}
	if timestamp == "" {
		return fmt.Errorf("%w: no %s header", ErrSignature, TimestampHeader)
	}
	sent, ok := parseUnix(timestamp)
	if !ok {
		return fmt.Errorf("%w: timestamp %q is not unix seconds", ErrSignature, clip(timestamp, 40))
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return fmt.Errorf("%w: the signature is not the base64 of %d bytes", ErrSignature, ed25519.SignatureSize)
	}
	signed := make([]byte, 0, len(timestamp)+1+len(body))
	signed = append(append(append(signed, timestamp...), '|'), body...)
	if !ed25519.Verify(pub, signed, sig) {
		return fmt.Errorf("%w: the signature does not match", ErrSignature)
	}
	// Whole seconds on both sides, as Telnyx stamps them.
	skew := now.Unix() - sent
	if skew > int64(Tolerance/time.Second) || skew < -int64(Tolerance/time.Second) {
		return fmt.Errorf("%w: signed at %d, %d s from now", ErrStale, sent, -skew)
	}
	return nil
}

// parseUnix reads decimal unix seconds: digits only, no sign or spaces.
func parseUnix(s string) (int64, bool) {
	if len(s) > 18 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// VerifyRequest reads r's body (at most MaxWebhookBytes) and checks it with
// Verify against the client's public key. It returns the body only when
// the webhook is genuine; on any error the handler should answer 403 (or
// 413 for ErrTooLarge) and change nothing.
func (c *Client) VerifyRequest(r *http.Request, now time.Time) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxWebhookBytes+1))
	if err != nil {
		return nil, fmt.Errorf("telnyx: read webhook: %w", err)
	}
	if len(body) > MaxWebhookBytes {
		return nil, fmt.Errorf("%w: over %d bytes", ErrTooLarge, MaxWebhookBytes)
	}
	if err := Verify(c.publicKey, body, r.Header.Get(SignatureHeader), r.Header.Get(TimestampHeader), now); err != nil {
		return nil, err
	}
	return body, nil
}
