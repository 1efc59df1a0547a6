-- Previous signing secrets (docs/decisions.md, "Secret rotation"). Every
-- secret a rotation replaces keeps signing deliveries, beside
-- webhooks.secret, until its expires_at (unix micros): one row each, so a
-- second rotation within the overlap no longer drops the first secret (the
-- single previous_secret column did). Kept as issued, like webhooks.secret.
-- webhooks.previous_until stays: the latest expires_at of the subscription's
-- rows (0 for none), so loading a delivery looks here only while one may
-- still be valid. Expired rows are deleted by the subscription's next
-- rotation and by the webhook pruner.
CREATE TABLE webhook_previous_secrets (
    id          INTEGER PRIMARY KEY,
    webhook_id  BIGINT NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    secret      TEXT   NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX webhook_previous_secrets_webhook ON webhook_previous_secrets (webhook_id, expires_at);
CREATE INDEX webhook_previous_secrets_expiry ON webhook_previous_secrets (expires_at);
INSERT INTO webhook_previous_secrets (webhook_id, secret, expires_at)
    SELECT id, previous_secret, previous_until FROM webhooks WHERE previous_secret <> '' AND previous_until > 0;
ALTER TABLE webhooks DROP COLUMN previous_secret;

-- Attempt errors are shown to clients as a category (internal/webhooks,
-- errorcategory.go), the detail going to the server log only. Errors
-- recorded before named resolved addresses and the resolver ("dial tcp
-- 10.0.0.5:443: …", "lookup x on 127.0.0.53:53: …"): they get their category.
UPDATE webhook_attempts SET error = CASE
    WHEN error LIKE 'HTTP %' THEN 'http_status: the endpoint answered ' || error
    WHEN error LIKE '%refusing to connect%' THEN 'destination_refused: the host resolves to an address deliveries may not reach'
    WHEN error LIKE '%no such host%' OR error LIKE '%lookup %' THEN 'dns_failure: the host name did not resolve'
    WHEN error = 'timed out' OR error LIKE '%timeout%' OR error LIKE '%deadline exceeded%' THEN 'timeout: the endpoint did not answer in time'
    WHEN error LIKE '%connection refused%' THEN 'connection_refused: the endpoint refused the connection'
    WHEN error LIKE '%tls%' OR error LIKE '%x509%' OR error LIKE '%certificate%' THEN 'tls_error: the TLS handshake with the endpoint failed'
    WHEN error LIKE '%connection reset%' OR error LIKE '%EOF%' THEN 'connection_reset: the connection closed before an answer'
    WHEN error LIKE 'bad url%' THEN 'invalid_url: the URL could not be used'
    ELSE 'connection_failed: the request could not be completed'
END
WHERE error <> '';
