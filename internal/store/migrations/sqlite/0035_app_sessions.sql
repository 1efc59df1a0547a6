-- The app's sessions (docs/decisions.md, "The app's session"): the server
-- keeps the app's refresh token and the browser holds only an HttpOnly
-- cookie naming the session. Both secrets are stored as SHA-256 only, as
-- every OAuth secret is; times are unix microseconds. A session ends when
-- its grant is revoked (sign-out, offboarding, a replayed token), after
-- the idle limit without use or at the absolute limit (the server's flags,
-- checked at each use, so a lowered limit applies to every session at once).
CREATE TABLE app_sessions (
    id           INTEGER PRIMARY KEY,
    hash         BLOB   NOT NULL UNIQUE,
    grant_id     BIGINT NOT NULL REFERENCES oauth_grants(id) ON DELETE CASCADE,
    refresh_hash BLOB   NOT NULL,
    created_at   BIGINT NOT NULL,
    used_at      BIGINT NOT NULL
);
CREATE INDEX app_sessions_grant ON app_sessions (grant_id);
CREATE INDEX app_sessions_used ON app_sessions (used_at);
