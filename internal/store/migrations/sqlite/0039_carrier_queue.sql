-- Carrier connections' queue and binds (issue 34; docs/decisions.md
-- "Carrier connections: the queue and the binds").
--
-- carrier_queue: messages a connection sends later, in order: those over
-- its throughput limits, and those sent on a node that holds none of the
-- connection's binds. The message itself (its intent, price and charge) is
-- in messages; payload is what the carrier is handed (from, to, text, media
-- URLs) as JSON. due_at is the message's turn: when its line's
-- --number-throughput allows it. A node holding one of the connection's
-- binds claims due rows in order, marking them sending before it hands
-- them to the carrier: a row found sending after its lease ran out (its
-- node stopped mid-send) is never sent again, and its message is left to
-- its receipt or the reconciler, as any send whose outcome is unknown.
CREATE TABLE carrier_queue (
    id INTEGER PRIMARY KEY,
    carrier_id  BIGINT  NOT NULL REFERENCES carrier_connections(id) ON DELETE CASCADE,
    message_id  BIGINT  NOT NULL UNIQUE,
    payload     TEXT    NOT NULL,
    due_at      BIGINT  NOT NULL,
    sending     BOOLEAN NOT NULL DEFAULT FALSE,
    lease_owner TEXT,
    lease_until BIGINT,
    tries       INTEGER NOT NULL DEFAULT 0,
    created_at  BIGINT  NOT NULL
);
CREATE INDEX carrier_queue_due ON carrier_queue (carrier_id, due_at, id);

-- carrier_number_slots: the next free turn of each line's number on a
-- connection with --number-throughput, shared by every node.
CREATE TABLE carrier_number_slots (
    carrier_id BIGINT NOT NULL REFERENCES carrier_connections(id) ON DELETE CASCADE,
    number     TEXT   NOT NULL,
    next_at    BIGINT NOT NULL,
    PRIMARY KEY (carrier_id, number)
);

-- carrier_binds: who holds each of a connection's --binds (an SMPP bind;
-- for an HTTP provider with limits, its one sender), as leases that the
-- holder renews: the cluster never holds more binds than slots, and a node
-- that stops gives its binds up when their leases end. in_flight is how
-- many of the bind's submits await their answer, as its holder last
-- counted, for "carrier list".
CREATE TABLE carrier_binds (
    carrier_id  BIGINT  NOT NULL REFERENCES carrier_connections(id) ON DELETE CASCADE,
    slot        INTEGER NOT NULL,
    owner       TEXT    NOT NULL,
    lease_until BIGINT  NOT NULL,
    in_flight   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (carrier_id, slot)
);

-- A receipt reads the words of every part of its message
-- (CarrierPartReceipt): by message, not by a walk of the connection's ids.
CREATE INDEX carrier_refs_message ON carrier_refs (carrier_id, message_id, part);
