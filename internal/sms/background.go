package sms

import (
	"cmp"
	"context"
	"time"

	"switchboard/internal/background"
)

// DefaultReconcileAfter is how long a send may stay unanswered before the
// reconciler resolves it, unless the operator says otherwise.
const DefaultReconcileAfter = 2 * time.Minute

// ReconcilerConfig configures the reconciler; zero (or negative) fields take
// the defaults.
type ReconcilerConfig struct {
	// After is how long a message may stay pending before Reconcile resolves
	// it. Default DefaultReconcileAfter.
	After time.Duration
	// Interval is the time between passes. Default: a quarter of After plus
	// a second, at most a minute, so an interrupted send is resolved soon
	// after it becomes old enough.
	Interval time.Duration
}

// Reconciler returns the background service that resolves sends interrupted
// before their outcome was recorded: a Reconcile(After) pass every Interval.
func (s *Service) Reconciler(cfg ReconcilerConfig) *background.Periodic {
	cfg.After = cmp.Or(max(cfg.After, 0), DefaultReconcileAfter)
	cfg.Interval = cmp.Or(max(cfg.Interval, 0), min(cfg.After/4+time.Second, time.Minute))
	return background.NewPeriodic(background.PeriodicConfig{
		Name:     "sms reconciler",
		Interval: cfg.Interval,
		Logger:   s.log,
		Work: func(ctx context.Context) error {
			_, err := s.Reconcile(ctx, cfg.After)
			return err
		},
	})
}

// IdempotencyPruneInterval is how often Idempotency-Key records past their
// TTL are deleted. Often, so that each delete is small: on SQLite it holds
// the one writer every send waits for.
const IdempotencyPruneInterval = time.Minute

// IdempotencyPruner returns the background service that deletes
// Idempotency-Key records past their TTL. (A record past its TTL is ignored
// whether or not it is deleted yet; pruning only bounds the table.)
func (s *Service) IdempotencyPruner() *background.Periodic {
	return background.NewPeriodic(background.PeriodicConfig{
		Name:     "idempotency pruning",
		Interval: IdempotencyPruneInterval,
		Logger:   s.log,
		Work:     s.store.PruneIdempotency,
	})
}
