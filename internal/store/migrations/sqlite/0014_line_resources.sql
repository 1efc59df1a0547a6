-- Saved replies and drafts belong to one user; user_id 0 is the account's
-- integrations (API keys), which have no person (docs/decisions.md).
CREATE TABLE templates (
    id          INTEGER PRIMARY KEY,
    account_id  BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    user_id     BIGINT NOT NULL,
    title       TEXT   NOT NULL,
    body        TEXT   NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX templates_owner ON templates (account_id, user_id, id);

CREATE TABLE drafts (
    account_id  BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    user_id     BIGINT NOT NULL,
    draft_id    TEXT   NOT NULL,
    message     TEXT   NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (account_id, user_id, draft_id)
);

-- The inbound block list a line's team controls; not the STOP list.
CREATE TABLE blocked_senders (
    line_id     BIGINT NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
    number      TEXT   NOT NULL,
    reason      TEXT   NOT NULL DEFAULT '',
    blocked_at  BIGINT NOT NULL,
    PRIMARY KEY (line_id, number)
);
CREATE INDEX blocked_senders_recent ON blocked_senders (line_id, blocked_at);
