-- OAuth 2.1 authorization server. Every secret (request id, CSRF token, code,
-- token) is stored only as its SHA-256; times are unix microseconds.

-- Hosts that registered redirect URIs may point at (exact, lower-case).
CREATE TABLE oauth_allowed_hosts (
    host       TEXT   PRIMARY KEY,
    created_at BIGINT NOT NULL
);

-- Public clients from dynamic registration. redirect_uris is a JSON array.
CREATE TABLE oauth_clients (
    id            INTEGER PRIMARY KEY,
    client_id     TEXT   NOT NULL UNIQUE,
    name          TEXT   NOT NULL,
    redirect_uris TEXT   NOT NULL,
    created_at    BIGINT NOT NULL
);

-- Authorizations in progress while the person signs in and consents.
-- user_id is NULL until sign-in; the row is deleted when consent is decided.
CREATE TABLE oauth_requests (
    hash           BLOB   PRIMARY KEY,
    client_id      TEXT   NOT NULL REFERENCES oauth_clients(client_id) ON DELETE CASCADE,
    redirect_uri   TEXT   NOT NULL,
    scopes         TEXT   NOT NULL,
    state          TEXT   NOT NULL,
    code_challenge TEXT   NOT NULL,
    csrf_hash      BLOB   NOT NULL,
    user_id        BIGINT REFERENCES users(id) ON DELETE CASCADE,
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL
);
CREATE INDEX oauth_requests_expires ON oauth_requests (expires_at);

-- One row per approval; every code and token belongs to one grant, and
-- revoking the grant kills all of them.
CREATE TABLE oauth_grants (
    id         INTEGER PRIMARY KEY,
    account_id BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    user_id    BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    client_id  TEXT   NOT NULL REFERENCES oauth_clients(client_id) ON DELETE CASCADE,
    scopes     TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX oauth_grants_account ON oauth_grants (account_id, user_id);

-- Authorization codes: single use; used_at is kept to detect replays.
CREATE TABLE oauth_codes (
    hash           BLOB   PRIMARY KEY,
    grant_id       BIGINT NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
    redirect_uri   TEXT   NOT NULL,
    code_challenge TEXT   NOT NULL,
    expires_at     BIGINT NOT NULL,
    used_at        BIGINT
);
CREATE INDEX oauth_codes_grant ON oauth_codes (grant_id);

-- Access and refresh tokens. scopes is the token's own scope: the grant's, or
-- narrower for an access token issued by a refresh that asked for less.
-- used_at marks a rotated refresh token; a second use revokes the grant.
CREATE TABLE oauth_tokens (
    hash       BLOB   PRIMARY KEY,
    grant_id   BIGINT NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
    kind       TEXT   NOT NULL CHECK (kind IN ('access', 'refresh')),
    scopes     TEXT   NOT NULL,
    expires_at BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    used_at    BIGINT,
    revoked_at BIGINT
);
CREATE INDEX oauth_tokens_grant ON oauth_tokens (grant_id);
CREATE INDEX oauth_tokens_expires ON oauth_tokens (expires_at);
