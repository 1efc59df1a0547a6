package telnyx

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrNotSent reports that Send gave up before any of its request was
// written (the message was invalid, the connection or TLS handshake failed,
// the context ended first): Telnyx certainly did not take the message.
var ErrNotSent = errors.New("telnyx: not sent")

// ErrUnknown reports that Telnyx may have taken the message: the request
// was written but no usable answer came back (a timeout, a connection lost,
// a 5xx, a 2xx without a message id).
var ErrUnknown = errors.New("telnyx: outcome unknown")

// Telnyx's codes for "slow down": 10011 is its API-wide rate limit, 40318
// the messaging queue of the account or the number being full.
const (
	codeTooManyRequests = "10011"
	codeQueueFull       = "40318"
)

// maxRetryAfter bounds the wait an answer can ask for.
const maxRetryAfter = time.Hour

// Problem is one entry of an errors array, as Telnyx puts them in its
// answers and in a message's payload.errors.
type Problem struct {
	Code   string // Telnyx's numeric code as a string, e.g. "40300"
	Title  string
	Detail string
}

// UnmarshalJSON reads a problem, taking its code as a JSON string or number.
func (p *Problem) UnmarshalJSON(b []byte) error {
	var raw struct {
		Code   json.RawMessage `json:"code"`
		Title  string          `json:"title"`
		Detail string          `json:"detail"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	p.Title, p.Detail, p.Code = raw.Title, raw.Detail, ""
	if len(raw.Code) > 0 && string(raw.Code) != "null" {
		var s string
		if err := json.Unmarshal(raw.Code, &s); err == nil {
			p.Code = s
		} else if _, err := strconv.ParseFloat(string(raw.Code), 64); err == nil {
			p.Code = string(raw.Code)
		} else {
			return fmt.Errorf("telnyx: error code %s is neither a string nor a number", raw.Code)
		}
	}
	return nil
}

// Error is an answer from Telnyx (or whatever answered at APIBase) other
// than 2xx. Code, Title and Detail come from the first entry of the
// answer's errors array and are empty when it had none.
type Error struct {
	HTTPStatus int
	Code       string
	Title      string
	Detail     string
	// RetryAfter is how long the answer asked the caller to wait (its
	// Retry-After or x-ratelimit-reset header, in seconds), or zero.
	RetryAfter time.Duration
}

// Error describes the answer without the request that caused it.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "telnyx: answered %d", e.HTTPStatus)
	for i, s := range []string{e.Code, e.Title, e.Detail} {
		if s == "" {
			continue
		}
		if i == 0 {
			b.WriteString(" ")
		} else {
			b.WriteString(": ")
		}
		b.WriteString(clip(s, 300))
	}
	return b.String()
}

// Throttled reports that Telnyx did not take the message for now and asks
// for it to be sent again later (HTTP 429, or a 4xx carrying code 10011 or
// 40318). The message was not taken.
func (e *Error) Throttled() bool {
	if e.HTTPStatus < 400 || e.HTTPStatus > 499 {
		return false
	}
	return e.HTTPStatus == http.StatusTooManyRequests || e.Code == codeTooManyRequests || e.Code == codeQueueFull
}

// Refused reports that Telnyx certainly did not take the message and
// sending it again unchanged will not help: a 4xx other than throttling
// (bad number, no permission, an unknown API key), or a 3xx, which is not
// followed.
func (e *Error) Refused() bool {
	return e.HTTPStatus >= 300 && e.HTTPStatus <= 499 && !e.Throttled()
}

// Unwrap makes an answer that neither refuses nor throttles (a 5xx) match
// ErrUnknown.
func (e *Error) Unwrap() error {
	if e.Refused() || e.Throttled() {
		return nil
	}
	return ErrUnknown
}

// answerError reads a non-2xx answer. The body is optional: a proxy's
// HTML page or a cut-off read yields an Error without a code.
func (c *Client) answerError(resp *http.Response, body []byte) *Error {
	e := &Error{HTTPStatus: resp.StatusCode, RetryAfter: retryAfter(resp.Header)}
	var a struct {
		Errors []Problem `json:"errors"`
	}
	if json.Unmarshal(body, &a) == nil && len(a.Errors) > 0 {
		p := a.Errors[0]
		// An API key echoed back must not end up in a log.
		e.Code = p.Code
		e.Title = strings.ReplaceAll(p.Title, c.apiKey, "[API key]")
		e.Detail = strings.ReplaceAll(p.Detail, c.apiKey, "[API key]")
	}
	return e
}

// retryAfter reads the wait an answer asks for, in whole seconds.
func retryAfter(h http.Header) time.Duration {
	for _, name := range []string{"Retry-After", "X-Ratelimit-Reset"} {
		n, err := strconv.Atoi(strings.TrimSpace(h.Get(name)))
		if err != nil || n <= 0 {
			continue
		}
		if n > int(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		return time.Duration(n) * time.Second
	}
	return 0
}

// clip shortens s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
