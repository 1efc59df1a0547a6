package webhooks

import "context"

// prunePreviousSecrets deletes expired previous signing secrets
// (store.PruneWebhookSecrets), batch at a time, for the pruner's pass. They
// sign nothing any more; this keeps old keys from lingering in the database
// and its backups. A failure is logged and left for the next pass.
func (s *Service) prunePreviousSecrets(ctx context.Context, batch int) {
	for ctx.Err() == nil {
		n, err := s.store.PruneWebhookSecrets(ctx, batch)
		if err != nil {
			s.log.Warn("webhooks: prune previous secrets", "err", err)
			return
		}
		if n > 0 {
			s.log.Info("expired webhook secrets pruned", "secrets", n)
		}
		if n < batch {
			return
		}
	}
}
