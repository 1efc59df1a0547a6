-- Webhook subscriptions. The secret is kept as issued: it is a shared
-- signing key that GET /webhooks/{id}/secret returns and every delivery
-- uses, so it cannot be hashed (docs/decisions.md). previous_secret still
-- signs, beside secret, until previous_until (unix micros) after a rotation.
-- backoff_until (unix micros, 0 = none) holds new deliveries of a failing
-- endpoint back until its next retry, so one failing endpoint is not sent
-- every event in between.
CREATE TABLE webhooks (
    id              INTEGER PRIMARY KEY,
    account_id      BIGINT  NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name            TEXT    NOT NULL DEFAULT '',
    description     TEXT    NOT NULL DEFAULT '',
    url             TEXT    NOT NULL,
    type            TEXT    NOT NULL,
    enabled         BOOLEAN NOT NULL DEFAULT FALSE,
    secret          TEXT    NOT NULL,
    previous_secret TEXT    NOT NULL DEFAULT '',
    previous_until  BIGINT  NOT NULL DEFAULT 0,
    backoff_until   BIGINT  NOT NULL DEFAULT 0,
    created_at      BIGINT  NOT NULL,
    updated_at      BIGINT  NOT NULL
);
CREATE INDEX webhooks_account_type ON webhooks (account_id, type, id);

-- Outbox events not yet turned into deliveries. Rows are marked rather than
-- read past a cursor: on PostgreSQL ids commit out of order, and a cursor
-- would skip an event that committed after a later one.
ALTER TABLE events ADD COLUMN fanned_out BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX events_unfanned ON events (id) WHERE fanned_out = FALSE;

-- One event to one subscription. A claimable table (store.Claim): due_at
-- (unix micros) is when it should next be attempted, NULL once it succeeded
-- or was given up; lease_owner/lease_until mark the process attempting it.
-- msg_id is the webhook-id header, the same on every attempt.
-- state: pending, succeeded, failed.
CREATE TABLE webhook_deliveries (
    id          INTEGER PRIMARY KEY,
    account_id  BIGINT NOT NULL,
    webhook_id  BIGINT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    event_id    BIGINT NOT NULL REFERENCES events(id) ON DELETE CASCADE,
    state       TEXT   NOT NULL,
    attempts    BIGINT NOT NULL DEFAULT 0,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    due_at      BIGINT,
    lease_owner TEXT,
    lease_until BIGINT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, id);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (webhook_id, due_at) WHERE due_at IS NOT NULL;

-- Every attempt: when, how long, what the endpoint answered (status 0 when
-- it answered nothing, response the start of its body) or why it failed.
CREATE TABLE webhook_attempts (
    id           INTEGER PRIMARY KEY,
    delivery_id  BIGINT NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
    webhook_id   BIGINT NOT NULL,
    attempted_at BIGINT NOT NULL,
    status_code  BIGINT NOT NULL,
    latency_us   BIGINT NOT NULL,
    error        TEXT   NOT NULL DEFAULT '',
    response     TEXT   NOT NULL DEFAULT ''
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);
