-- The shared inbox: conversation state, per-user read state, comments and
-- activity. Read state is a per-(user, conversation) watermark plus a small
-- table of per-message exceptions, so marking a thread of any length read is
-- one row written, never a row per message.

-- Conversation state. resolved_at NULL means unresolved; resolved_by and
-- assigned_to are user ids (NULL: nobody). in_count counts the thread's
-- visible inbound texts. The team columns are the account-level view an API
-- key gets: team_read_through is the furthest any user has read the thread
-- to, team_unread the inbound texts after it.
ALTER TABLE conversations ADD COLUMN resolved_at BIGINT;
ALTER TABLE conversations ADD COLUMN resolved_by BIGINT;
ALTER TABLE conversations ADD COLUMN assigned_to BIGINT;
ALTER TABLE conversations ADD COLUMN in_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN team_read_through BIGINT NOT NULL DEFAULT 0;
ALTER TABLE conversations ADD COLUMN team_unread BIGINT NOT NULL DEFAULT 0;

-- Lists are newest first with the id breaking ties, each filter with an index
-- that holds only the rows it selects, so no page walks rows it then drops.
-- A conversation with no visible message (new, or deleted) has no
-- last_message_at and is in no list.
DROP INDEX conversations_account;
CREATE INDEX conversations_list ON conversations (account_id, last_message_at, id) WHERE last_message_at IS NOT NULL;
CREATE INDEX conversations_line ON conversations (line_id, last_message_at, id) WHERE last_message_at IS NOT NULL;
CREATE INDEX conversations_unresolved ON conversations (account_id, last_message_at, id) WHERE last_message_at IS NOT NULL AND resolved_at IS NULL;
CREATE INDEX conversations_unassigned ON conversations (account_id, last_message_at, id) WHERE last_message_at IS NOT NULL AND assigned_to IS NULL;
CREATE INDEX conversations_assigned ON conversations (assigned_to, last_message_at, id) WHERE last_message_at IS NOT NULL AND assigned_to IS NOT NULL;
CREATE INDEX conversations_team_unread ON conversations (account_id, last_message_at, id) WHERE last_message_at IS NOT NULL AND team_unread > 0;
CREATE INDEX conversations_team_counts ON conversations (account_id, line_id, team_unread) WHERE team_unread > 0;

-- Message columns: deleted_at marks a deleted message (its text and media are
-- erased; the row stays because the ledger's charge points at it). The
-- scheduled and blocked columns are filled by the scheduled-message and
-- blocked-sender work.
ALTER TABLE messages ADD COLUMN deleted_at BIGINT;
ALTER TABLE messages ADD COLUMN scheduled BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE messages ADD COLUMN scheduled_at BIGINT;
ALTER TABLE messages ADD COLUMN blocked BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE messages ADD COLUMN block_reason TEXT NOT NULL DEFAULT '';

-- A user's read state in one conversation: every message with an id at or
-- below read_through is read (unless excepted below); unread counts the
-- inbound texts unread for the user. last_message_at copies the
-- conversation's while unread > 0, so the user's unread list is one index.
CREATE TABLE inbox_reads (
    conversation_id BIGINT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    user_id         BIGINT NOT NULL,
    account_id      BIGINT NOT NULL,
    line_id         BIGINT NOT NULL,
    read_through    BIGINT NOT NULL DEFAULT 0,
    unread          BIGINT NOT NULL DEFAULT 0,
    last_message_at BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (conversation_id, user_id)
);
CREATE INDEX inbox_reads_unread ON inbox_reads (user_id, last_message_at, conversation_id) WHERE unread > 0;
CREATE INDEX inbox_reads_counts ON inbox_reads (user_id, line_id, unread) WHERE unread > 0;

-- Messages a user marked read or unread against the watermark. A mark is
-- kept only while it differs from what the watermark says; reading the
-- whole thread clears the user's marks in it.
CREATE TABLE inbox_read_marks (
    message_id      BIGINT  NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    user_id         BIGINT  NOT NULL,
    conversation_id BIGINT  NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    is_read         BOOLEAN NOT NULL,
    PRIMARY KEY (message_id, user_id)
);
CREATE INDEX inbox_read_marks_user ON inbox_read_marks (user_id, conversation_id);

-- Who did what to a conversation, and when: resolve, reopen (reopened by an
-- inbound text when actor_id is NULL and kind is reopen_inbound), assign,
-- unassign and comment (the note's text in body). actor_id is the user
-- acting (NULL for an API key); subject_id the user credited or assigned.
CREATE TABLE conversation_activity (
    id              INTEGER PRIMARY KEY,
    account_id      BIGINT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
    conversation_id BIGINT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    kind            TEXT   NOT NULL,
    actor_id        BIGINT,
    subject_id      BIGINT,
    body            TEXT   NOT NULL DEFAULT '',
    created_at      BIGINT NOT NULL
);
CREATE INDEX conversation_activity_conversation ON conversation_activity (conversation_id, kind, id);
