-- Event ids are never handed out twice (issue 22). An event's id is the
-- webhook-id of its deliveries, on which receivers drop duplicates; without
-- AUTOINCREMENT SQLite gives a new row the largest id left plus one, so once
-- pruning emptied the outbox evt_1 went out again for another event.
-- AUTOINCREMENT keeps the largest id ever used in sqlite_sequence instead.
-- Deliveries and attempts get it too: a delivery id names a delivery in the
-- API (redeliver, the attempt log), and must not come to name another.
--
-- SQLite cannot add AUTOINCREMENT to a table: the three are rebuilt. The
-- migration runs in a transaction with foreign keys on, where PRAGMA
-- foreign_keys cannot be turned off, and dropping a table deletes its rows
-- first, cascading to the rows that reference it. So the old tables are
-- renamed (which points the references between them at the new names),
-- copied into the new ones and dropped children first, when nothing
-- references them any more. Copying ids into an AUTOINCREMENT table sets
-- sqlite_sequence to the largest, so new ids start above every id left. (Ids
-- pruned before this migration leave no trace: an outbox pruning had already
-- emptied starts again above the largest id left, as it did before.)
ALTER TABLE webhook_attempts RENAME TO webhook_attempts_old;
ALTER TABLE webhook_deliveries RENAME TO webhook_deliveries_old;
ALTER TABLE events RENAME TO events_old;

CREATE TABLE events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id BIGINT  NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    type       TEXT    NOT NULL,
    payload    TEXT    NOT NULL,
    created_at BIGINT  NOT NULL,
    fanned_out BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE TABLE webhook_deliveries (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
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
CREATE TABLE webhook_attempts (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id  BIGINT NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
    webhook_id   BIGINT NOT NULL,
    attempted_at BIGINT NOT NULL,
    status_code  BIGINT NOT NULL,
    latency_us   BIGINT NOT NULL,
    error        TEXT   NOT NULL DEFAULT '',
    response     TEXT   NOT NULL DEFAULT ''
);

INSERT INTO events (id, account_id, type, payload, created_at, fanned_out)
    SELECT id, account_id, type, payload, created_at, fanned_out FROM events_old;
INSERT INTO webhook_deliveries (id, account_id, webhook_id, event_id, state, attempts, created_at, updated_at, due_at, lease_owner, lease_until)
    SELECT id, account_id, webhook_id, event_id, state, attempts, created_at, updated_at, due_at, lease_owner, lease_until FROM webhook_deliveries_old;
INSERT INTO webhook_attempts (id, delivery_id, webhook_id, attempted_at, status_code, latency_us, error, response)
    SELECT id, delivery_id, webhook_id, attempted_at, status_code, latency_us, error, response FROM webhook_attempts_old;

DROP TABLE webhook_attempts_old;
DROP TABLE webhook_deliveries_old;
DROP TABLE events_old;

-- Every index the three had (0002, 0012, 0017), under the same names.
CREATE INDEX events_account ON events (account_id, id);
CREATE INDEX events_unfanned ON events (id) WHERE fanned_out = FALSE;
CREATE INDEX events_created ON events (created_at);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, id);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (webhook_id, due_at) WHERE due_at IS NOT NULL;
CREATE INDEX webhook_deliveries_done ON webhook_deliveries (updated_at) WHERE due_at IS NULL;
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);
