package webhooks

import (
	"cmp"
	"context"
	"time"

	"switchboard/internal/background"
)

// Pruning defaults.
const (
	// DefaultRetention is how long a finished delivery, its attempts and a
	// delivered event are kept (serve --webhook-retention).
	DefaultRetention = 30 * 24 * time.Hour
	// DefaultPruneInterval is how often the pruner looks.
	DefaultPruneInterval = 10 * time.Minute
	// DefaultPruneBatch is how many rows of each kind one transaction
	// deletes: small, because on SQLite it holds the one writer.
	DefaultPruneBatch = 1000
)

// PrunerConfig configures the pruner; zero (or negative) fields take the
// defaults. The retention is the service's (Config.Retention), the one a
// recover window is bounded by.
type PrunerConfig struct {
	Interval time.Duration
	Batch    int
}

// Pruner returns the background service that deletes webhook history past
// the service's retention (store.PruneWebhookHistory), batch by batch until
// none is left, every Interval, and expired previous signing secrets.
func (s *Service) Pruner(cfg PrunerConfig) *background.Periodic {
	cfg.Interval = cmp.Or(max(cfg.Interval, 0), DefaultPruneInterval)
	cfg.Batch = cmp.Or(max(cfg.Batch, 0), DefaultPruneBatch)
	return background.NewPeriodic(background.PeriodicConfig{
		Name:     "webhook pruning",
		Interval: cfg.Interval,
		Logger:   s.log,
		Work: func(ctx context.Context) error {
			s.prunePreviousSecrets(ctx, cfg.Batch) // secretprune.go
			var deliveries, events int
			defer func() {
				if deliveries+events > 0 {
					s.log.Info("webhook history pruned", "deliveries", deliveries, "events", events)
				}
			}()
			for ctx.Err() == nil {
				d, e, err := s.store.PruneWebhookHistory(ctx, s.retention, cfg.Batch)
				deliveries, events = deliveries+d, events+e
				if err != nil || (d < cfg.Batch && e < cfg.Batch) {
					return err
				}
			}
			return nil
		},
	})
}
