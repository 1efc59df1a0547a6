-- Scheduled messages (POST /sms/lines/{line}/scheduled), a claimable table
-- (see internal/store/claim.go): a row is due at its send time while queued.
-- The message stands in its thread as a messages row in status 'scheduled'
-- (scheduled TRUE, scheduled_at its send time) until it is dispatched; then
-- that row is replaced, in the dispatch's transaction, by an ordinary
-- pending outbound message (message_id follows it).
--
-- recipients and unit_prices are parallel JSON arrays: the price fixed when
-- the message was scheduled, per recipient, so that a recipient skipped at
-- dispatch (STOP) takes its share out without re-reading the rate card.
-- media holds hosted blob names. state: queued, sending (the carrier is being
-- asked), sent (handed to the send path: the messages row decides), skipped
-- (every recipient had opted out by dispatch), cancelled.
CREATE TABLE scheduled_messages (
    id          INTEGER PRIMARY KEY,
    account_id  BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    line_id     BIGINT NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
    message_id  BIGINT NOT NULL,
    recipients  TEXT   NOT NULL,
    unit_prices TEXT   NOT NULL,
    subject     TEXT   NOT NULL DEFAULT '',
    body        TEXT   NOT NULL DEFAULT '',
    media       TEXT   NOT NULL DEFAULT '[]',
    type        TEXT   NOT NULL,
    units       BIGINT NOT NULL,
    price       BIGINT NOT NULL,
    send_at     BIGINT NOT NULL,
    state       TEXT   NOT NULL,
    attempts    BIGINT NOT NULL DEFAULT 0,
    created_by  BIGINT,
    created_at  BIGINT NOT NULL,
    due_at      BIGINT,
    lease_owner TEXT,
    lease_until BIGINT
);
CREATE INDEX scheduled_messages_due ON scheduled_messages (due_at, id) WHERE due_at IS NOT NULL;
CREATE INDEX scheduled_messages_queued ON scheduled_messages (line_id, send_at, id) WHERE state = 'queued';
