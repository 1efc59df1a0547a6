package webhooks

import (
	"context"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
)

// Attempts pages the attempt log of one delivery of the account's
// subscription id: newest first, at most limit, with ids below before (0
// for the newest).
func (s *Service) Attempts(ctx context.Context, p auth.Principal, id, deliveryID, before int64, limit int) ([]domain.WebhookAttempt, error) {
	if _, err := s.store.Webhook(ctx, p.AccountID, id); err != nil {
		return nil, err
	}
	return s.store.WebhookAttempts(ctx, p.AccountID, id, deliveryID, before, limit)
}
