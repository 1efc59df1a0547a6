package twilio

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
// written (the message was invalid, the dial or TLS handshake failed, the
// context ended first): Twilio certainly did not take the message.
var ErrNotSent = errors.New("twilio: not sent")

// ErrUnknown reports that Twilio may have taken the message: the request
// was written but no usable answer came back (a timeout, a connection lost,
// a 5xx, a 2xx without a sid).
var ErrUnknown = errors.New("twilio: outcome unknown")

// Twilio's codes for "slow down", documented at twilio.com/docs/api/errors.
var throttleCodes = map[int]bool{
	20429: true, // too many concurrent API requests (HTTP 429)
	21611: true, // the From number's queue holds more than 10 hours of messages
	30001: true, // queue overflow: the message failed for want of throughput
	14107: true, // over 30 replies between two numbers in 30 seconds
}

// maxRetryAfter bounds the wait an answer can ask for.
const maxRetryAfter = time.Hour

// Error is an answer from Twilio (or whatever answered at APIBase) that
// did not take the message: a status other than 2xx, or a 2xx whose
// message is already failed. Code, Message and MoreInfo come from
// Twilio's error body and are empty when it had none.
type Error struct {
	HTTPStatus int
	Code       int    // Twilio's error code, e.g. 21211; 0 when absent
	Message    string // Twilio's explanation
	MoreInfo   string // a link to the code's documentation
	// RetryAfter is how long the answer asked the caller to wait (its
	// Retry-After header, in seconds), or zero.
	RetryAfter time.Duration
	// SID is set when Twilio created the message and answered 2xx with
	// its status already failed or undelivered.
	SID string
}

// Error describes the answer without the request that caused it.
func (e *Error) Error() string {
	var b strings.Builder
	if e.SID != "" {
		fmt.Fprintf(&b, "twilio: answered %d with message %s already failed", e.HTTPStatus, e.SID)
	} else {
		fmt.Fprintf(&b, "twilio: answered %d", e.HTTPStatus)
	}
	if e.Code != 0 {
		fmt.Fprintf(&b, " %d", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(clip(e.Message, 300))
	}
	return b.String()
}

// failed reports an answer in which Twilio did not take, or at once
// failed, the message: a 3xx or 4xx, or a 2xx carrying a failed message.
func (e *Error) failed() bool {
	return e.HTTPStatus >= 300 && e.HTTPStatus <= 499 || e.SID != ""
}

// Throttled reports that Twilio did not take the message for now and asks
// for it to be sent again later: HTTP 429, or an answer that failed it
// with code 20429, 21611, 30001 or 14107.
func (e *Error) Throttled() bool {
	if !e.failed() {
		return false
	}
	return e.HTTPStatus == http.StatusTooManyRequests || throttleCodes[e.Code]
}

// Refused reports that Twilio certainly did not take the message (or took
// and failed it at once) and sending it again unchanged will not help: a
// 4xx other than throttling (an invalid number, bad credentials, a
// missing permission), a 3xx, which is not followed, or a 2xx whose
// message was already failed.
func (e *Error) Refused() bool {
	return e.failed() && !e.Throttled()
}

// Unwrap makes an answer that neither refuses nor throttles (a 5xx) match
// ErrUnknown.
func (e *Error) Unwrap() error {
	if e.failed() {
		return nil
	}
	return ErrUnknown
}

// errorBody is Twilio's JSON error: {"code", "message", "more_info", "status"}.
type errorBody struct {
	Code     json.RawMessage `json:"code"`
	Message  string          `json:"message"`
	MoreInfo string          `json:"more_info"`
}

// answerError reads a non-2xx answer. The body is optional: a proxy's
// HTML page or a cut-off read yields an Error without a code.
func (c *Client) answerError(resp *http.Response, body []byte) *Error {
	e := &Error{HTTPStatus: resp.StatusCode, RetryAfter: retryAfter(resp.Header)}
	var a errorBody
	if json.Unmarshal(body, &a) == nil {
		e.Code = parseCode(a.Code)
		e.Message = c.redact(a.Message)
		e.MoreInfo = c.redact(a.MoreInfo)
	}
	return e
}

// failedAtOnce reports a 2xx answer whose message is already failed.
func (c *Client) failedAtOnce(status int, a sendAnswer) *Error {
	e := &Error{HTTPStatus: status, SID: a.SID, Message: "status " + a.Status}
	if a.ErrorCode != nil {
		e.Code = *a.ErrorCode
	}
	if a.ErrorMessage != nil && *a.ErrorMessage != "" {
		e.Message += ": " + c.redact(*a.ErrorMessage)
	}
	return e
}

// redact keeps an auth token echoed back out of logs.
func (c *Client) redact(s string) string {
	return strings.ReplaceAll(s, c.authToken, "[auth token]")
}

// parseCode reads an error code given as a JSON number or a string of
// digits; anything else is 0.
func parseCode(raw json.RawMessage) int {
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return n
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	return 0
}

// retryAfter reads the wait an answer asks for, in whole seconds.
func retryAfter(h http.Header) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After")))
	if err != nil || n <= 0 {
		return 0
	}
	if n > int(maxRetryAfter/time.Second) {
		return maxRetryAfter
	}
	return time.Duration(n) * time.Second
}

// clip shortens s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
