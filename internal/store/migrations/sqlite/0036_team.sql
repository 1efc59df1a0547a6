-- The team's features (issue 33; docs/decisions.md, "The team: mentions,
-- notifications, teammates, team replies, history").
--
-- templates.shared: a team saved reply, listed to every credential of the
-- account beside its own; user_id stays its author. Personal replies keep
-- their owner index; the team's are read by their own.
ALTER TABLE templates ADD COLUMN shared BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX templates_shared ON templates (account_id, id) WHERE shared;

-- What a person wants to be notified of (GET/PUT /me/notifications). No row
-- is the defaults (every one on); a row is written by the first PUT. No
-- foreign key to users, as inbox_reads: the id is the authenticated
-- person's, and a deleted user's row is harmless.
CREATE TABLE notification_prefs (
    account_id          BIGINT  NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    user_id             BIGINT  NOT NULL,
    assigned_to_me      BOOLEAN NOT NULL,
    unassigned_on_lines BOOLEAN NOT NULL,
    mentions            BOOLEAN NOT NULL,
    updated_at          BIGINT  NOT NULL,
    PRIMARY KEY (account_id, user_id)
);

-- A thread's history, newest first by id with a cursor
-- (GET /sms/conversations/{line}/{number}/history): the existing index leads
-- with kind, which a page of every kind cannot use in id order.
CREATE INDEX conversation_activity_history ON conversation_activity (conversation_id, id);
