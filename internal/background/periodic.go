package background

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// DefaultInterval is a Periodic's interval when its Config sets none.
const DefaultInterval = time.Minute

// PeriodicConfig configures a Periodic.
type PeriodicConfig struct {
	// Name identifies the work in logs.
	Name string
	// Interval is the time from the end of one pass to the start of the
	// next. Default (zero or negative) DefaultInterval.
	Interval time.Duration
	// Work is one pass. Its context ends when the service stops; an error
	// is logged (unless the service is stopping) and the next pass runs as
	// planned.
	Work func(ctx context.Context) error
	// Logger receives failed passes. Default: discard.
	Logger *slog.Logger
}

// PeriodicSignals are the test signals of a Periodic.
type PeriodicSignals struct {
	// Pass fires after every pass with its error (nil when it succeeded).
	Pass Signal[error]
}

// Init switches every signal on; call it before Start.
func (s *PeriodicSignals) Init() { s.Pass.Init() }

// Periodic is a Service that runs a pass at start, then one Interval after
// each pass ends, or sooner when woken.
type Periodic struct {
	// TestSignals lets tests wait for passes instead of sleeping.
	TestSignals PeriodicSignals

	cfg  PeriodicConfig
	wake chan struct{}

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{} // closed when the loop has returned; nil when not started
}

// NewPeriodic returns a stopped Periodic with cfg's defaults applied.
func NewPeriodic(cfg PeriodicConfig) *Periodic {
	cfg.Interval = cmp.Or(max(cfg.Interval, 0), DefaultInterval)
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	cfg.Name = cmp.Or(cfg.Name, "periodic")
	return &Periodic{cfg: cfg, wake: make(chan struct{}, 1)}
}

// Interval reports the interval in use (the configured one or the default).
func (p *Periodic) Interval() time.Duration { return p.cfg.Interval }

// Start runs the first pass at once and the later ones on schedule, until
// Stop or until ctx ends.
func (p *Periodic) Start(ctx context.Context) error {
	if p.cfg.Work == nil {
		return fmt.Errorf("background: %s has no Work", p.cfg.Name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done != nil {
		return fmt.Errorf("background: %s already started", p.cfg.Name)
	}
	ctx, p.cancel = context.WithCancel(ctx)
	p.done = make(chan struct{})
	go p.loop(ctx, p.done)
	return nil
}

// Stop cancels the pass under way, if any, and waits for it to return.
func (p *Periodic) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		return
	}
	p.cancel()
	<-p.done
	p.done, p.cancel = nil, nil
}

// Wake asks for a pass now, without waiting for it. Wakes that arrive while
// a pass runs are folded into one more pass after it (the work they announce
// may have come too late for the pass under way).
func (p *Periodic) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *Periodic) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTimer(p.cfg.Interval)
	defer t.Stop()
	for {
		p.pass(ctx)
		t.Reset(p.cfg.Interval)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.wake:
		}
	}
}

// pass runs Work once. A panic is a failed pass, not a crashed server.
func (p *Periodic) pass(ctx context.Context) {
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return p.cfg.Work(ctx)
	}()
	if err != nil && ctx.Err() == nil {
		p.cfg.Logger.Error("background pass failed", "service", p.cfg.Name, "err", err)
	}
	p.TestSignals.Pass.Signal(err)
}
