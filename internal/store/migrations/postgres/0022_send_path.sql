-- Less work for PostgreSQL per send (issue 16; docs/decisions.md, "PostgreSQL:
-- a send's statements made lighter").

-- The webhook fan-out reads the outbox past a cursor instead of marking each
-- event fanned out: marking was a second, non-HOT write of every event row
-- (the flag was in an index's predicate), and the fan-out's scan walked the
-- partial index's entries of every event marked since the last vacuum. A
-- cursor over ids alone would skip events, because ids are handed out in one
-- order and committed in another; the cursor is over (xid, id) instead, where
-- xid is the writing transaction's id, and the fan-out takes only events whose
-- transaction ended before the oldest one still running
-- (pg_snapshot_xmin): no transaction that can still commit has an xid below
-- that, so nothing can appear behind the cursor. xid is NULL for an event
-- never to be fanned out (a test delivery's own) and for those fanned out
-- before this migration.
ALTER TABLE events ADD COLUMN xid BIGINT;
UPDATE events SET xid = 0 WHERE fanned_out = FALSE;
ALTER TABLE events ALTER COLUMN xid SET DEFAULT (pg_current_xact_id()::text::bigint);
DROP INDEX events_unfanned;
ALTER TABLE events DROP COLUMN fanned_out;
CREATE INDEX events_fanout ON events (xid, id) WHERE xid IS NOT NULL;

-- The cursor: the last event fanned out. One row, locked by the fan-out that
-- moves it, so the nodes take turns and each event is fanned out once.
CREATE TABLE event_fanout (
    id       INT    PRIMARY KEY CHECK (id = 1),
    xid      BIGINT NOT NULL,
    event_id BIGINT NOT NULL
);
INSERT INTO event_fanout (id, xid, event_id) VALUES (1, 0, 0);

-- Foreign keys on the rows every send inserts. Each check is a lookup and a
-- KEY SHARE lock of the account, line and conversation rows (a shared lock
-- taken by several committers at once becomes a MultiXact), the charge's of
-- its message. The ids come from rows the same transaction just read, wrote
-- or locked (the credential's account and line, the conversation it found or
-- created, the message its status update matched), and none of those rows is
-- ever deleted by Switchboard; messages are deleted only while scheduled,
-- before they can be charged.
ALTER TABLE messages DROP CONSTRAINT messages_account_id_fkey;
ALTER TABLE messages DROP CONSTRAINT messages_conversation_id_fkey;
ALTER TABLE messages DROP CONSTRAINT messages_line_id_fkey;
ALTER TABLE ledger DROP CONSTRAINT ledger_account_id_fkey;
ALTER TABLE ledger DROP CONSTRAINT ledger_message_id_fkey;
ALTER TABLE events DROP CONSTRAINT events_account_id_fkey;
