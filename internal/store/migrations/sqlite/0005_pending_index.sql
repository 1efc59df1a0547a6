-- Only pending messages are ever looked up by status (the reconciler), and
-- a message is pending for milliseconds. A partial index holds just those:
-- every send inserts into it and removes from it on the same small page,
-- instead of moving an entry between two regions of an index of every message.
DROP INDEX messages_pending;
CREATE INDEX messages_pending ON messages (created_at) WHERE status = 'pending';
