package webhooks

import "context"

// prunePreviousSecrets deletes expired previous signing secrets
// (store.PruneWebhookSecrets), for the pruner's pass. They sign nothing any
// more; this keeps old keys from lingering in the database and its backups.
// A failure is logged and left for the next pass.
func prunePreviousSecrets(ctx context.Context, cfg PrunerConfig) {
	for ctx.Err() == nil {
		n, err := cfg.Store.PruneWebhookSecrets(ctx, cfg.Batch)
		if err != nil {
			cfg.Log.Warn("webhooks: prune previous secrets", "err", err)
			return
		}
		if n > 0 {
			cfg.Log.Info("expired webhook secrets pruned", "secrets", n)
		}
		if n < cfg.Batch {
			return
		}
	}
}
