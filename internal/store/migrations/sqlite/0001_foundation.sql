-- Times are unix microseconds (BIGINT) on both engines so the SQL stays portable.
CREATE TABLE accounts (
    id                  INTEGER PRIMARY KEY,
    name                TEXT    NOT NULL,
    restrict_sms_delete BOOLEAN NOT NULL DEFAULT FALSE,
    sensitive_reverify  BOOLEAN NOT NULL DEFAULT FALSE,
    created_at          BIGINT  NOT NULL
);

CREATE TABLE roles (
    id               INTEGER PRIMARY KEY,
    account_id       BIGINT  NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name             TEXT    NOT NULL,
    users_visibility TEXT    NOT NULL DEFAULT '',
    numbers_access   TEXT    NOT NULL DEFAULT '',
    call_reports     BOOLEAN NOT NULL DEFAULT FALSE,
    allow_recordings BOOLEAN NOT NULL DEFAULT FALSE,
    UNIQUE (account_id, name)
);

CREATE TABLE users (
    id            INTEGER PRIMARY KEY,
    account_id    BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    role_id       BIGINT REFERENCES roles(id) ON DELETE SET NULL,
    username      TEXT UNIQUE,
    password_hash TEXT NOT NULL DEFAULT '',
    first_name    TEXT NOT NULL DEFAULT '',
    last_name     TEXT NOT NULL DEFAULT '',
    title         TEXT NOT NULL DEFAULT '',
    email         TEXT NOT NULL DEFAULT '',
    mobile        TEXT NOT NULL DEFAULT '',
    company       TEXT NOT NULL DEFAULT '',
    time_zone     TEXT NOT NULL DEFAULT '',
    extension     TEXT NOT NULL DEFAULT '',
    extensions    TEXT NOT NULL DEFAULT '[]',
    lines         TEXT NOT NULL DEFAULT '[]',
    numbers       TEXT NOT NULL DEFAULT '[]',
    voicemails    TEXT NOT NULL DEFAULT '[]',
    created_at    BIGINT NOT NULL
);
CREATE INDEX users_account ON users (account_id);

CREATE TABLE lines (
    id           INTEGER PRIMARY KEY,
    account_id   BIGINT  NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    number       TEXT    NOT NULL UNIQUE,
    name         TEXT    NOT NULL DEFAULT '',
    bulk_enabled BOOLEAN NOT NULL DEFAULT FALSE,
    sms_enabled  BOOLEAN NOT NULL DEFAULT TRUE,
    created_at   BIGINT  NOT NULL
);
CREATE INDEX lines_account ON lines (account_id, number);

CREATE TABLE line_users (
    line_id BIGINT NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    PRIMARY KEY (line_id, user_id)
);
CREATE INDEX line_users_user ON line_users (user_id);

CREATE TABLE api_keys (
    id         INTEGER PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    name       TEXT   NOT NULL,
    prefix     TEXT   NOT NULL,
    hash       BLOB   NOT NULL UNIQUE,
    scopes     TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX api_keys_account ON api_keys (account_id);
