package oauth

import (
	"context"
	"errors"
	"time"

	"switchboard/internal/background"
	"switchboard/internal/store"
)

// PruneInterval is how often expired OAuth data is deleted. Expired codes
// and tokens are refused whether or not they are deleted yet, so pruning
// only bounds the tables.
const PruneInterval = time.Hour

// Pruner returns the background service that deletes expired authorization
// requests, codes and tokens, the app's sessions past their limits, and the
// registered clients nobody ever authorized, every PruneInterval.
func (s *Server) Pruner() *background.Periodic {
	return background.NewPeriodic(background.PeriodicConfig{
		Name:     "oauth pruning",
		Interval: PruneInterval,
		Logger:   s.log,
		Work: func(ctx context.Context) error {
			// Sessions first: a session past its limits revokes its grant,
			// whose tokens the next statement may then delete in time.
			_, serr := s.store.PruneAppSessions(ctx, s.sessionLimits)
			err := s.store.PruneOAuth(ctx)
			n, cerr := s.store.PruneUnusedOAuthClients(ctx)
			if cerr == nil && n > 0 {
				s.log.Info("pruned OAuth clients never authorized", "clients", n, "unused_for", store.OAuthUnusedClientTTL.String())
			}
			return errors.Join(serr, err, cerr)
		},
	})
}
