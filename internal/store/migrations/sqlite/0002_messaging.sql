-- Money is integer micro-dollars (BIGINT) on both engines: exact, no floats.
CREATE TABLE rates (
    id          INTEGER PRIMARY KEY,
    account_id  BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    prefix      TEXT   NOT NULL,
    sms_micros  BIGINT NOT NULL,
    mms_micros  BIGINT NOT NULL,
    created_at  BIGINT NOT NULL,
    UNIQUE (account_id, prefix)
);

-- A conversation is (line, participant set): participants is the sorted,
-- comma-joined list of the other parties' numbers.
CREATE TABLE conversations (
    id              INTEGER PRIMARY KEY,
    account_id      BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    line_id         BIGINT NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
    participants    TEXT   NOT NULL,
    last_message_id BIGINT,
    last_message_at BIGINT,
    created_at      BIGINT NOT NULL,
    UNIQUE (line_id, participants)
);
CREATE INDEX conversations_account ON conversations (account_id, last_message_at);

-- status: pending (intent written, carrier not yet answered), sent (carrier
-- accepted; charged), failed (carrier refused; never charged), abandoned
-- (process stopped mid-send and no evidence of acceptance), received (inbound).
CREATE TABLE messages (
    id               INTEGER PRIMARY KEY,
    account_id       BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    conversation_id  BIGINT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    line_id          BIGINT NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
    direction        TEXT   NOT NULL,
    from_number      TEXT   NOT NULL,
    to_numbers       TEXT   NOT NULL,
    body             TEXT   NOT NULL DEFAULT '',
    media            TEXT   NOT NULL DEFAULT '[]',
    type             TEXT   NOT NULL,
    status           TEXT   NOT NULL,
    units            BIGINT NOT NULL DEFAULT 0,
    unit_price       BIGINT NOT NULL DEFAULT 0,
    price            BIGINT NOT NULL DEFAULT 0,
    sent_by          BIGINT,
    carrier_ref      TEXT   NOT NULL DEFAULT '',
    delivery_status  TEXT,
    delivery_error   TEXT,
    delivery_at      BIGINT,
    created_at       BIGINT NOT NULL
);
CREATE INDEX messages_conversation ON messages (conversation_id, id);
CREATE INDEX messages_pending ON messages (status, created_at);

-- One charge per message at most: the unique message_id makes a double
-- charge impossible whatever path (response, receipt, reconciler) records it.
CREATE TABLE ledger (
    id           INTEGER PRIMARY KEY,
    account_id   BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    message_id   BIGINT NOT NULL UNIQUE REFERENCES messages(id),
    amount       BIGINT NOT NULL,
    currency     TEXT   NOT NULL,
    description  TEXT   NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX ledger_account ON ledger (account_id, id);

CREATE TABLE opt_outs (
    line_id    BIGINT NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
    number     TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (line_id, number)
);

-- The transactional outbox: every event is written in the same transaction
-- as the change that causes it; the webhook dispatcher delivers from here.
CREATE TABLE events (
    id         INTEGER PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    type       TEXT   NOT NULL,
    payload    TEXT   NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX events_account ON events (account_id, id);

-- Idempotency-Key records, per account. state: running or done.
CREATE TABLE idempotency_keys (
    account_id   BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    key          TEXT   NOT NULL,
    request_hash BLOB   NOT NULL,
    state        TEXT   NOT NULL,
    status       BIGINT NOT NULL DEFAULT 0,
    response     BLOB,
    message_id   BIGINT,
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (account_id, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
CREATE INDEX idempotency_keys_message ON idempotency_keys (message_id);
