-- Hosted media: a storage quota per account and the removal of files no
-- message uses (issue 22).
--
-- accounts.media_used is the bytes of the account's hosted_media rows, kept
-- in the transaction that adds or removes a row; media_quota bounds it (the
-- guard is in the UPDATE that reserves the bytes, so parallel uploads cannot
-- both pass). Default 1 GiB.
ALTER TABLE accounts ADD COLUMN media_quota BIGINT NOT NULL DEFAULT 1073741824;
ALTER TABLE accounts ADD COLUMN media_used BIGINT NOT NULL DEFAULT 0;

-- hosted_media now lists every file the server hosts for messages: uploads
-- (POST /sms/media) and a send's attachments. refs is how many messages rows
-- (sent, pending, failed, abandoned, and scheduled placeholders) list the
-- name in their media: kept in the transaction that writes or removes such a
-- row. unused_since is when refs last became 0 (the upload time for an
-- upload never used), NULL while used: the cleanup removes rows unused for
-- long enough, and only those.
ALTER TABLE hosted_media ADD COLUMN refs BIGINT NOT NULL DEFAULT 0;
ALTER TABLE hosted_media ADD COLUMN unused_since BIGINT;

-- Attachments sent before this migration get their rows. Their size is not
-- known to the database: they count 0 bytes. A failed message's files were
-- deleted when the carrier refused it, so it has none to record.
INSERT INTO hosted_media (name, account_id, content_type, size, created_by, created_at)
SELECT j.value, MIN(m.account_id),
       CASE WHEN j.value LIKE '%.jpg' THEN 'image/jpeg' WHEN j.value LIKE '%.png' THEN 'image/png'
            WHEN j.value LIKE '%.gif' THEN 'image/gif' WHEN j.value LIKE '%.bmp' THEN 'image/bmp'
            ELSE 'application/octet-stream' END,
       0, NULL, MIN(m.created_at)
FROM messages m, json_each(m.media) j
WHERE m.direction = 'out' AND m.media <> '[]' AND m.status <> 'failed'
GROUP BY j.value
ON CONFLICT (name) DO NOTHING;

UPDATE hosted_media SET refs = c.n
FROM (SELECT j.value AS name, COUNT(*) AS n FROM messages m, json_each(m.media) j
      WHERE m.direction = 'out' AND m.media <> '[]' AND m.status <> 'failed' GROUP BY j.value) c
WHERE c.name = hosted_media.name;
UPDATE hosted_media SET unused_since = created_at WHERE refs = 0;

UPDATE accounts SET media_used = u.total
FROM (SELECT account_id, SUM(size) AS total FROM hosted_media GROUP BY account_id) u
WHERE u.account_id = accounts.id;

CREATE INDEX hosted_media_unused ON hosted_media (unused_since) WHERE unused_since IS NOT NULL;
