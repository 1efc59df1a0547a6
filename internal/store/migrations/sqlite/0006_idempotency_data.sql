-- Idempotency-Key records now hold the send's answer as data (the service's
-- record, read back by internal/sms), no longer an HTTP status and body.
-- Records linked to a message are kept: they still read back, and the key
-- must keep pointing at its message. The others answered without sending
-- anything (a 4xx, or every recipient skipped), so a retry of theirs may run
-- again: they are dropped rather than translated.
DELETE FROM idempotency_keys WHERE message_id IS NULL;
