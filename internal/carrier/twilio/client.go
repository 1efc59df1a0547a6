package twilio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultAPIBase is where Twilio serves its REST API.
const DefaultAPIBase = "https://api.twilio.com"

// defaultTimeout bounds a whole send when the caller brings no HTTPClient.
const defaultTimeout = 30 * time.Second

// maxAnswerBytes bounds how much of an answer Send reads.
const maxAnswerBytes = 1 << 20

// Config configures a Client.
type Config struct {
	// AccountSID is the account's "AC…" SID, the user name of the API's
	// basic auth and part of every path. Required.
	AccountSID string
	// AuthToken is the account's auth token: the password of the basic
	// auth and the key of webhook signatures. Required; it never appears
	// in an error.
	AuthToken string
	// MessagingServiceSID, when set ("MG…"), goes with every message as
	// MessagingServiceSid in place of From: the service picks the sender.
	MessagingServiceSID string
	// APIBase is the scheme and host of the API, without "/2010-04-01"
	// (default DefaultAPIBase). Tests and Twilio-compatible providers set
	// it; with another base the SIDs are not held to Twilio's form.
	APIBase string
	// HTTPClient sends the requests (default: a client with a 30 s
	// timeout). Its redirects are never followed: a copy is used whose
	// CheckRedirect stops at the first answer.
	HTTPClient *http.Client
}

// Client sends messages through Twilio's Programmable Messaging API and
// checks the webhooks Twilio sends back. It is safe for concurrent use.
type Client struct {
	accountSID string
	authToken  string
	serviceSID string
	sendURL    string
	http       *http.Client
}

// New checks cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	base := cfg.APIBase
	if base == "" {
		base = DefaultAPIBase
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("twilio: API base %q is not an http(s) URL of the form scheme://host[:port][/path]", base)
	}
	// Twilio's own SIDs are two letters and 32 hex digits; a compatible
	// provider may word its account ids otherwise.
	strict := strings.TrimSuffix(base, "/") == DefaultAPIBase
	switch {
	case cfg.AccountSID == "":
		return nil, errors.New("twilio: an account SID is required")
	case strict && !isSID(cfg.AccountSID, "AC"):
		return nil, fmt.Errorf("twilio: account SID %q is not \"AC\" and 32 hex digits", clip(cfg.AccountSID, 40))
	case !isPathSafe(cfg.AccountSID):
		return nil, fmt.Errorf("twilio: account SID %q may hold only letters, digits, '-' and '_'", clip(cfg.AccountSID, 40))
	}
	if cfg.AuthToken == "" {
		return nil, errors.New("twilio: an auth token is required")
	}
	for _, r := range cfg.AuthToken {
		if r <= ' ' || r >= 0x7f {
			return nil, errors.New("twilio: the auth token holds a space or a character outside printable ASCII")
		}
	}
	if s := cfg.MessagingServiceSID; s != "" && strict && !isSID(s, "MG") {
		return nil, fmt.Errorf("twilio: messaging service SID %q is not \"MG\" and 32 hex digits", clip(s, 40))
	}
	hc := &http.Client{Timeout: defaultTimeout}
	if cfg.HTTPClient != nil {
		copied := *cfg.HTTPClient
		hc = &copied
	}
	// Go would follow a 307 by posting the message again elsewhere; an
	// answer other than Twilio's own is better reported than chased.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{
		accountSID: cfg.AccountSID,
		authToken:  cfg.AuthToken,
		serviceSID: cfg.MessagingServiceSID,
		sendURL:    strings.TrimSuffix(base, "/") + "/2010-04-01/Accounts/" + cfg.AccountSID + "/Messages.json",
		http:       hc,
	}, nil
}

// isSID reports whether s is prefix followed by 32 hex digits.
func isSID(s, prefix string) bool {
	if len(s) != len(prefix)+32 || !strings.HasPrefix(s, prefix) {
		return false
	}
	for _, c := range s[len(prefix):] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// isPathSafe reports whether s can stand in a URL path unescaped.
func isPathSafe(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Message is one outbound SMS or MMS to one recipient.
type Message struct {
	// From is the sending number in E.164 ("+15551234567") or a sender
	// ID. Required unless the Config names a messaging service, which
	// then chooses the sender and From is not sent.
	From string
	To   string // the recipient in E.164
	Body string
	// MediaURLs are public URLs Twilio fetches (at most 10); any makes
	// the message an MMS.
	MediaURLs []string
	// StatusCallback, when set, is the absolute URL Twilio posts this
	// message's status changes to; VerifyRequest needs it back, exactly.
	StatusCallback string
}

// form is m as the body of POST …/Messages.json.
func (c *Client) form(m Message) url.Values {
	f := url.Values{"To": {m.To}}
	if c.serviceSID != "" {
		f.Set("MessagingServiceSid", c.serviceSID)
	} else {
		f.Set("From", m.From)
	}
	if m.Body != "" {
		f.Set("Body", m.Body)
	}
	if len(m.MediaURLs) > 0 {
		f["MediaUrl"] = append([]string(nil), m.MediaURLs...)
	}
	if m.StatusCallback != "" {
		f.Set("StatusCallback", m.StatusCallback)
	}
	return f
}

// check refuses a message Twilio would certainly refuse, before sending.
func (c *Client) check(m Message) error {
	switch {
	case m.To == "":
		return errors.New("message has no recipient")
	case m.From == "" && c.serviceSID == "":
		return errors.New("message has no sender and no messaging service is configured")
	case m.Body == "" && len(m.MediaURLs) == 0:
		return errors.New("message has neither body nor media")
	}
	if m.StatusCallback != "" {
		u, err := url.Parse(m.StatusCallback)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return errors.New("the status callback is not an absolute http(s) URL")
		}
	}
	return nil
}

// sendAnswer is the part of a 2xx answer Send reads.
type sendAnswer struct {
	SID          string  `json:"sid"`
	Status       string  `json:"status"`
	ErrorCode    *int    `json:"error_code"`
	ErrorMessage *string `json:"error_message"`
}

// Send hands m to Twilio and returns the SID Twilio gave the message,
// which its status callbacks carry as MessageSid. A nil error means
// Twilio took the message. Otherwise the error is one of (see the package
// documentation):
//
//   - an *Error whose Refused or Throttled is true: Twilio did not take
//     the message (or, for a 2xx that says failed, took and failed it at
//     once; the Error's SID names it);
//   - an error wrapping ErrNotSent: the request never left, so nothing
//     was taken;
//   - an error wrapping ErrUnknown (an *Error for a 5xx answer among
//     them): Twilio may have taken the message.
func (c *Client) Send(ctx context.Context, m Message) (string, error) {
	if err := c.check(m); err != nil {
		return "", fmt.Errorf("%w: %v", ErrNotSent, err)
	}
	// Whether any of the request may have left decides what a failure
	// means: before (a refused connection, a failed TLS handshake, a
	// deadline passed while dialling) nothing was sent; after, Twilio may
	// have taken the message. Headers count as sent once written, even if
	// only into the connection's buffer, which errs towards unknown.
	var written atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { written.Store(true) },
		WroteRequest: func(httptrace.WroteRequestInfo) { written.Store(true) },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.sendURL, strings.NewReader(c.form(m).Encode()))
	if err != nil {
		return "", fmt.Errorf("%w: build request: %v", ErrNotSent, withoutURL(err))
	}
	req.SetBasicAuth(c.accountSID, c.authToken)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")

	resp, err := c.http.Do(req)
	if err != nil {
		if written.Load() {
			return "", fmt.Errorf("%w: no answer after the request was sent: %w", ErrUnknown, withoutURL(err))
		}
		return "", fmt.Errorf("%w: %w", ErrNotSent, withoutURL(err))
	}
	defer resp.Body.Close()
	answer, readErr := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if readErr == nil && len(answer) > maxAnswerBytes {
		readErr = fmt.Errorf("answer longer than %d bytes", maxAnswerBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// The status alone classifies a failure; the body only explains it.
		return "", c.answerError(resp, answer)
	}
	if readErr != nil {
		return "", fmt.Errorf("%w: answered %d: read answer: %w", ErrUnknown, resp.StatusCode, withoutURL(readErr))
	}
	var a sendAnswer
	if err := json.Unmarshal(answer, &a); err != nil {
		return "", fmt.Errorf("%w: answered %d with a body that is not JSON: %v", ErrUnknown, resp.StatusCode, err)
	}
	if a.SID == "" {
		return "", fmt.Errorf("%w: answered %d without a sid", ErrUnknown, resp.StatusCode)
	}
	if a.Status == "failed" || a.Status == "undelivered" {
		return "", c.failedAtOnce(resp.StatusCode, a)
	}
	return a.SID, nil
}

// withoutURL drops the *url.Error wrapper, whose message repeats the
// method and URL of the request before its cause.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
