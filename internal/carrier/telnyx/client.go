package telnyx

import (
	"bytes"
	"context"
	"crypto/ed25519"
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

// DefaultAPIBase is where Telnyx serves its API.
const DefaultAPIBase = "https://api.telnyx.com"

// defaultTimeout bounds a whole send when the caller brings no HTTPClient.
const defaultTimeout = 30 * time.Second

// maxAnswerBytes bounds how much of an answer Send reads.
const maxAnswerBytes = 1 << 20

// Config configures a Client.
type Config struct {
	// APIKey is the account's API key (v2), sent as "Authorization: Bearer".
	// Required. It never appears in an error.
	APIKey string
	// PublicKey checks webhook signatures (see ParsePublicKey). Without it
	// VerifyRequest refuses every request.
	PublicKey ed25519.PublicKey
	// MessagingProfileID, when set, goes with every message as
	// messaging_profile_id (Telnyx needs it for alphanumeric senders and
	// number pools; a number's own profile is used otherwise).
	MessagingProfileID string
	// APIBase is the scheme and host of the API, without "/v2" (default
	// DefaultAPIBase). Tests point it at a fake.
	APIBase string
	// HTTPClient sends the requests (default: a client with a 30 s
	// timeout). Its redirects are never followed: a copy is used whose
	// CheckRedirect stops at the first answer.
	HTTPClient *http.Client
}

// Client sends messages through Telnyx's v2 Messaging API and checks the
// webhooks Telnyx sends back. It is safe for concurrent use.
type Client struct {
	apiKey    string
	publicKey ed25519.PublicKey
	profileID string
	sendURL   string
	http      *http.Client
}

// New checks cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.APIKey == "" {
		return nil, errors.New("telnyx: an API key is required")
	}
	for _, r := range cfg.APIKey {
		if r <= ' ' || r >= 0x7f {
			return nil, errors.New("telnyx: the API key holds a space or a character outside printable ASCII")
		}
	}
	if len(cfg.PublicKey) != 0 && len(cfg.PublicKey) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("telnyx: the public key must be %d bytes, not %d", ed25519.PublicKeySize, len(cfg.PublicKey))
	}
	base := cfg.APIBase
	if base == "" {
		base = DefaultAPIBase
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("telnyx: API base %q is not an http(s) URL of the form scheme://host[:port][/path]", base)
	}
	hc := &http.Client{Timeout: defaultTimeout}
	if cfg.HTTPClient != nil {
		copied := *cfg.HTTPClient
		hc = &copied
	}
	// Go would follow a 307 by posting the message again elsewhere; an
	// answer other than Telnyx's own is better reported than chased.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{
		apiKey:    cfg.APIKey,
		publicKey: append(ed25519.PublicKey(nil), cfg.PublicKey...),
		profileID: cfg.MessagingProfileID,
		sendURL:   strings.TrimSuffix(base, "/") + "/v2/messages",
		http:      hc,
	}, nil
}

// Message is one outbound SMS or MMS to one recipient.
type Message struct {
	From string // the sending number in E.164 ("+15551234567"), or a sender ID
	To   string // the recipient in E.164
	Text string
	// MediaURLs are public URLs Telnyx fetches; any makes the message an MMS.
	MediaURLs []string
	// WebhookURL, when set, is where Telnyx sends this message's events
	// first, before the messaging profile's webhook URL.
	WebhookURL string
}

// sendRequest is the body of POST /v2/messages.
type sendRequest struct {
	From               string   `json:"from,omitempty"`
	To                 string   `json:"to"`
	Text               string   `json:"text,omitempty"`
	MediaURLs          []string `json:"media_urls,omitempty"`
	WebhookURL         string   `json:"webhook_url,omitempty"`
	MessagingProfileID string   `json:"messaging_profile_id,omitempty"`
}

// sendAnswer is the part of a 2xx answer Send needs.
type sendAnswer struct {
	Data *struct {
		ID string `json:"id"`
	} `json:"data"`
}

// Send hands m to Telnyx and returns the id Telnyx gave the message, which
// its webhooks carry as payload.id. A nil error means Telnyx took the
// message. Otherwise the error is one of (see the package documentation):
//
//   - an *Error whose Refused or Throttled is true: Telnyx answered and did
//     not take the message;
//   - an error wrapping ErrNotSent: the request never left, so nothing was
//     taken;
//   - an error wrapping ErrUnknown (an *Error for a 5xx answer among them):
//     Telnyx may have taken the message.
func (c *Client) Send(ctx context.Context, m Message) (string, error) {
	if err := m.check(); err != nil {
		return "", fmt.Errorf("%w: %v", ErrNotSent, err)
	}
	body, err := json.Marshal(sendRequest{
		From: m.From, To: m.To, Text: m.Text, MediaURLs: m.MediaURLs,
		WebhookURL: m.WebhookURL, MessagingProfileID: c.profileID,
	})
	if err != nil {
		return "", fmt.Errorf("%w: encode: %v", ErrNotSent, err)
	}
	// Whether any of the request may have left decides what a failure
	// means: before (a refused connection, a failed TLS handshake, a
	// deadline passed while dialling) nothing was sent; after, Telnyx may
	// have taken the message. Headers count as sent once written, even if
	// only into the connection's buffer, which errs towards unknown.
	var written atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { written.Store(true) },
		WroteRequest: func(httptrace.WroteRequestInfo) { written.Store(true) },
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.sendURL, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("%w: build request: %v", ErrNotSent, withoutURL(err))
	}
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	req.Header.Set("Content-Type", "application/json")
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
	if a.Data == nil || a.Data.ID == "" {
		return "", fmt.Errorf("%w: answered %d without data.id", ErrUnknown, resp.StatusCode)
	}
	return a.Data.ID, nil
}

// check refuses a message Telnyx would certainly refuse, before sending.
func (m Message) check() error {
	switch {
	case m.To == "":
		return errors.New("message has no recipient")
	case m.Text == "" && len(m.MediaURLs) == 0:
		return errors.New("message has neither text nor media")
	}
	return nil
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
