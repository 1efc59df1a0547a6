package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// EventReset is the Type of the message the stream sends instead of a
// replay when the id to resume after is no longer held (older than the
// server's retention): events were missed, reload your state. The stream
// goes on live after it.
const EventReset = "reset"

// EventsOptions narrow and tune the event stream.
type EventsOptions struct {
	// Types keeps only these event types (AccountSMS, AccountConversations,
	// ...: GET /webhooks/types lists them); empty is every type.
	Types []string
	// Lines keeps only events about these lines (and leaves out events
	// about no line, such as calls); empty is every line.
	Lines []string
	// After resumes after this event id (evt_N: an Event's ID kept from an
	// earlier stream); "evt_0" replays everything the server holds; empty
	// starts live.
	After string
	// MaxBackoff caps the wait between reconnection attempts that keep
	// failing; default 30 s. The first wait is the server's retry (1 s).
	MaxBackoff time.Duration
	// IdleTimeout is how long a connection may send nothing, not even the
	// server's keepalive (every 15 s), before it is taken for dead and
	// replaced; default 45 s.
	IdleTimeout time.Duration
	// OnReconnect, if set, is called before each wait to reconnect, with
	// why the connection ended (or could not be made) and the wait.
	OnReconnect func(err error, wait time.Duration)
}

// Event is one message of the event stream.
type Event struct {
	// ID is the event's id (evt_N): a webhook delivery of the same event
	// carries it as webhook-id. Keep the last one to resume from
	// (EventsOptions.After).
	ID string
	// Type is the event type (AccountSMS, ...) or EventReset.
	Type string
	// Data is the message's data: for an event, exactly the JSON body a
	// webhook delivery of it carries ({"id","type","timestamp","data"});
	// Payload decodes it.
	Data json.RawMessage
}

// EventPayload is an event's body, the same on the stream and in a webhook
// delivery (WebhookPayload in the document, with Data left undecoded: its
// schema depends on Type, e.g. SMSEventData for AccountSMS).
type EventPayload struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// Payload decodes the event's Data.
func (e Event) Payload() (EventPayload, error) {
	var p EventPayload
	err := json.Unmarshal(e.Data, &p)
	return p, err
}

// Events reads GET /events, the account's live event stream, and yields
// each event in order. When the connection ends (a network failure, the
// server restarting, nothing received for IdleTimeout) it reconnects with
// Last-Event-ID, waiting the server's retry time and backing off
// exponentially with jitter while attempts fail, so the events come with
// no gap and no duplicate across reconnections. 429 and 5xx answers are
// retried the same way (429 no sooner than its Retry-After).
//
// The sequence ends when ctx ends or the loop stops, without an error, or
// after yielding an error that retrying cannot cure: an *APIError for a
// refusal (401 for a revoked credential, 403, 400 for a bad filter, 404
// for a line the credential may not use).
func (a *API) Events(ctx context.Context, opts EventsOptions) iter.Seq2[Event, error] {
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 45 * time.Second
	}
	return func(yield func(Event, error) bool) {
		last := opts.After
		retry := time.Second // until the server says (its first line is retry: 1000)
		failures := 0
		for {
			var cause error
			var notBefore time.Duration
			resp, err := a.openEvents(ctx, opts, last)
			switch {
			case ctx.Err() != nil:
				closeBody(resp)
				return
			case err != nil:
				cause = err
				failures++
			case resp.StatusCode == http.StatusOK:
				failures = 0
				p, stop, err := a.readEvents(resp, opts.IdleTimeout, last, yield)
				last = p.lastID
				if p.retry > 0 {
					retry = p.retry
				}
				if stop || ctx.Err() != nil {
					return
				}
				cause = err
			default:
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
				resp.Body.Close()
				apiErr := ResponseError(resp, body).(*APIError)
				if !retryable(resp.StatusCode) {
					yield(Event{}, apiErr)
					return
				}
				if s, err := strconv.Atoi(apiErr.RetryAfter); err == nil && s > 0 {
					notBefore = time.Duration(s) * time.Second
				}
				cause = apiErr
				failures++
			}
			wait := max(backoff(retry, failures, opts.MaxBackoff), notBefore)
			if opts.OnReconnect != nil {
				opts.OnReconnect(cause, wait)
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}

// openEvents sends GET /events resuming after last.
func (a *API) openEvents(ctx context.Context, opts EventsOptions, last string) (*http.Response, error) {
	params := &StreamEventsParams{}
	if len(opts.Types) > 0 {
		params.Types = Ptr(strings.Join(opts.Types, ","))
	}
	if len(opts.Lines) > 0 {
		params.Lines = Ptr(strings.Join(opts.Lines, ","))
	}
	if last != "" {
		params.LastEventID = Ptr(last)
	}
	return a.raw.StreamEvents(ctx, params, func(_ context.Context, req *http.Request) error {
		req.Header.Set("Accept", "text/event-stream")
		return nil
	})
}

// readEvents yields the events of one connection until it ends (err) or
// the consumer stops (stop). The parser it returns holds the last event id
// and the retry time the connection set.
func (a *API) readEvents(resp *http.Response, idle time.Duration, last string, yield func(Event, error) bool) (p *sseParser, stop bool, err error) {
	body := newIdleReader(resp.Body, idle)
	defer body.Close()
	p = newSSEParser(body, last)
	for {
		m, err := p.next()
		if err != nil {
			if body.timedOut() {
				err = errIdle
			}
			return p, false, err
		}
		if !yield(Event{ID: m.id, Type: m.event, Data: json.RawMessage(m.data)}, nil) {
			return p, true, nil
		}
	}
}

var errIdle = errors.New("client: event stream idle for longer than IdleTimeout")

// retryable says whether an answer to GET /events may succeed later.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500
}

// backoff is the wait before a reconnection: the server's retry time after
// a connection that worked, doubling with each failed attempt up to max,
// with "equal jitter" (half fixed, half random) so that the clients of a
// restarted server do not all come back at once.
func backoff(retry time.Duration, failures int, maxWait time.Duration) time.Duration {
	d := retry
	for i := 1; i < failures && d < maxWait; i++ {
		d *= 2
	}
	d = min(d, maxWait)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

func closeBody(resp *http.Response) {
	if resp != nil {
		resp.Body.Close()
	}
}

// idleReader closes the body it wraps when no Read returns data for the
// idle time, which makes the pending Read fail: a connection that died
// without a FIN (a NAT dropping it, a host gone) is noticed.
type idleReader struct {
	rc    io.ReadCloser
	idle  time.Duration
	timer *time.Timer
	mu    sync.Mutex
	fired bool
}

func newIdleReader(rc io.ReadCloser, idle time.Duration) *idleReader {
	r := &idleReader{rc: rc, idle: idle}
	r.timer = time.AfterFunc(idle, func() {
		r.mu.Lock()
		r.fired = true
		r.mu.Unlock()
		rc.Close()
	})
	return r
}

func (r *idleReader) Read(b []byte) (int, error) {
	n, err := r.rc.Read(b)
	if n > 0 {
		r.timer.Reset(r.idle)
	}
	return n, err
}

func (r *idleReader) Close() error {
	r.timer.Stop()
	return r.rc.Close()
}

func (r *idleReader) timedOut() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fired
}
