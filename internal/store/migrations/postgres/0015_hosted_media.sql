-- Attachments hosted on their own (POST /sms/media), by account, so that a
-- scheduled message can carry only media its own account uploaded.
CREATE TABLE hosted_media (
    name          TEXT   PRIMARY KEY,
    account_id    BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    content_type  TEXT   NOT NULL,
    size          BIGINT NOT NULL,
    created_by    BIGINT,
    created_at    BIGINT NOT NULL
);
CREATE INDEX hosted_media_account ON hosted_media (account_id, created_at);
