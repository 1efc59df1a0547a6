package sms

import (
	"cmp"
	"context"
	"time"

	"switchboard/internal/background"
)

// Hosted media cleanup defaults.
const (
	// MediaUnusedFor is how long a hosted file that no message or pending
	// schedule uses is kept: 24 hours after its upload if it was never
	// used, or after the last schedule using it was cancelled (or skipped).
	// Long enough to upload in the evening and schedule in the morning.
	MediaUnusedFor = 24 * time.Hour
	// DefaultMediaCleanupInterval is how often the cleanup looks.
	DefaultMediaCleanupInterval = 10 * time.Minute
	// DefaultMediaCleanupBatch is how many files one transaction removes:
	// small, because on SQLite it holds the one writer.
	DefaultMediaCleanupBatch = 500
)

// MediaCleanupConfig configures the cleanup; zero (or negative) fields take
// the defaults.
type MediaCleanupConfig struct {
	UnusedFor time.Duration
	Interval  time.Duration
	Batch     int
}

// MediaCleanup returns the background service that removes hosted files no
// message or pending schedule has used for UnusedFor (store.PruneHostedMedia:
// the row and its bytes from the account's usage, then the blob), batch by
// batch until none is left, every Interval. Several nodes may run it.
func (s *Service) MediaCleanup(cfg MediaCleanupConfig) *background.Periodic {
	cfg.UnusedFor = cmp.Or(max(cfg.UnusedFor, 0), MediaUnusedFor)
	cfg.Interval = cmp.Or(max(cfg.Interval, 0), DefaultMediaCleanupInterval)
	cfg.Batch = cmp.Or(max(cfg.Batch, 0), DefaultMediaCleanupBatch)
	return background.NewPeriodic(background.PeriodicConfig{
		Name:     "hosted media cleanup",
		Interval: cfg.Interval,
		Logger:   s.log,
		Work: func(ctx context.Context) error {
			_, err := s.CleanupMedia(ctx, cfg.UnusedFor, cfg.Batch)
			return err
		},
	})
}

// CleanupMedia is one pass of MediaCleanup: it removes every hosted file
// unused for unusedFor, batch files per transaction, and returns how many.
func (s *Service) CleanupMedia(ctx context.Context, unusedFor time.Duration, batch int) (int, error) {
	removed := 0
	defer func() {
		if removed > 0 {
			s.log.Info("unused hosted media removed", "files", removed)
		}
	}()
	for ctx.Err() == nil {
		names, err := s.store.PruneHostedMedia(ctx, unusedFor, batch)
		if err != nil {
			return removed, err
		}
		// The rows are gone (committed): no message can use these names
		// any more, so the blobs can go.
		if s.media != nil {
			s.discard(names)
		}
		removed += len(names)
		if len(names) < batch {
			return removed, nil
		}
	}
	return removed, ctx.Err()
}
