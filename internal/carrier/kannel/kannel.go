package kannel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"switchboard/internal/carrier"
	"switchboard/internal/segment"
)

// dlrMask asks Kannel for every report type it knows: delivered (1),
// undelivered (2), buffered (4), smsc submit (8) and smsc reject (16).
const dlrMask = 1 | 2 | 4 | 8 | 16

const (
	// maxAnswerBytes bounds how much of smsbox's answer is read; its
	// answers are one short line.
	maxAnswerBytes = 4 << 10
	// defaultTimeout bounds one sendsms call whose context has no deadline.
	// smsbox answers as soon as bearerbox has queued the message, normally
	// within milliseconds; Switchboard's sends pass their own deadline (the
	// --carrier-timeout), and an answer that comes late is still read until
	// then, since the message may be on its way.
	defaultTimeout = 30 * time.Second
	// minSecretLen keeps the shared secret out of brute-force reach.
	minSecretLen = 16
)

// The two answers with which smsbox reports that bearerbox took the message
// (HTTP 202). Everything else is a refusal or a failure.
const (
	answerAccepted = "0: Accepted for delivery"
	answerQueued   = "3: Queued for later delivery"
)

// Config configures a Driver.
type Config struct {
	// SendURL is smsbox's sendsms endpoint, e.g.
	// http://127.0.0.1:13013/cgi-bin/sendsms.
	SendURL string
	// Username and Password are those of a sendsms-user group.
	Username, Password string
	// CallbackURL is the public base URL under which Handler is mounted,
	// e.g. https://sb.example.com/carrier/kannel. Kannel calls
	// CallbackURL+"/dlr" and CallbackURL+"/inbound".
	CallbackURL string
	// Secret is the shared secret that Kannel's dlr-url and get-url carry.
	// At least 16 characters from A-Z a-z 0-9 - . _ ~ so that it sits in a
	// URL and in kannel.conf unescaped.
	Secret string
	// SMSC, if set, is passed as sendsms's smsc parameter (an smsc-id).
	SMSC string
	// HTTPClient calls smsbox; nil means a client bounded only by the
	// context of each Send (30 s when it has no deadline). A client with
	// its own Timeout makes a late answer an unknown outcome.
	HTTPClient *http.Client
	// Logger receives handler failures; nil discards them.
	Logger *slog.Logger
}

// Driver sends through Kannel and receives its delivery reports and
// inbound texts. It is safe for concurrent use.
type Driver struct {
	sendURL     url.URL
	username    string
	password    string
	callbackURL string
	secret      string
	smsc        string
	client      *http.Client
	log         *slog.Logger
	now         func() time.Time
}

var _ carrier.Carrier = (*Driver)(nil)

// New validates cfg and returns a Driver.
func New(cfg Config) (*Driver, error) {
	su, err := parseHTTPURL("SendURL", cfg.SendURL)
	if err != nil {
		return nil, err
	}
	if cfg.Username == "" || cfg.Password == "" {
		return nil, errors.New("kannel: Username and Password are required")
	}
	cb, err := parseHTTPURL("CallbackURL", cfg.CallbackURL)
	if err != nil {
		return nil, err
	}
	if strings.Contains(cfg.CallbackURL, "%") {
		// Kannel would read "%xx" as one of its escape codes.
		return nil, errors.New("kannel: CallbackURL must not contain '%'")
	}
	if err := checkSecret(cfg.Secret); err != nil {
		return nil, err
	}
	if strings.ContainsFunc(cfg.SMSC, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return nil, errors.New("kannel: SMSC must not contain spaces or control characters")
	}
	client := cfg.HTTPClient
	if client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// Keep connections to smsbox for concurrent senders instead of
		// reconnecting: smsbox's listen backlog is small.
		tr.MaxIdleConnsPerHost = 64
		client = &http.Client{Transport: tr}
	}
	// Never follow a redirect: the request carries the password, the
	// callback secret and attachment URLs, and only smsbox's own answer
	// means the message was accepted (a 3xx is a refusal below).
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	client = &c
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Driver{
		sendURL:     *su,
		username:    cfg.Username,
		password:    cfg.Password,
		callbackURL: strings.TrimRight(cb.String(), "/"),
		secret:      cfg.Secret,
		smsc:        cfg.SMSC,
		client:      client,
		log:         log,
		now:         time.Now,
	}, nil
}

func parseHTTPURL(name, raw string) (*url.URL, error) {
	if raw == "" {
		return nil, fmt.Errorf("kannel: %s is required", name)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("kannel: %s: %v", name, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("kannel: %s must be an http or https URL", name)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("kannel: %s has no host", name)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("kannel: %s must not carry a query, fragment or user info", name)
	}
	return u, nil
}

func checkSecret(s string) error {
	if len(s) < minSecretLen {
		return fmt.Errorf("kannel: Secret must be at least %d characters", minSecretLen)
	}
	for _, r := range s {
		if !isUnreserved(r) {
			return errors.New("kannel: Secret may only contain A-Z a-z 0-9 - . _ ~")
		}
	}
	return nil
}

// isUnreserved reports whether r is an RFC 3986 unreserved character, one
// that needs no escaping anywhere in a URL.
func isUnreserved(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' ||
		r == '-' || r == '.' || r == '_' || r == '~'
}

// Send hands m to Kannel. It returns nil error only when smsbox reports that
// bearerbox accepted (or queued) the message. An error wraps
// carrier.ErrUnavailable when Kannel certainly did not take the message (it
// could not be reached before the request was written, or it answered with
// a refusal) and carrier.ErrUnknown when the request was written but no
// complete answer came back (a timeout, a connection lost after writing).
func (d *Driver) Send(ctx context.Context, m carrier.Message) (carrier.Accepted, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultTimeout)
		defer cancel()
	}
	text, err := smsText(m)
	if err != nil {
		return carrier.Accepted{}, fmt.Errorf("%w: kannel: %v", carrier.ErrUnavailable, err)
	}
	coding := "0"
	if segment.Of(text).Encoding == segment.UCS2 {
		coding = "2"
	}
	q := url.Values{}
	q.Set("username", d.username)
	q.Set("password", d.password)
	q.Set("from", m.From)
	q.Set("to", strings.Join(m.To, " "))
	q.Set("text", text)
	q.Set("charset", "UTF-8")
	q.Set("coding", coding)
	q.Set("dlr-mask", strconv.Itoa(dlrMask))
	q.Set("dlr-url", d.dlrURL(m.ID))
	if d.smsc != "" {
		q.Set("smsc", d.smsc)
	}
	u := d.sendURL
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return carrier.Accepted{}, fmt.Errorf("%w: kannel: build request: %v", carrier.ErrUnavailable, err)
	}
	// sendsms is a GET but not idempotent: net/http silently re-sends a GET
	// whose kept-alive connection dropped before the answer, which would send
	// the SMS twice. An empty body that cannot be rewound (no GetBody) makes
	// the request non-replayable; the transport still sends no body for it.
	req.Body = io.NopCloser(strings.NewReader(""))
	// Whether any of the request may have reached smsbox decides what a
	// failure means: before it was written (connection refused, a dial
	// timeout) nothing was sent; after, smsbox may have queued the message.
	var written atomic.Bool
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteHeaders: func() { written.Store(true) },
		WroteRequest: func(httptrace.WroteRequestInfo) { written.Store(true) },
	}))
	resp, err := d.client.Do(req)
	if err != nil {
		if written.Load() {
			return carrier.Accepted{}, fmt.Errorf("%w: kannel sendsms: no answer after the request was sent: %w", carrier.ErrUnknown, withoutURL(err))
		}
		return carrier.Accepted{}, fmt.Errorf("%w: kannel sendsms: %w", carrier.ErrUnavailable, withoutURL(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		// A refusal is a refusal however its text ends; an acceptance cut
		// short may be an acceptance.
		if resp.StatusCode == http.StatusAccepted {
			return carrier.Accepted{}, fmt.Errorf("%w: kannel sendsms: read answer: %w", carrier.ErrUnknown, withoutURL(err))
		}
		return carrier.Accepted{}, fmt.Errorf("%w: kannel sendsms answered %d: read answer: %w", carrier.ErrUnavailable, resp.StatusCode, withoutURL(err))
	}
	// Let the connection be reused even if smsbox said more than we read.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	answer := strings.TrimSpace(string(body))
	if resp.StatusCode == http.StatusAccepted {
		for _, ok := range []string{answerAccepted, answerQueued} {
			if rest, found := strings.CutPrefix(answer, ok); found {
				return carrier.Accepted{Ref: answerRef(rest)}, nil
			}
		}
	}
	return carrier.Accepted{}, fmt.Errorf("%w: kannel sendsms answered %d %q", carrier.ErrUnavailable, resp.StatusCode, answer)
}

// answerRef extracts a message id that some Kannel builds append to the
// answer ("0: Accepted for delivery: <id>"). Kannel 1.4.5 appends none.
func answerRef(rest string) string {
	rest = strings.TrimSpace(rest)
	rest = strings.TrimSpace(strings.TrimPrefix(rest, ":"))
	return rest
}

// withoutURL drops the *url.Error wrapper, whose message would repeat the
// request URL and with it the Kannel password.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// smsText validates m and renders the one text Kannel will send: the body,
// then each media URL on its own line.
func smsText(m carrier.Message) (string, error) {
	if m.ID <= 0 {
		return "", errors.New("message id must be positive")
	}
	if !isDigits(m.From) {
		return "", errors.New("from must be a non-empty string of digits")
	}
	if len(m.To) == 0 {
		return "", errors.New("no recipient")
	}
	for _, to := range m.To {
		if !isDigits(to) {
			return "", errors.New("every recipient must be a non-empty string of digits")
		}
	}
	parts := make([]string, 0, 1+len(m.Media))
	if m.Text != "" {
		parts = append(parts, m.Text)
	}
	for _, media := range m.Media {
		if media == "" {
			return "", errors.New("empty media URL")
		}
		parts = append(parts, media)
	}
	if len(parts) == 0 {
		return "", errors.New("nothing to send: no text and no media")
	}
	return strings.Join(parts, "\n"), nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// dlrURL is the dlr-url for message id: Switchboard's id and the secret
// are fixed, the rest are Kannel escape codes it fills in per report.
func (d *Driver) dlrURL(id int64) string {
	return d.callbackURL + "/dlr?id=" + strconv.FormatInt(id, 10) +
		"&secret=" + d.secret + "&type=%d&reply=%A&ts=%T"
}

// InboundGetURL is the sms-service get-url that delivers inbound texts to
// the handler mounted at callbackURL. It needs no Driver so that the
// Kannel configuration can be written before the Driver exists.
func InboundGetURL(callbackURL, secret string) string {
	return strings.TrimRight(callbackURL, "/") + "/inbound?secret=" + secret +
		"&from=%p&to=%P&text=%b&coding=%c&charset=%C&ts=%T"
}

// SMSService returns the kannel.conf sms-service group that routes every
// inbound text to the handler mounted at callbackURL and never sends a
// reply SMS back (max-messages = 0, omit-empty = true).
func SMSService(callbackURL, secret string) string {
	return "group = sms-service\n" +
		"keyword = default\n" +
		"catch-all = true\n" +
		"max-messages = 0\n" +
		"omit-empty = true\n" +
		"get-url = \"" + InboundGetURL(callbackURL, secret) + "\"\n"
}
