package webhooks

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
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

	"switchboard/internal/background"
	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// DefaultRetrySchedule is how long a failed delivery waits before each retry:
// 11 retries over about 24 hours. Each wait is jittered by up to a tenth.
var DefaultRetrySchedule = []time.Duration{
	time.Second, 5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour, 8 * time.Hour,
}

// Dispatcher defaults.
const (
	// DefaultAttemptTimeout bounds one delivery attempt.
	DefaultAttemptTimeout = 10 * time.Second
	// DefaultWorkers bounds the attempts in flight in one process, and
	// DefaultPerWebhook those of one subscription.
	DefaultWorkers    = 256
	DefaultPerWebhook = 8
	// DefaultMaxAge is how long after its creation a delivery may still be
	// retried.
	DefaultMaxAge = 26 * time.Hour
	// DefaultPoll is how often an idle dispatcher looks for work.
	DefaultPoll = 50 * time.Millisecond
	// leaseOverTimeout is how much longer than an attempt a claimed
	// delivery's lease lasts by default.
	leaseOverTimeout = 20 * time.Second
)

// DispatcherConfig configures the dispatcher; zero (or negative) fields take
// the defaults. Its store, allow list and log are the Service's.
type DispatcherConfig struct {
	// Registry receives the delivery metrics; nil registers none.
	Registry prometheus.Registerer
	// Timeout bounds one attempt (DefaultAttemptTimeout).
	Timeout time.Duration
	// Workers bounds attempts in flight in this process (DefaultWorkers);
	// PerWebhook bounds them per subscription (DefaultPerWebhook), so one
	// slow endpoint holds at most that many workers. Workers are goroutines
	// waiting on the network: there are enough that 10 endpoints hanging
	// until the timeout (80 workers) leave most of them to the healthy ones.
	Workers, PerWebhook int
	// Retry is the wait before each retry: nil means DefaultRetrySchedule,
	// an empty (non-nil) schedule never retries. MaxAge gives up a delivery
	// that would be retried more than this long after it was created
	// (DefaultMaxAge).
	Retry  []time.Duration
	MaxAge time.Duration
	// Poll is how often an idle dispatcher looks for work (DefaultPoll);
	// Wake wakes it at once.
	Poll time.Duration
	// Lease is how long a claimed delivery stays this process's (Timeout
	// plus 20 s). A crashed process's deliveries are retried after it.
	Lease time.Duration
	// Owner names this process in leases (store.NewLeaseOwner by default).
	Owner string
	// Now is the clock (time.Now).
	Now func() time.Time
}

// withDefaults returns cfg with every default applied: the one place they
// are.
func (cfg DispatcherConfig) withDefaults() DispatcherConfig {
	cfg.Timeout = cmp.Or(max(cfg.Timeout, 0), DefaultAttemptTimeout)
	cfg.Workers = cmp.Or(max(cfg.Workers, 0), DefaultWorkers)
	cfg.PerWebhook = cmp.Or(max(cfg.PerWebhook, 0), DefaultPerWebhook)
	if cfg.Retry == nil {
		cfg.Retry = DefaultRetrySchedule
	}
	cfg.MaxAge = cmp.Or(max(cfg.MaxAge, 0), DefaultMaxAge)
	cfg.Poll = cmp.Or(max(cfg.Poll, 0), DefaultPoll)
	cfg.Lease = cmp.Or(max(cfg.Lease, 0), cfg.Timeout+leaseOverTimeout)
	cfg.Owner = cmp.Or(cfg.Owner, store.NewLeaseOwner("webhooks"))
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg
}

// DispatchSignals are the test signals of a Dispatcher.
type DispatchSignals struct {
	// Pass fires after every pass (fan-out and claims) with its error.
	Pass background.Signal[error]
	// Recorded fires once a batch of outcomes is committed, with its size.
	Recorded background.Signal[int]
}

// Init switches every signal on; call it before Start.
func (s *DispatchSignals) Init() { s.Pass.Init(); s.Recorded.Init() }

// Dispatcher turns outbox events into deliveries and delivers them: a
// background.Service. Its passes (a background.Periodic) fan out new events
// and claim due deliveries; each claimed delivery is attempted by a worker
// of its own, and one finisher records the outcomes in batches.
type Dispatcher struct {
	// TestSignals lets tests wait for passes and outcomes instead of sleeping.
	TestSignals DispatchSignals

	cfg    DispatcherConfig
	st     *store.Store
	client *http.Client
	log    *slog.Logger
	p      *background.Periodic
	// heldBack is the pause before looking again for events that a pass
	// found but could not fan out yet (see retryHeldBack); only the passes
	// use it, one at a time.
	heldBack time.Duration

	mu    sync.Mutex
	slots hookSlots // attempts in flight (made, not yet recorded) per subscription, test sends' too (slots.go)
	// queued are claimed deliveries waiting for a slot of their
	// subscription: the finisher starts one as it frees a slot. At most
	// PerWebhook per subscription, so that each starts well within its
	// lease even behind attempts that run to the timeout.
	queued   map[int64][]queuedJob
	stopping bool         // Stop has taken the queue: no more starts
	busy     atomic.Int64 // deliveries claimed and not yet recorded

	life     sync.Mutex    // serialises Start and Stop
	results  chan result   // to the finisher; nil when stopped
	finished chan struct{} // closed when the finisher has returned
	workers  sync.WaitGroup

	outcomes *prometheus.CounterVec
	latency  prometheus.Histogram
}

type result struct {
	out  store.DeliveryOutcome
	hook int64 // the subscription whose slot the attempt held; 0 for none
}

type queuedJob struct {
	ctx context.Context
	job store.DeliveryJob
}

// Dispatcher returns a stopped dispatcher of the service's subscriptions, a
// background.Service: cmd/switchboard adds it to the runner. Test events
// (POST /webhooks/{id}/test) are sent through the last one built, sharing
// its client, metrics and per-subscription slots, so build it before the
// service answers requests. Several may run on one database (and in one
// process, as tests of several nodes do): they claim deliveries.
func (s *Service) Dispatcher(cfg DispatcherConfig) *Dispatcher {
	d := s.newDispatcher(cfg)
	s.sender = d
	return d
}

// newDispatcher builds a dispatcher with cfg's defaults applied.
func (s *Service) newDispatcher(cfg DispatcherConfig) *Dispatcher {
	cfg = cfg.withDefaults()
	d := &Dispatcher{
		cfg:    cfg,
		st:     s.store,
		client: newClient(s.allow, cfg.Timeout, cfg.Workers),
		log:    s.log,
		slots:  newHookSlots(cfg.PerWebhook),
		queued: map[int64][]queuedJob{},
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
	d.p = background.NewPeriodic(background.PeriodicConfig{Name: "webhook dispatcher", Interval: cfg.Poll, Logger: s.log, Work: d.work})
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(d.outcomes, d.latency, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "switchboard_webhook_backlog",
			Help: "Webhook deliveries waiting: due now or for a retry.",
		}, func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			n, err := s.store.DeliveryBacklog(ctx)
			if err != nil {
				return -1
			}
			return float64(n)
		}))
	}
	return d
}

// Start runs the dispatcher until Stop: the first pass at once, then one
// whenever woken or every Poll.
func (d *Dispatcher) Start(ctx context.Context) error {
	d.life.Lock()
	defer d.life.Unlock()
	if d.results != nil {
		return errors.New("webhooks: dispatcher already started")
	}
	d.results, d.finished = make(chan result, d.cfg.Workers), make(chan struct{})
	d.mu.Lock()
	d.stopping = false
	d.mu.Unlock()
	go d.finisher(d.results, d.finished)
	if err := d.p.Start(ctx); err != nil {
		d.stopFinisher()
		return err
	}
	// Events committed in this process wake it at once; the poll finds
	// other processes' events.
	d.st.OnEvents(d.Wake)
	return nil
}

// Stop ends the dispatcher: attempts in flight are cancelled and their
// deliveries released, due at once, for the next run (or another process).
// It returns once every outcome is recorded.
func (d *Dispatcher) Stop() {
	d.life.Lock()
	defer d.life.Unlock()
	if d.results == nil {
		return
	}
	d.st.OnEvents(nil)
	d.p.Stop() // cancels the attempts, which the passes started
	// Claimed deliveries still waiting for a slot are released, due now.
	d.mu.Lock()
	d.stopping = true
	var left []queuedJob
	for h, q := range d.queued {
		left = append(left, q...)
		delete(d.queued, h)
	}
	d.mu.Unlock()
	for _, q := range left {
		d.results <- result{out: store.DeliveryOutcome{DeliveryID: q.job.ID, WebhookID: q.job.WebhookID, State: domain.DeliveryPending, NextAt: d.cfg.Now()}}
	}
	d.workers.Wait()
	d.stopFinisher()
}

func (d *Dispatcher) stopFinisher() {
	close(d.results)
	<-d.finished
	d.results, d.finished = nil, nil
}

// Wake asks for a pass now, without waiting for it.
func (d *Dispatcher) Wake() { d.p.Wake() }

// work is one pass of the Periodic: passes back to back while work may be
// waiting.
func (d *Dispatcher) work(ctx context.Context) error {
	for {
		more, held, err := d.pass(ctx)
		d.TestSignals.Pass.Signal(err)
		d.retryHeldBack(held)
		if !more || ctx.Err() != nil {
			return err
		}
	}
}

// retryHeldBack wakes the dispatcher again shortly after a pass that found
// events it could not fan out: on PostgreSQL an event waits while a
// transaction that began before it commits is still running
// (store.FanOutEvents), and the commit that woke the pass wakes no other.
// The pause doubles, from a millisecond up to Poll (when the poll takes
// over), while events stay held back.
func (d *Dispatcher) retryHeldBack(held bool) {
	if !held {
		d.heldBack = 0
		return
	}
	d.heldBack = min(max(2*d.heldBack, time.Millisecond), d.cfg.Poll)
	if d.heldBack < d.cfg.Poll {
		time.AfterFunc(d.heldBack, d.Wake)
	}
}

// fanOutBatch is how many events one fan-out transaction takes.
const fanOutBatch = 200

// pass fans out new events, does a batch of each recover job due, and
// starts attempts for due deliveries, as many
// as there are free workers. It reports whether more work may be waiting,
// and whether events were waiting that it could not fan out yet. A failed
// fan-out does not keep due deliveries from being attempted.
func (d *Dispatcher) pass(ctx context.Context) (more, held bool, err error) {
	if ok, ferr := d.st.HasUnfannedEvents(ctx); ferr != nil {
		err = fmt.Errorf("webhooks: look for events: %w", ferr)
	} else if ok {
		n, _, ferr := d.st.FanOutEvents(ctx, fanOutBatch)
		if ferr != nil {
			err = fmt.Errorf("webhooks: fan out events: %w", ferr)
		}
		more, held = n == fanOutBatch, n == 0 && ferr == nil
	}
	due, recovering, derr := d.st.DueWebhookWork(ctx, d.cfg.Now())
	if derr != nil {
		return more, held, errors.Join(err, fmt.Errorf("webhooks: look for deliveries and recover jobs: %w", derr))
	}
	// Recover jobs queue deliveries (or make them due): before the claim.
	if recovering {
		rmore, rerr := d.recoverBatches(ctx)
		if rerr != nil {
			err = errors.Join(err, rerr)
		}
		more, due = more || rmore, true
	}
	free := d.cfg.Workers - int(d.busy.Load())
	if free <= 0 || !due {
		return more, held, err
	}
	// Subscriptions with a full hand (every slot and queue place taken) are
	// left out of the claim: their deliveries would only go back.
	var skip []int64
	d.mu.Lock()
	for h, q := range d.queued {
		if len(q) >= d.cfg.PerWebhook {
			skip = append(skip, h)
		}
	}
	d.mu.Unlock()
	ids, cerr := d.st.ClaimDeliveries(ctx, d.cfg.Owner, free, d.cfg.Lease, skip)
	if cerr != nil {
		return more, held, errors.Join(err, fmt.Errorf("webhooks: claim deliveries: %w", cerr))
	}
	if len(ids) == 0 {
		return more, held, err
	}
	d.busy.Add(int64(len(ids)))
	jobs, jerr := d.st.DeliveryJobs(ctx, ids)
	if jerr != nil {
		// The leases run out and the deliveries come back.
		d.busy.Add(-int64(len(ids)))
		return more, held, errors.Join(err, fmt.Errorf("webhooks: load deliveries: %w", jerr))
	}
	d.busy.Add(int64(len(jobs) - len(ids))) // deleted meanwhile
	// Set while started: Stop waits for the passes before clearing it.
	results := d.results
	for _, j := range jobs {
		h := j.WebhookID
		d.mu.Lock()
		start := d.slots.take(h)
		wait := !start && len(d.queued[h]) < d.cfg.PerWebhook
		switch {
		case start:
			d.workers.Add(1)
		case wait:
			d.queued[h] = append(d.queued[h], queuedJob{ctx, j})
		}
		d.mu.Unlock()
		switch {
		case start:
			go d.run(ctx, j, results)
		case !wait:
			// Not attempted: due again shortly, behind other work.
			results <- result{out: store.DeliveryOutcome{DeliveryID: j.ID, WebhookID: h, State: domain.DeliveryPending, NextAt: d.cfg.Now().Add(100 * time.Millisecond)}}
		}
	}
	return more || len(ids) == free, held, err
}

// run attempts j in a slot of its subscription, taken by the caller.
func (d *Dispatcher) run(ctx context.Context, j store.DeliveryJob, results chan<- result) {
	defer d.workers.Done()
	results <- result{out: d.attempt(ctx, j), hook: j.WebhookID}
}

// finisher records outcomes in batches (one transaction each) and frees
// their slots, each to the next delivery queued for the same subscription if
// there is one, until results is closed; then it closes done. A slot is
// freed only once its attempt is recorded, so a crash repeats at most
// PerWebhook attempts per subscription.
func (d *Dispatcher) finisher(results chan result, done chan<- struct{}) {
	defer close(done)
	var batch []result
	for r := range results {
		batch = append(batch[:0], r)
	drain:
		for len(batch) < 256 {
			select {
			case r, ok := <-results:
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
		_, err := d.st.FinishDeliveries(ctx, d.cfg.Owner, outs)
		cancel()
		if err != nil {
			// Leases run out and the deliveries are attempted again, with
			// the same webhook-id.
			d.log.Error("webhooks: record outcomes", "err", err, "count", len(outs))
		}
		var next []queuedJob
		d.mu.Lock()
		for _, r := range batch {
			if r.hook == 0 {
				continue
			}
			// The slot passes on to the subscription's next delivery, if any.
			if q, ok := d.freeSlot(r.hook); ok {
				next = append(next, q)
			}
		}
		d.mu.Unlock()
		for _, q := range next {
			go d.run(q.ctx, q.job, results)
		}
		for _, o := range outs {
			d.outcomes.WithLabelValues(outcomeLabel(o)).Inc()
		}
		d.busy.Add(-int64(len(batch)))
		d.Wake() // workers are free
		d.TestSignals.Recorded.Signal(len(batch))
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
	sig, err := signatures(signingSecrets(j.Webhook, now), msgID, now, body)
	if err != nil {
		ex.attempt.Error = err.Error()
		return ex
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.Webhook.URL, bytes.NewReader(body))
	if err != nil {
		ex.attempt.Error = d.attemptFailed(j, err)
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
		ex.attempt.Error = d.attemptFailed(j, err)
		return ex
	}
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, responseExcerpt))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	resp.Body.Close()
	ex.attempt.Latency = time.Since(started)
	d.latency.Observe(ex.attempt.Latency.Seconds())
	ex.attempt.StatusCode, ex.response = resp.StatusCode, string(excerpt)
	if !ex.ok() {
		ex.attempt.Error = statusError(resp.StatusCode)
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
