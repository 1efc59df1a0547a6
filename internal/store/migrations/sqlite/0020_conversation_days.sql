-- Conversations per line and per UTC day of their newest message. A deep list
-- page (a large offset) sums these, newest day first, to find the day its
-- offset lands in, and walks the list index only inside that day instead of
-- entry by entry from the top. Triggers keep it exact on every path that
-- moves last_message_at (sends, inbound texts, deletions, scheduled
-- placeholders, cascades). SQLite only: its single writer cannot contend on
-- these rows, while on PostgreSQL today's row of a line would be written by
-- every concurrent send that starts a conversation (docs/decisions.md).
CREATE TABLE conversation_days (
    account_id BIGINT NOT NULL,
    line_id    BIGINT NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
    day        BIGINT NOT NULL, -- last_message_at / 86400000000 (µs per day)
    n          BIGINT NOT NULL,
    PRIMARY KEY (account_id, line_id, day)
) WITHOUT ROWID;

INSERT INTO conversation_days (account_id, line_id, day, n)
SELECT account_id, line_id, last_message_at / 86400000000, COUNT(*)
FROM conversations WHERE last_message_at IS NOT NULL
GROUP BY account_id, line_id, last_message_at / 86400000000;

CREATE TRIGGER conversation_days_insert AFTER INSERT ON conversations
WHEN NEW.last_message_at IS NOT NULL
BEGIN
    INSERT INTO conversation_days (account_id, line_id, day, n)
    VALUES (NEW.account_id, NEW.line_id, NEW.last_message_at / 86400000000, 1)
    ON CONFLICT (account_id, line_id, day) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER conversation_days_update AFTER UPDATE OF last_message_at ON conversations
WHEN (OLD.last_message_at / 86400000000) IS NOT (NEW.last_message_at / 86400000000)
BEGIN
    UPDATE conversation_days SET n = n - 1
    WHERE OLD.last_message_at IS NOT NULL AND account_id = OLD.account_id AND line_id = OLD.line_id
      AND day = OLD.last_message_at / 86400000000;
    INSERT INTO conversation_days (account_id, line_id, day, n)
    SELECT NEW.account_id, NEW.line_id, NEW.last_message_at / 86400000000, 1 WHERE NEW.last_message_at IS NOT NULL
    ON CONFLICT (account_id, line_id, day) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER conversation_days_delete AFTER DELETE ON conversations
WHEN OLD.last_message_at IS NOT NULL
BEGIN
    UPDATE conversation_days SET n = n - 1
    WHERE account_id = OLD.account_id AND line_id = OLD.line_id AND day = OLD.last_message_at / 86400000000;
END;
