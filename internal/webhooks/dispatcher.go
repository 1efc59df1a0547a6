package webhooks

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// DefaultRetrySchedule is how long a failed delivery waits before each retry:
// 11 retries over about 24 hours. Each wait is jittered by up to a tenth.
var DefaultRetrySchedule = []time.Duration{
	time.Second, 5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 8 * time.Hour,
}

// DispatcherConfig configures the dispatcher; zero fields take defaults.
type DispatcherConfig struct {
	Store      *store.Store
	AllowHosts AllowList
	Log        *slog.Logger
	// Registry receives the delivery metrics; nil registers none.
	Registry prometheus.Registerer
	// Timeout bounds one attempt (10 s).
	Timeout time.Duration
	// Workers bounds attempts in flight in this process (64); PerWebhook
	// bounds them per subscription (8), so one slow endpoint holds at most
	// that many workers.
	Workers, PerWebhook int
	// Retry is the wait before each retry (DefaultRetrySchedule); MaxAge
	// gives up a delivery that would be retried more than this long after it
	// was created (26 h).
	Retry  []time.Duration
	MaxAge time.Duration
	// Poll is how often an idle dispatcher looks for work (50 ms); Notify
	// wakes it at once.
	Poll time.Duration
	// Lease is how long a claimed delivery stays this process's (Timeout
	// plus 20 s). A crashed process's deliveries are retried after it.
	Lease time.Duration
	// Owner names this process in leases (store.NewLeaseOwner by default).
	Owner string
	// Finished, when set, receives the number of outcomes after each batch
	// of them is recorded (without blocking): tests wait on it.
	Finished chan<- int
	// Now is the clock (time.Now).
	Now func() time.Time
}

// Dispatcher turns outbox events into deliveries and delivers them. Start
// runs it in the background; Stop ends it.
type Dispatcher struct {
	cfg    DispatcherConfig
	client *http.Client
	log    *slog.Logger

	mu      sync.Mutex
	perHook map[int64]int // attempts in flight per subscription
	busy    atomic.Int64  // deliveries claimed and not yet recorded

	wake    chan struct{}
	results chan result
	cancel  context.CancelFunc
	done    sync.WaitGroup
	workers sync.WaitGroup

	outcomes *prometheus.CounterVec
	latency  prometheus.Histogram
}

type result struct {
	out  store.DeliveryOutcome
	hook int64
}

// NewDispatcher builds a dispatcher with defaults applied.
func NewDispatcher(cfg DispatcherConfig) *Dispatcher {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 64
	}
	if cfg.PerWebhook <= 0 {
		cfg.PerWebhook = 8
	}
	if cfg.Retry == nil {
		cfg.Retry = DefaultRetrySchedule
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = 26 * time.Hour
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 50 * time.Millisecond
	}
	if cfg.Lease <= 0 {
		cfg.Lease = cfg.Timeout + 20*time.Second
	}
	if cfg.Owner == "" {
		cfg.Owner = store.NewLeaseOwner("webhooks")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.AllowHosts == nil {
		cfg.AllowHosts = AllowList{}
	}
	d := &Dispatcher{
		cfg:     cfg,
		client:  newClient(cfg.AllowHosts, cfg.Timeout, cfg.PerWebhook),
		log:     cfg.Log,
		perHook: map[int64]int{},
		wake:    make(chan struct{}, 1),
		results: make(chan result, cfg.Workers),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_webhook_deliveries_total",
			Help: "Webhook delivery outcomes: succeeded, retry (failed, will retry), failed (given up), gone (410, subscription disabled), skipped (subscription disabled), deferred (its subscription was busy).",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "switchboard_webhook_attempt_duration_seconds",
			Help:    "Time from sending a webhook delivery to its answer (or failure).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
	}
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(d.outcomes, d.latency, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "switchboard_webhook_backlog",
			Help: "Webhook deliveries waiting: due now or for a retry.",
		}, func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			n, err := cfg.Store.DeliveryBacklog(ctx)
			if err != nil {
				return -1
			}
			return float64(n)
		}))
	}
	return d
}

// Start runs the dispatcher until Stop.
func (d *Dispatcher) Start(ctx context.Context) {
	ctx, d.cancel = context.WithCancel(ctx)
	d.done.Add(2)
	go func() {
		defer d.done.Done()
		d.loop(ctx)
		d.workers.Wait()
		close(d.results)
	}()
	go func() {
		defer d.done.Done()
		d.finisher()
	}()
}

// Stop ends the dispatcher: attempts in flight are cancelled and their
// deliveries released, due at once, for the next run (or another process).
func (d *Dispatcher) Stop() {
	if d.cancel != nil {
		d.cancel()
	}
	d.done.Wait()
}

// Notify wakes the dispatcher to look for work now.
func (d *Dispatcher) Notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *Dispatcher) loop(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-d.wake:
		}
		more := d.pass(ctx)
		if more {
			t.Reset(0)
		} else {
			t.Reset(d.cfg.Poll)
		}
	}
}

// fanOutBatch is how many events one fan-out transaction takes.
const fanOutBatch = 200

// pass fans out new events and starts attempts for due deliveries, as many
// as there are free workers. It reports whether more work may be waiting.
func (d *Dispatcher) pass(ctx context.Context) (more bool) {
	if ok, err := d.cfg.Store.HasUnfannedEvents(ctx); err != nil {
		d.warn(ctx, "webhooks: look for events", err)
	} else if ok {
		n, _, err := d.cfg.Store.FanOutEvents(ctx, fanOutBatch)
		if err != nil {
			d.warn(ctx, "webhooks: fan out events", err)
		}
		more = n == fanOutBatch
	}
	free := d.cfg.Workers - int(d.busy.Load())
	if free <= 0 {
		return more
	}
	now := d.cfg.Now()
	if ok, err := d.cfg.Store.HasDueDeliveries(ctx, now); err != nil || !ok {
		if err != nil {
			d.warn(ctx, "webhooks: look for deliveries", err)
		}
		return more
	}
	ids, err := d.cfg.Store.Claim(ctx, store.ClaimWebhookDeliveries, d.cfg.Owner, free, d.cfg.Lease)
	if err != nil {
		d.warn(ctx, "webhooks: claim deliveries", err)
		return more
	}
	if len(ids) == 0 {
		return more
	}
	d.busy.Add(int64(len(ids)))
	jobs, err := d.cfg.Store.DeliveryJobs(ctx, ids)
	if err != nil {
		d.warn(ctx, "webhooks: load deliveries", err)
		// The leases run out and the deliveries come back.
		d.busy.Add(-int64(len(ids)))
		return more
	}
	d.busy.Add(int64(len(jobs) - len(ids))) // deleted meanwhile
	for _, j := range jobs {
		d.mu.Lock()
		full := d.perHook[j.WebhookID] >= d.cfg.PerWebhook
		if !full {
			d.perHook[j.WebhookID]++
		}
		d.mu.Unlock()
		if full {
			// Not attempted: due again shortly, behind other work.
			d.results <- result{out: store.DeliveryOutcome{DeliveryID: j.ID, WebhookID: j.WebhookID, State: domain.DeliveryPending, NextAt: d.cfg.Now().Add(100 * time.Millisecond)}}
			continue
		}
		d.workers.Add(1)
		go func() {
			defer d.workers.Done()
			d.results <- result{out: d.attempt(ctx, j), hook: j.WebhookID}
		}()
	}
	return more || len(ids) == free
}

// finisher records outcomes in batches (one transaction each) and frees
// their workers.
func (d *Dispatcher) finisher() {
	var batch []result
	for r := range d.results {
		batch = append(batch[:0], r)
	drain:
		for len(batch) < 256 {
			select {
			case r, ok := <-d.results:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		outs := make([]store.DeliveryOutcome, len(batch))
		for i, r := range batch {
			outs[i] = r.out
		}
		// Recorded even while stopping: an attempt made must not be lost.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := d.cfg.Store.FinishDeliveries(ctx, d.cfg.Owner, outs)
		cancel()
		if err != nil {
			// Leases run out and the deliveries are attempted again, with
			// the same webhook-id.
			d.log.Error("webhooks: record outcomes", "err", err, "count", len(outs))
		}
		d.mu.Lock()
		for _, r := range batch {
			if r.hook != 0 {
				if d.perHook[r.hook]--; d.perHook[r.hook] <= 0 {
					delete(d.perHook, r.hook)
				}
			}
		}
		d.mu.Unlock()
		for _, o := range outs {
			d.outcomes.WithLabelValues(outcomeLabel(o)).Inc()
		}
		d.busy.Add(-int64(len(batch)))
		d.Notify()
		if d.cfg.Finished != nil {
			select {
			case d.cfg.Finished <- len(batch):
			default:
			}
		}
	}
}

func outcomeLabel(o store.DeliveryOutcome) string {
	switch {
	case o.Attempt == nil && o.State == domain.DeliverySkipped:
		return "skipped"
	case o.Attempt == nil:
		return "deferred"
	case o.Disable:
		return "gone"
	case o.State == domain.DeliverySucceeded:
		return "succeeded"
	case o.State == domain.DeliveryFailed:
		return "failed"
	}
	return "retry"
}

// responseExcerpt is how much of an endpoint's answer an attempt keeps.
const responseExcerpt = 1024

// attempt makes one delivery attempt and decides what follows.
func (d *Dispatcher) attempt(ctx context.Context, j store.DeliveryJob) store.DeliveryOutcome {
	out := store.DeliveryOutcome{DeliveryID: j.ID, WebhookID: j.WebhookID}
	if !j.Webhook.Enabled {
		out.State = domain.DeliverySkipped
		return out
	}
	ex := d.send(ctx, j)
	if ex.stopped {
		// Stopping: not an attempt; due again at once.
		out.State, out.NextAt = domain.DeliveryPending, d.cfg.Now()
		return out
	}
	out.Attempt, out.Response = &ex.attempt, ex.response
	switch {
	case ex.ok():
		out.State, out.ClearBackoff = domain.DeliverySucceeded, true
		return out
	case ex.attempt.StatusCode == http.StatusGone:
		// The receiver says the endpoint is gone for good.
		out.State, out.Disable = domain.DeliveryFailed, true
		return out
	}
	return d.failed(j, out, ex.retryAfter)
}

// exchange is what one signed POST of a delivery came to.
type exchange struct {
	attempt domain.WebhookAttempt
	// response is the start of the endpoint's answer.
	response string
	// retryAfter is the wait a failed answer asked for (Retry-After), or 0.
	retryAfter time.Duration
	// stopped: ctx ended before the endpoint answered, which is no attempt.
	stopped bool
}

// ok reports whether the endpoint acknowledged the delivery (2xx).
func (ex exchange) ok() bool { return ex.attempt.StatusCode >= 200 && ex.attempt.StatusCode < 300 }

// send signs a delivery's event and POSTs it to the subscription's URL once.
func (d *Dispatcher) send(ctx context.Context, j store.DeliveryJob) (ex exchange) {
	now := d.cfg.Now()
	ex.attempt.At = now
	msgID := j.MessageID()
	body, err := Body(msgID, j.EventType, j.EventAt, j.Payload)
	if err != nil {
		ex.attempt.Error = err.Error()
		return ex
	}
	secrets := []string{j.Webhook.Secret}
	if j.Webhook.PreviousSecret != "" && now.Before(j.Webhook.PreviousUntil) {
		secrets = append(secrets, j.Webhook.PreviousSecret)
	}
	sig, err := signatures(secrets, msgID, now, body)
	if err != nil {
		ex.attempt.Error = err.Error()
		return ex
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.Webhook.URL, bytes.NewReader(body))
	if err != nil {
		ex.attempt.Error = "bad url: " + err.Error()
		return ex
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Switchboard-Webhooks/1")
	req.Header.Set("Webhook-Id", msgID)
	req.Header.Set("Webhook-Timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("Webhook-Signature", sig)

	started := time.Now()
	resp, err := d.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			ex.stopped = true
			return ex
		}
		ex.attempt.Latency = time.Since(started)
		d.latency.Observe(ex.attempt.Latency.Seconds())
		ex.attempt.Error = attemptError(err)
		return ex
	}
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, responseExcerpt))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	resp.Body.Close()
	ex.attempt.Latency = time.Since(started)
	d.latency.Observe(ex.attempt.Latency.Seconds())
	ex.attempt.StatusCode, ex.response = resp.StatusCode, string(excerpt)
	if !ex.ok() {
		ex.attempt.Error = "HTTP " + strconv.Itoa(resp.StatusCode)
		ex.retryAfter = retryAfter(resp.Header.Get("Retry-After"), now)
	}
	return ex
}

// failed schedules the next try of a failed attempt, or gives up.
func (d *Dispatcher) failed(j store.DeliveryJob, out store.DeliveryOutcome, after time.Duration) store.DeliveryOutcome {
	now := d.cfg.Now()
	n := j.Attempts // retries so far: the attempt just made is number n+1
	if n >= len(d.cfg.Retry) {
		out.State = domain.DeliveryFailed
		return out
	}
	wait := d.cfg.Retry[n]
	wait += time.Duration(rand.Int64N(int64(wait)/10 + 1))
	if after > 0 {
		// The receiver asked for a time: honour it, within reason.
		wait = min(after, 6*time.Hour)
	}
	next := now.Add(wait)
	if next.Sub(j.CreatedAt) > d.cfg.MaxAge {
		out.State = domain.DeliveryFailed
		return out
	}
	out.State, out.NextAt, out.Backoff = domain.DeliveryPending, next, true
	return out
}

// retryAfter reads a Retry-After header: seconds or an HTTP date. Zero when
// absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
		if s < 1 {
			s = 1
		}
		return time.Duration(min(s, 1<<30)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), time.Second)
	}
	return 0
}

// attemptError describes a failed exchange without echoing anything secret.
func attemptError(err error) string {
	var ue interface{ Timeout() bool }
	if errors.As(err, &ue) && ue.Timeout() {
		return "timed out"
	}
	msg := err.Error()
	if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, "Post ") {
		msg = msg[i+2:] // drop `Post "url":`
	}
	if len(msg) > 300 {
		msg = msg[:300]
	}
	return msg
}

func (d *Dispatcher) warn(ctx context.Context, msg string, err error) {
	if ctx.Err() == nil {
		d.log.Warn(msg, "err", err)
	}
}
