package webhooks

import (
	"context"
	"log/slog"
	"time"

	"switchboard/internal/background"
	"switchboard/internal/store"
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

// PrunerConfig configures the pruner; zero fields take the defaults.
type PrunerConfig struct {
	Store     *store.Store
	Retention time.Duration
	Interval  time.Duration
	Batch     int
	Log       *slog.Logger
}

// NewPruner returns the background service that deletes webhook history
// past its retention (store.PruneWebhookHistory), batch by batch until none
// is left, every Interval.
func NewPruner(cfg PrunerConfig) *background.Periodic {
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultPruneInterval
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultPruneBatch
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return background.NewPeriodic(background.PeriodicConfig{
		Name:     "webhook pruning",
		Interval: cfg.Interval,
		Logger:   cfg.Log,
		Work: func(ctx context.Context) error {
			prunePreviousSecrets(ctx, cfg) // secretprune.go
			var deliveries, events int
			defer func() {
				if deliveries+events > 0 {
					cfg.Log.Info("webhook history pruned", "deliveries", deliveries, "events", events)
				}
			}()
			for ctx.Err() == nil {
				d, e, err := cfg.Store.PruneWebhookHistory(ctx, cfg.Retention, cfg.Batch)
				deliveries, events = deliveries+d, events+e
				if err != nil || (d < cfg.Batch && e < cfg.Batch) {
					return err
				}
			}
			return nil
		},
	})
}
