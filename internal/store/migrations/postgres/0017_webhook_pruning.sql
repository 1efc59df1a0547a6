-- Pruning of webhook history (store.PruneWebhookHistory, docs/decisions.md).
-- Finished deliveries by when they finished: the oldest go first.
CREATE INDEX webhook_deliveries_done ON webhook_deliveries (updated_at) WHERE due_at IS NULL;
-- An event goes once none of its deliveries is left; this also serves the
-- foreign key's ON DELETE CASCADE.
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
-- Events by age, the oldest first.
CREATE INDEX events_created ON events (created_at);
