package background

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// Service is one piece of background work.
type Service interface {
	// Start begins the work and returns once it is under way; the work runs
	// until Stop is called or ctx ends. It fails only if the work cannot
	// start at all.
	Start(ctx context.Context) error
	// Stop ends the work and returns once it has ended. It may be called
	// more than once, and on a service that never started.
	Stop()
}

// Config configures a Runner.
type Config struct {
	Logger *slog.Logger // default: discard
}

// Runner starts a set of services together and stops them together, in
// reverse order.
type Runner struct {
	log      *slog.Logger
	mu       sync.Mutex
	services []named
	running  int // how many of services, from the first, are started
}

type named struct {
	name string
	svc  Service
}

// New returns an empty runner.
func New(cfg Config) *Runner {
	return &Runner{log: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))}
}

// Add registers s under name (used in logs). Services are added before Start.
func (r *Runner) Add(name string, s Service) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.services = append(r.services, named{name, s})
}

// Start starts every service in the order added. If one fails to start, the
// ones already started are stopped and its error is returned.
func (r *Runner) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.running < len(r.services) {
		n := r.services[r.running]
		if err := n.svc.Start(ctx); err != nil {
			r.stopLocked()
			return fmt.Errorf("background: start %s: %w", n.name, err)
		}
		r.log.Debug("background service started", "service", n.name)
		r.running++
	}
	return nil
}

// Stop stops the started services, last started first, each waited for.
func (r *Runner) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopLocked()
}

func (r *Runner) stopLocked() {
	for r.running > 0 {
		r.running--
		n := r.services[r.running]
		n.svc.Stop()
		r.log.Debug("background service stopped", "service", n.name)
	}
}
