package telnyx

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// now is the receiver's clock in these tests.
var now = time.Unix(1_750_000_000, 0)

const webhookBody = `{"data":{"event_type":"message.finalized","id":"e-1","occurred_at":"2025-06-15T15:06:40.000+00:00","payload":{"id":"m-1","to":[{"phone_number":"+15557654321","status":"delivered"}]}},"meta":{"attempt":1}}`

func newKey(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

// sign signs body as Telnyx does, returning the two header values.
func sign(priv ed25519.PrivateKey, body string, at time.Time) (signature, timestamp string) {
	timestamp = strconv.FormatInt(at.Unix(), 10)
	sig := ed25519.Sign(priv, []byte(timestamp+"|"+body))
	return base64.StdEncoding.EncodeToString(sig), timestamp
}

func TestVerify(t *testing.T) {
	t.Parallel()
	pub, priv := newKey(t)
	otherPub, otherPriv := newKey(t)
	sig, ts := sign(priv, webhookBody, now)
	otherSig, _ := sign(otherPriv, webhookBody, now)
	raw, _ := base64.StdEncoding.DecodeString(sig)
	flipped := append([]byte(nil), raw...)
	flipped[10] ^= 1
	staleSig, staleTS := sign(priv, webhookBody, now.Add(-Tolerance-time.Second))
	futureSig, futureTS := sign(priv, webhookBody, now.Add(Tolerance+time.Second))
	edgeSig, edgeTS := sign(priv, webhookBody, now.Add(-Tolerance))
	edgeFutureSig, edgeFutureTS := sign(priv, webhookBody, now.Add(Tolerance))

	tests := []struct {
		name      string
		pub       ed25519.PublicKey
		body      string
		signature string
		timestamp string
		want      error
	}{
		{name: "good", pub: pub, body: webhookBody, signature: sig, timestamp: ts},
		{name: "five minutes old", pub: pub, body: webhookBody, signature: edgeSig, timestamp: edgeTS},
		{name: "five minutes ahead", pub: pub, body: webhookBody, signature: edgeFutureSig, timestamp: edgeFutureTS},
		{name: "stale", pub: pub, body: webhookBody, signature: staleSig, timestamp: staleTS, want: ErrStale},
		{name: "from the future", pub: pub, body: webhookBody, signature: futureSig, timestamp: futureTS, want: ErrStale},
		{name: "body tampered", pub: pub, body: strings.Replace(webhookBody, "delivered", "delivery_failed", 1), signature: sig, timestamp: ts, want: ErrSignature},
		{name: "body with a space added", pub: pub, body: webhookBody + " ", signature: sig, timestamp: ts, want: ErrSignature},
		{name: "timestamp changed", pub: pub, body: webhookBody, signature: sig, timestamp: strconv.FormatInt(now.Unix()+1, 10), want: ErrSignature},
		{name: "stale timestamp, signature of a fresh one", pub: pub, body: webhookBody, signature: sig, timestamp: staleTS, want: ErrSignature},
		{name: "signed by another key", pub: pub, body: webhookBody, signature: otherSig, timestamp: ts, want: ErrSignature},
		{name: "checked with another key", pub: otherPub, body: webhookBody, signature: sig, timestamp: ts, want: ErrSignature},
		{name: "one bit flipped", pub: pub, body: webhookBody, signature: base64.StdEncoding.EncodeToString(flipped), timestamp: ts, want: ErrSignature},
		{name: "signature truncated", pub: pub, body: webhookBody, signature: base64.StdEncoding.EncodeToString(raw[:63]), timestamp: ts, want: ErrSignature},
		{name: "signature not base64", pub: pub, body: webhookBody, signature: "not base64!", timestamp: ts, want: ErrSignature},
		{name: "signature unpadded", pub: pub, body: webhookBody, signature: strings.TrimRight(sig, "="), timestamp: ts, want: ErrSignature},
		{name: "signature missing", pub: pub, body: webhookBody, timestamp: ts, want: ErrSignature},
		{name: "timestamp missing", pub: pub, body: webhookBody, signature: sig, want: ErrSignature},
		{name: "timestamp with a sign", pub: pub, body: webhookBody, signature: sig, timestamp: "+" + ts, want: ErrSignature},
		{name: "timestamp in milliseconds", pub: pub, body: webhookBody, signature: sig, timestamp: ts + "000", want: ErrSignature},
		{name: "timestamp not a number", pub: pub, body: webhookBody, signature: sig, timestamp: "yesterday", want: ErrSignature},
		{name: "timestamp overflowing", pub: pub, body: webhookBody, signature: sig, timestamp: strings.Repeat("9", 30), want: ErrSignature},
		{name: "no public key", body: webhookBody, signature: sig, timestamp: ts, want: ErrSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Verify(tt.pub, []byte(tt.body), tt.signature, tt.timestamp, now)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Verify: %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify: %v, want %v", err, tt.want)
			}
			if other := map[error]error{ErrSignature: ErrStale, ErrStale: ErrSignature}[tt.want]; errors.Is(err, other) {
				t.Errorf("Verify: %v matches %v too", err, other)
			}
		})
	}
}

func TestVerifyRequest(t *testing.T) {
	t.Parallel()
	pub, priv := newKey(t)
	c := newTestClient(t, Config{PublicKey: pub})
	noKey := newTestClient(t, Config{})

	request := func(body, signature, timestamp string) *http.Request {
		r := httptest.NewRequest("POST", "/carrier/telnyx/webhook", strings.NewReader(body))
		if signature != "" {
			r.Header.Set("telnyx-signature-ed25519", signature)
		}
		if timestamp != "" {
			r.Header.Set("telnyx-timestamp", timestamp)
		}
		return r
	}
	sig, ts := sign(priv, webhookBody, now)
	big := `{"data":{"event_type":"x","pad":"` + strings.Repeat("a", MaxWebhookBytes) + `"}}`
	bigSig, bigTS := sign(priv, big, now)
	limit := `{"pad":"` + strings.Repeat("a", MaxWebhookBytes-10) + `"}`
	limitSig, limitTS := sign(priv, limit, now)
	staleSig, staleTS := sign(priv, webhookBody, now.Add(-time.Hour))

	tests := []struct {
		name   string
		client *Client
		req    *http.Request
		body   string // wanted back on success
		want   error
	}{
		{name: "good", client: c, req: request(webhookBody, sig, ts), body: webhookBody},
		{name: "exactly the limit", client: c, req: request(limit, limitSig, limitTS), body: limit},
		{name: "over the limit", client: c, req: request(big, bigSig, bigTS), want: ErrTooLarge},
		{name: "unsigned", client: c, req: request(webhookBody, "", ""), want: ErrSignature},
		{name: "stale", client: c, req: request(webhookBody, staleSig, staleTS), want: ErrStale},
		{name: "no public key configured", client: noKey, req: request(webhookBody, sig, ts), want: ErrSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body, err := tt.client.VerifyRequest(tt.req, now)
			if tt.want != nil {
				if !errors.Is(err, tt.want) || body != nil {
					t.Fatalf("VerifyRequest = %d bytes, %v; want nil, %v", len(body), err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("VerifyRequest: %v", err)
			}
			if !bytes.Equal(body, []byte(tt.body)) {
				t.Errorf("body %.60q…, want %.60q…", body, tt.body)
			}
		})
	}
}

func TestParsePublicKey(t *testing.T) {
	t.Parallel()
	pub, _ := newKey(t)
	good := base64.StdEncoding.EncodeToString(pub)
	tests := []struct {
		name, in, wantErr string
	}{
		{name: "as the portal shows it", in: good},
		{name: "with a newline pasted", in: " " + good + "\n"},
		{name: "empty", in: "  ", wantErr: "empty"},
		{name: "not base64", in: "not a key!", wantErr: "not standard base64"},
		{name: "URL-safe base64", in: base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)), wantErr: "not standard base64"},
		{name: "31 bytes", in: base64.StdEncoding.EncodeToString(pub[:31]), wantErr: "decodes to 31 bytes"},
		{name: "PEM", in: "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----", wantErr: "PEM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePublicKey(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParsePublicKey: %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !pub.Equal(got) {
				t.Errorf("key %x, want %x", got, pub)
			}
		})
	}
}
