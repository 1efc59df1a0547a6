-- Carrier connections (issue 34; docs/decisions.md "Carrier connections").
--
-- A named connection to a carrier, kept in the database so that every node
-- and the CLI see the same ones: its kind (sim, kannel, smpp, twilio,
-- telnyx), its settings as JSON (package carriers validates them per
-- kind), and its secrets as JSON apart, which nothing prints back. state,
-- state_since, last_error and state_node are what the node running the
-- connection last reported (bound, connecting, down, disabled), for
-- "switchboard carrier list" to show from any process.
--
-- A line names its connection (carrier_id); a line without one uses the
-- server's --carrier flags, as before.
CREATE TABLE carrier_connections (
    id INTEGER PRIMARY KEY,
    name        TEXT    NOT NULL UNIQUE,
    kind        TEXT    NOT NULL,
    settings    TEXT    NOT NULL DEFAULT '{}',
    secrets     TEXT    NOT NULL DEFAULT '{}',
    disabled    BOOLEAN NOT NULL DEFAULT FALSE,
    state       TEXT    NOT NULL DEFAULT '',
    state_since BIGINT,
    last_error  TEXT    NOT NULL DEFAULT '',
    state_node  TEXT    NOT NULL DEFAULT '',
    created_at  BIGINT  NOT NULL,
    updated_at  BIGINT  NOT NULL
);

ALTER TABLE lines ADD COLUMN carrier_id BIGINT REFERENCES carrier_connections(id);
CREATE INDEX lines_carrier ON lines (carrier_id) WHERE carrier_id IS NOT NULL;

-- carrier_refs: the ids a connection's carrier gave a message (an SMSC's
-- message_id per part, in order), by which its delivery receipts name it:
-- SMPP has no field of ours to carry the message's own id, as Kannel's
-- dlr-url does. status is the part's last receipt's word, so that a long
-- text is reported once every part has one.
CREATE TABLE carrier_refs (
    carrier_id BIGINT NOT NULL REFERENCES carrier_connections(id) ON DELETE CASCADE,
    ref        TEXT   NOT NULL,
    message_id BIGINT NOT NULL,
    part       INTEGER NOT NULL DEFAULT 0,
    status     TEXT   NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    PRIMARY KEY (carrier_id, ref)
);
