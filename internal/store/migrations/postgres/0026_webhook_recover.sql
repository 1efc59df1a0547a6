-- POST /webhooks/{id}/recover (issue 22; docs/decisions.md, "Recover"): a
-- job that sends a subscription's deliveries of a window that did not
-- succeed again, in batches, as background work. A claimable table
-- (store.Claim), so that any node's dispatcher takes it up and a crashed
-- node's job comes back. since_at/until_at (unix micros) bound the events'
-- time; the job looks at the subscription's deliveries with ids above
-- cursor_id up to last_delivery (the largest when it was asked for), and
-- queued counts the deliveries it queued. status: running, done.
CREATE TABLE webhook_recoveries (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account_id    BIGINT NOT NULL,
    webhook_id    BIGINT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    since_at      BIGINT NOT NULL,
    until_at      BIGINT NOT NULL,
    last_delivery BIGINT NOT NULL,
    cursor_id     BIGINT NOT NULL,
    queued        BIGINT NOT NULL DEFAULT 0,
    status        TEXT   NOT NULL,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    finished_at   BIGINT,
    due_at        BIGINT,
    lease_owner   TEXT,
    lease_until   BIGINT
);
CREATE INDEX webhook_recoveries_due ON webhook_recoveries (due_at, id) WHERE due_at IS NOT NULL;
CREATE INDEX webhook_recoveries_webhook ON webhook_recoveries (webhook_id, id);
CREATE INDEX webhook_recoveries_done ON webhook_recoveries (updated_at) WHERE due_at IS NULL;

-- The job that queued a delivery (or brought a pending one forward), for
-- its progress; not a foreign key: a pruned job leaves its deliveries be.
ALTER TABLE webhook_deliveries ADD COLUMN recovery_id BIGINT;
CREATE INDEX webhook_deliveries_recovery ON webhook_deliveries (recovery_id) WHERE recovery_id IS NOT NULL;
