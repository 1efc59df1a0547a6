package twilio

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// SignatureHeader carries the signature of every webhook Twilio sends.
const SignatureHeader = "X-Twilio-Signature"

// settingsHeader is present when a Webhooks Rule has Twilio sign with a
// SharedKey (and perhaps HMAC-SHA256) instead of the auth token.
const settingsHeader = "X-Twilio-Webhooks-Signature-Settings"

// MaxWebhookBytes bounds the body VerifyRequest reads.
const MaxWebhookBytes = 64 << 10

// ErrSignature reports a webhook whose signature is missing or wrong, or
// that cannot be checked (not a form POST, or signed with a SharedKey).
var ErrSignature = errors.New("twilio: webhook signature invalid")

// ErrTooLarge reports a webhook body over MaxWebhookBytes.
var ErrTooLarge = errors.New("twilio: webhook body too large")

// Signature is the X-Twilio-Signature Twilio sends with a webhook to
// fullURL (scheme to query string, exactly as Twilio was given it) whose
// form body is params: the base64 HMAC-SHA1, keyed with the auth token, of
// fullURL followed by each parameter's name and value, without
// separators. Names are sorted; a name given several values appears once
// for each distinct value, the values sorted too. Sorting compares UTF-16
// code units, as Twilio's libraries for Java and Node do; it differs from
// byte order only between characters U+E000–U+FFFF and those above U+FFFF.
func Signature(authToken, fullURL string, params url.Values) string {
	mac := hmac.New(sha1.New, []byte(authToken))
	io.WriteString(mac, fullURL)
	names := make([]string, 0, len(params))
	for name := range params {
		names = append(names, name)
	}
	for _, name := range sortedUnique(names) {
		for _, v := range sortedUnique(params[name]) {
			io.WriteString(mac, name)
			io.WriteString(mac, v)
		}
	}
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// sortedUnique returns the distinct strings of ss in UTF-16 order.
func sortedUnique(ss []string) []string {
	s := slices.Clone(ss)
	slices.SortFunc(s, compareUTF16)
	return slices.Compact(s)
}

// compareUTF16 orders strings as sequences of UTF-16 code units.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ka, na := utf16Key(a)
		kb, nb := utf16Key(b)
		if ka != kb {
			return cmp.Compare(ka, kb)
		}
		a, b = a[na:], b[nb:]
	}
	return cmp.Compare(len(a), len(b))
}

// utf16Key returns the UTF-16 code units of the character s starts with,
// the first in the high half (the second, if any, in the low), and the
// character's length in bytes. A byte that is not UTF-8 counts as the
// lone surrogate 0xDC00+byte, so that distinct strings never tie.
func utf16Key(s string) (uint32, int) {
	r, n := utf8.DecodeRuneInString(s)
	switch {
	case r == utf8.RuneError && n == 1:
		return (0xDC00 + uint32(s[0])) << 16, 1
	case r < 0x10000:
		return uint32(r) << 16, n
	}
	r -= 0x10000
	return (0xD800+uint32(r>>10))<<16 | (0xDC00 + uint32(r&0x3FF)), n
}

// VerifyRequest reads r's form body (at most MaxWebhookBytes) and checks
// its X-Twilio-Signature against publicURL: the URL Twilio was given for
// this webhook, with its query string, as seen from outside (behind a
// proxy it is not r.URL). As Twilio's own libraries do, the signature
// may be over publicURL with or without its port: one written out is
// also tried without, a missing one as :443 (https) or :80.
//
// It returns the form only when the webhook is genuine. On an error
// wrapping ErrSignature (or ErrTooLarge) the handler should answer 403
// (413) and change nothing.
func (c *Client) VerifyRequest(r *http.Request, publicURL string) (url.Values, error) {
	sig := r.Header.Get(SignatureHeader)
	if sig == "" {
		return nil, fmt.Errorf("%w: no %s header", ErrSignature, SignatureHeader)
	}
	if r.Header.Get(settingsHeader) != "" {
		return nil, fmt.Errorf("%w: signed with a webhook SharedKey (%s), which is not supported", ErrSignature, settingsHeader)
	}
	if r.Method != http.MethodPost {
		return nil, fmt.Errorf("%w: only POST webhooks are supported, not %s", ErrSignature, clip(r.Method, 20))
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxWebhookBytes+1))
	if err != nil {
		return nil, fmt.Errorf("twilio: read webhook: %w", err)
	}
	if len(body) > MaxWebhookBytes {
		return nil, fmt.Errorf("%w: over %d bytes", ErrTooLarge, MaxWebhookBytes)
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fmt.Errorf("%w: the body is not a form: %v", ErrSignature, err)
	}
	for _, u := range urlVariants(publicURL) {
		if hmac.Equal([]byte(sig), []byte(Signature(c.authToken, u, form))) {
			return form, nil
		}
	}
	return nil, fmt.Errorf("%w: the signature does not match", ErrSignature)
}

// urlVariants returns the two forms of u a signature is checked against:
// without its port, and with one (u's own, or the scheme's default). The
// rest of u is kept byte for byte. A u without "scheme://" is returned
// alone.
func urlVariants(u string) []string {
	i := strings.Index(u, "://")
	if i <= 0 || !isScheme(u[:i]) {
		return []string{u}
	}
	rest := u[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	hostStart := strings.LastIndex(authority, "@") + 1
	// In an IPv6 literal the colons before "]" are not a port's.
	portStart := strings.LastIndex(authority, "]") + 1
	portStart = max(portStart, hostStart)
	if c := strings.Index(authority[portStart:], ":"); c >= 0 {
		portStart += c
	} else {
		portStart = len(authority)
	}
	withoutPort := u[:i+3] + authority[:portStart] + tail
	if portStart < len(authority) {
		return []string{withoutPort, u}
	}
	port := ":80"
	if strings.EqualFold(u[:i], "https") {
		port = ":443"
	}
	return []string{u, u[:i+3] + authority + port + tail}
}

// isScheme reports whether s is a URL scheme: a letter, then letters,
// digits, '+', '-' or '.'.
func isScheme(s string) bool {
	for i, c := range s {
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}
