package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"math/rand/v2"
	"mime"
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
	// failing; default 30 s, never less than MinReconnectWait. The first
	// wait is the server's retry (1 s), never less than MinReconnectWait.
	MaxBackoff time.Duration
	// MaxMessageSize bounds one message of the stream, all of its lines
	// together; default DefaultMaxMessageSize. A longer message ends the
	// sequence with an error: the reader never holds more.
	MaxMessageSize int
	// IdleTimeout is how long a connection may send nothing, not even the
	// server's keepalive (every 15 s) or, at first, its answer's header,
	// before it is taken for dead and replaced; default 45 s.
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

// MinReconnectWait is the least wait before any reconnection, whatever the
// server's retry field says: a server that asks for retry: 1 and closes at
// once cannot make the client hammer it.
const MinReconnectWait = time.Second

// DefaultMaxMessageSize is EventsOptions.MaxMessageSize's default. The
// server's longest message is one event's JSON, far below.
const DefaultMaxMessageSize = 8 << 20

// healthyConnection is how long a connection that delivered no event must
// have lasted to count as working, which resets the backoff: a server that
// answers 200 and closes at once is backed off from like one that fails.
const healthyConnection = 10 * time.Second

// Events reads GET /events, the account's live event stream, and yields
// each event in order. When the connection ends (a network failure, the
// server restarting, nothing received for IdleTimeout) it reconnects with
// Last-Event-ID, waiting the server's retry time (at least
// MinReconnectWait) and backing off exponentially with jitter while
// attempts fail, so the events come with no gap and no duplicate across
// reconnections. A connection counts as working, which ends the backoff,
// once it delivered an event or stayed open 10 s. 429 and 5xx answers are
// retried the same way (429 no sooner than its Retry-After).
//
// The sequence ends when ctx ends or the loop stops, without an error, or
// after yielding an error that retrying cannot cure: an *APIError for a
// refusal (401 for a revoked credential, 403, 400 for a bad filter, 404
// for a line the credential may not use), an *UnexpectedResponseError for
// an answer that is not an event stream (another 2xx, a proxy's HTML
// page), or a message longer than MaxMessageSize.
func (a *API) Events(ctx context.Context, opts EventsOptions) iter.Seq2[Event, error] {
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	opts.MaxBackoff = max(opts.MaxBackoff, MinReconnectWait)
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 45 * time.Second
	}
	if opts.MaxMessageSize <= 0 {
		opts.MaxMessageSize = DefaultMaxMessageSize
	}
	return func(yield func(Event, error) bool) {
		st := streamState{last: opts.After, retry: MinReconnectWait}
		for {
			cause, notBefore, end := a.connect(ctx, opts, &st, yield)
			if end {
				return
			}
			st.failures++
			wait := max(backoff(st.retry, st.failures, opts.MaxBackoff), notBefore)
			if opts.OnReconnect != nil {
				opts.OnReconnect(cause, wait)
			}
			if !a.sleep(ctx, wait) {
				return
			}
		}
	}
}

// streamState is what the stream carries from one connection to the next.
type streamState struct {
	last     string        // the id to resume after
	retry    time.Duration // the server's retry time, at least MinReconnectWait
	failures int           // attempts since the last connection that worked
}

// wantStream is the answer Events asks for, as errors name it.
const wantStream = "200 text/event-stream"

// connect makes one connection of the stream and yields its events until
// it ends. end says the sequence is over: ctx ended, the consumer stopped,
// or an error retrying cannot cure was yielded. Otherwise cause is why the
// connection ended or could not be made, and notBefore the least wait the
// server asked for (Retry-After).
func (a *API) connect(ctx context.Context, opts EventsOptions, st *streamState, yield func(Event, error) bool) (cause error, notBefore time.Duration, end bool) {
	opened := a.now()
	// A server that takes the connection and never answers is given up on
	// like a silent one: the request's context ends after IdleTimeout
	// unless the header came.
	connCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	headerTimer := time.AfterFunc(opts.IdleTimeout, cancel)
	resp, err := a.openEvents(connCtx, opts, st.last)
	headerInTime := headerTimer.Stop()
	switch {
	case ctx.Err() != nil:
		closeBody(resp)
		return nil, 0, true
	case err != nil && !headerInTime:
		return errIdle, 0, false
	case err != nil:
		return err, 0, false
	case retryable(resp.StatusCode):
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			notBefore = time.Duration(s) * time.Second
		}
		return answerError(resp, wantStream), notBefore, false
	case !isEventStream(resp):
		yield(Event{}, answerError(resp, wantStream))
		return nil, 0, true
	}
	c := a.readEvents(resp, opts, st.last, yield)
	st.last = c.lastID
	if c.retry > 0 {
		st.retry = max(c.retry, MinReconnectWait)
	}
	switch {
	case c.stop || ctx.Err() != nil:
		return nil, 0, true
	case errors.Is(c.err, errSSEMessageTooLong):
		yield(Event{}, c.err) // resuming, the server would send it again
		return nil, 0, true
	}
	if c.events > 0 || a.now().Sub(opened) >= healthyConnection {
		st.failures = 0
	}
	return c.err, 0, false
}

// isEventStream says whether resp is the stream itself: anything else
// (another 2xx, another content type) is not read as one.
func isEventStream(resp *http.Response) bool {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return resp.StatusCode == http.StatusOK && err == nil && mt == "text/event-stream"
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

// connection is how one connection of the stream went.
type connection struct {
	lastID string        // the last event id as of its last whole message
	retry  time.Duration // the retry time it set (0: none)
	events int           // how many events it delivered
	stop   bool          // the consumer stopped
	err    error         // why it ended otherwise
}

// readEvents yields the events of one connection until it ends or the
// consumer stops.
func (a *API) readEvents(resp *http.Response, opts EventsOptions, last string, yield func(Event, error) bool) (c connection) {
	body := newIdleReader(resp.Body, opts.IdleTimeout)
	defer body.Close()
	p := newSSEParser(body, last, opts.MaxMessageSize)
	defer func() { c.lastID, c.retry = p.lastID, p.retry }()
	for {
		m, err := p.next()
		if err != nil {
			if body.timedOut() {
				err = errIdle
			}
			c.err = err
			return c
		}
		c.events++
		if !yield(Event{ID: m.id, Type: m.event, Data: json.RawMessage(m.data)}, nil) {
			c.stop = true
			return c
		}
	}
}

var errIdle = errors.New("client: event stream silent (no answer, no data) for longer than IdleTimeout")

// retryable says whether an answer to GET /events may succeed later.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500
}

// backoff is the wait before a reconnection: the server's retry time after
// a connection that worked (failures 1), doubling with each attempt since
// up to maxWait, with "equal jitter" (half fixed, half random) so that the
// clients of a restarted server do not all come back at once; never less
// than MinReconnectWait.
func backoff(retry time.Duration, failures int, maxWait time.Duration) time.Duration {
	d := min(retry, maxWait)
	for i := 1; i < failures && d < maxWait; i++ {
		d += min(d, maxWait-d) // doubles, up to maxWait without overflow
	}
	return max(d/2+rand.N(d/2+1), MinReconnectWait)
}

// sleepCtx waits d unless ctx ends first (false).
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
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
