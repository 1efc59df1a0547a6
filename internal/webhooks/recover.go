package webhooks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// Recover starts a recover job for the account's subscription id: every
// delivery of an event of [since, until) that did not succeed is sent again,
// with its original webhook-id, by the dispatchers (store.RecoverBatch).
// until zero, or later than now, means now. since must be within the
// retention, and the subscription enabled with no other job running.
func (s *Service) Recover(ctx context.Context, p auth.Principal, id int64, since, until time.Time) (domain.WebhookRecovery, error) {
	if !until.IsZero() && !since.Before(until) {
		return domain.WebhookRecovery{}, domain.Errorf(domain.Invalid, "until must be after since")
	}
	return s.store.CreateWebhookRecovery(ctx, p.AccountID, id, since, until, s.retention)
}

// Recovery returns the account's recover job recoveryID of subscription id,
// with its progress.
func (s *Service) Recovery(ctx context.Context, p auth.Principal, id, recoveryID int64) (domain.WebhookRecovery, error) {
	if _, err := s.store.Webhook(ctx, p.AccountID, id); err != nil {
		return domain.WebhookRecovery{}, err
	}
	return s.store.WebhookRecovery(ctx, p.AccountID, id, recoveryID)
}

// recoverJobs is how many recover jobs one pass takes a batch of.
const recoverJobs = 4

// recoverBatches does a batch of each recover job due (up to recoverJobs;
// pass calls it when DueWebhookWork saw one),
// claimed like deliveries, so that every node's dispatcher shares the jobs
// and a crashed node's come back when their leases end. It reports whether
// a job has more to do.
func (d *Dispatcher) recoverBatches(ctx context.Context) (more bool, err error) {
	st := d.st
	ids, err := st.Claim(ctx, store.ClaimWebhookRecoveries, d.cfg.Owner, recoverJobs, d.cfg.Lease)
	if err != nil {
		return false, fmt.Errorf("webhooks: claim recover jobs: %w", err)
	}
	var errs []error
	for _, id := range ids {
		done, err := st.RecoverBatch(ctx, d.cfg.Owner, id, store.RecoverBatchSize)
		switch {
		case errors.Is(err, store.ErrLeaseLost):
			// Taken over by another node, or deleted with its subscription.
		case err != nil:
			// Its lease runs out and the batch is done again.
			errs = append(errs, fmt.Errorf("webhooks: recover %d: %w", id, err))
		case !done:
			more = true
		}
	}
	return more, errors.Join(errs...)
}
