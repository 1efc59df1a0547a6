-- Call history. A call is identified by its switch id "unixtime.sequence",
-- kept as the string it arrived as (call_id) and as its two numbers, which
-- order ids and make them unique per account. Times are unix microseconds.
-- Flags are 0/1 integers on both engines.
CREATE TABLE calls (
    id                 INTEGER PRIMARY KEY,
    account_id         BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    call_id            TEXT   NOT NULL,
    id_sec             BIGINT NOT NULL,
    id_seq             BIGINT NOT NULL,
    direction          TEXT   NOT NULL,
    status             TEXT   NOT NULL,
    status_code        BIGINT NOT NULL,
    caller_type        TEXT   NOT NULL DEFAULT '',
    called_type        TEXT   NOT NULL DEFAULT '',
    caller_name        TEXT   NOT NULL DEFAULT '',
    caller_number      TEXT   NOT NULL DEFAULT '',
    called_name        TEXT   NOT NULL DEFAULT '',
    called_number      TEXT   NOT NULL DEFAULT '',
    dialled_number     TEXT   NOT NULL DEFAULT '',
    caller_id_internal TEXT   NOT NULL DEFAULT '',
    caller_id_external TEXT   NOT NULL DEFAULT '',
    start_time         BIGINT NOT NULL,
    end_time           BIGINT,
    duration_seconds   BIGINT NOT NULL DEFAULT 0,
    talk_time_seconds  BIGINT NOT NULL DEFAULT 0,
    wait_time_seconds  BIGINT NOT NULL DEFAULT 0,
    transferred        BIGINT NOT NULL DEFAULT 0,
    abandoned          INTEGER NOT NULL DEFAULT 0,
    recorded           INTEGER NOT NULL DEFAULT 0,
    repeated           BIGINT NOT NULL DEFAULT 0,
    called_back        TEXT,
    call_purpose       TEXT   NOT NULL DEFAULT '',
    call_sentiment     TEXT   NOT NULL DEFAULT '',
    -- Lowercased caller and called names and numbers and the dialled number,
    -- newline-separated: what filters.search looks in.
    search_text        TEXT   NOT NULL DEFAULT '',
    -- Bumped to revoke the call's signed recording links.
    link_gen           BIGINT NOT NULL DEFAULT 0,
    ingested_at        BIGINT NOT NULL,
    UNIQUE (account_id, id_sec, id_seq)
);
-- The search index: a window of one account's calls in start order, so that a
-- page costs the same whatever the account's history.
CREATE INDEX calls_start ON calls (account_id, start_time, id_sec, id_seq);
-- Derived fields: earlier calls from a caller, and the call that returned one.
CREATE INDEX calls_caller ON calls (account_id, caller_number, start_time);
CREATE INDEX calls_called ON calls (account_id, called_number, start_time);

-- The multi-valued filter fields (numbers, extensions, queues, huntgroups,
-- users), one row per value.
CREATE TABLE call_tags (
    call_pk BIGINT NOT NULL REFERENCES calls(id) ON DELETE CASCADE,
    kind    TEXT   NOT NULL,
    value   TEXT   NOT NULL,
    PRIMARY KEY (call_pk, kind, value)
) WITHOUT ROWID;

-- Calls per account, hour of start, direction and status: exact totals and
-- deep pages of a window without scanning it.
CREATE TABLE call_counts (
    account_id BIGINT NOT NULL,
    hour       BIGINT NOT NULL,
    direction  TEXT   NOT NULL,
    status     TEXT   NOT NULL,
    n          BIGINT NOT NULL,
    PRIMARY KEY (account_id, hour, direction, status)
) WITHOUT ROWID;

CREATE TABLE call_legs (
    id                   INTEGER PRIMARY KEY,
    call_pk              BIGINT NOT NULL REFERENCES calls(id) ON DELETE CASCADE,
    position             BIGINT NOT NULL,
    unique_id            TEXT   NOT NULL,
    leg_call_id          TEXT   NOT NULL,
    bridged_from_call_id TEXT   NOT NULL DEFAULT '',
    start_time           BIGINT NOT NULL,
    end_time             BIGINT,
    duration_seconds     BIGINT NOT NULL DEFAULT 0,
    talk_time_seconds    BIGINT NOT NULL DEFAULT 0,
    from_number          TEXT   NOT NULL DEFAULT '',
    to_number            TEXT   NOT NULL DEFAULT '',
    recording_blob       TEXT,
    recording_type       TEXT,
    recording_bytes      BIGINT,
    UNIQUE (call_pk, unique_id)
);

CREATE TABLE call_transcripts (
    id        INTEGER PRIMARY KEY,
    call_pk   BIGINT NOT NULL REFERENCES calls(id) ON DELETE CASCADE,
    unique_id TEXT   NOT NULL,
    language  TEXT   NOT NULL,
    segments  TEXT   NOT NULL,
    UNIQUE (call_pk, unique_id, language)
);

-- The values of callPurpose and callSentiment an account has used.
CREATE TABLE call_vocabulary (
    account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    kind       TEXT   NOT NULL,
    value      TEXT   NOT NULL,
    PRIMARY KEY (account_id, kind, value)
) WITHOUT ROWID;

-- The key that signs recording links; the newest row is current. Rotating
-- inserts a new one and deletes the rest, so every earlier link stops working.
CREATE TABLE recording_keys (
    id         INTEGER PRIMARY KEY,
    secret     BLOB   NOT NULL,
    created_at BIGINT NOT NULL
);

-- Credentials of the phone systems that push calls to the ingest endpoint.
-- Only the hash of a token is stored.
CREATE TABLE ingest_tokens (
    id         INTEGER PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name       TEXT   NOT NULL,
    prefix     TEXT   NOT NULL,
    hash       BLOB   NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX ingest_tokens_account ON ingest_tokens (account_id);
