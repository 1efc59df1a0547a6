-- Unread counts from maintained counters (issue 26; docs/decisions.md,
-- "Unread counts from counters").
--
-- GET /sms/unread without since reports, per line, the inbound texts unread
-- for the caller: for a user the sum of inbox_reads.unread over the user's
-- rows of the line (about 5,000 rows per user on the benchmark database),
-- for an API key the sum of conversations.team_unread over the account's
-- conversations of the line. inbox_unread_totals holds those sums, one row
-- per (user, account, line); user_id 0 is the team view. Only positive
-- values are summed, as the queries it replaces did (unread > 0). A row
-- whose sum falls to 0 stays (no insert and delete churn on every read).
--
-- Kept exact by triggers on the two tables whose columns it sums, so that no
-- write path (an inbound text, a read, an unread, a deletion, a cascade, a
-- backfill, a statement written later) can forget it. On SQLite the single
-- writer updates the counter in place: nothing else can hold its row. A send
-- writes neither column, and the triggers name their columns (UPDATE OF),
-- so a send runs none of them.
CREATE TABLE inbox_unread_totals (
    user_id    BIGINT NOT NULL,
    account_id BIGINT NOT NULL,
    line_id    BIGINT NOT NULL,
    unread     BIGINT NOT NULL,
    PRIMARY KEY (user_id, account_id, line_id)
) WITHOUT ROWID;

INSERT INTO inbox_unread_totals (user_id, account_id, line_id, unread)
SELECT user_id, account_id, line_id, SUM(unread) FROM inbox_reads WHERE unread > 0 GROUP BY user_id, account_id, line_id;
INSERT INTO inbox_unread_totals (user_id, account_id, line_id, unread)
SELECT 0, account_id, line_id, SUM(team_unread) FROM conversations WHERE team_unread > 0 GROUP BY account_id, line_id;

CREATE TRIGGER inbox_reads_totals_insert AFTER INSERT ON inbox_reads
WHEN NEW.unread > 0
BEGIN
    INSERT INTO inbox_unread_totals (user_id, account_id, line_id, unread) VALUES (NEW.user_id, NEW.account_id, NEW.line_id, NEW.unread)
    ON CONFLICT (user_id, account_id, line_id) DO UPDATE SET unread = unread + excluded.unread;
END;

CREATE TRIGGER inbox_reads_totals_delete AFTER DELETE ON inbox_reads
WHEN OLD.unread > 0
BEGIN
    UPDATE inbox_unread_totals SET unread = unread - OLD.unread
    WHERE user_id = OLD.user_id AND account_id = OLD.account_id AND line_id = OLD.line_id;
END;

-- The usual update: same row of the counters, one statement.
CREATE TRIGGER inbox_reads_totals_update AFTER UPDATE OF unread, user_id, account_id, line_id ON inbox_reads
WHEN NEW.user_id = OLD.user_id AND NEW.account_id = OLD.account_id AND NEW.line_id = OLD.line_id
    AND max(NEW.unread, 0) <> max(OLD.unread, 0)
BEGIN
    INSERT INTO inbox_unread_totals (user_id, account_id, line_id, unread) VALUES (NEW.user_id, NEW.account_id, NEW.line_id, max(NEW.unread, 0) - max(OLD.unread, 0))
    ON CONFLICT (user_id, account_id, line_id) DO UPDATE SET unread = unread + excluded.unread;
END;

-- A row moved to another user, account or line (no statement does so today).
CREATE TRIGGER inbox_reads_totals_move AFTER UPDATE OF unread, user_id, account_id, line_id ON inbox_reads
WHEN NOT (NEW.user_id = OLD.user_id AND NEW.account_id = OLD.account_id AND NEW.line_id = OLD.line_id)
BEGIN
    UPDATE inbox_unread_totals SET unread = unread - max(OLD.unread, 0)
    WHERE user_id = OLD.user_id AND account_id = OLD.account_id AND line_id = OLD.line_id;
    INSERT INTO inbox_unread_totals (user_id, account_id, line_id, unread) VALUES (NEW.user_id, NEW.account_id, NEW.line_id, max(NEW.unread, 0))
    ON CONFLICT (user_id, account_id, line_id) DO UPDATE SET unread = unread + excluded.unread;
END;

CREATE TRIGGER conversations_totals_insert AFTER INSERT ON conversations
WHEN NEW.team_unread > 0
BEGIN
    INSERT INTO inbox_unread_totals (user_id, account_id, line_id, unread) VALUES (0, NEW.account_id, NEW.line_id, NEW.team_unread)
    ON CONFLICT (user_id, account_id, line_id) DO UPDATE SET unread = unread + excluded.unread;
END;

CREATE TRIGGER conversations_totals_delete AFTER DELETE ON conversations
WHEN OLD.team_unread > 0
BEGIN
    UPDATE inbox_unread_totals SET unread = unread - OLD.team_unread
    WHERE user_id = 0 AND account_id = OLD.account_id AND line_id = OLD.line_id;
END;

CREATE TRIGGER conversations_totals_update AFTER UPDATE OF team_unread, account_id, line_id ON conversations
WHEN NEW.account_id = OLD.account_id AND NEW.line_id = OLD.line_id
    AND max(NEW.team_unread, 0) <> max(OLD.team_unread, 0)
BEGIN
    INSERT INTO inbox_unread_totals (user_id, account_id, line_id, unread) VALUES (0, NEW.account_id, NEW.line_id, max(NEW.team_unread, 0) - max(OLD.team_unread, 0))
    ON CONFLICT (user_id, account_id, line_id) DO UPDATE SET unread = unread + excluded.unread;
END;

CREATE TRIGGER conversations_totals_move AFTER UPDATE OF team_unread, account_id, line_id ON conversations
WHEN NOT (NEW.account_id = OLD.account_id AND NEW.line_id = OLD.line_id)
BEGIN
    UPDATE inbox_unread_totals SET unread = unread - max(OLD.team_unread, 0)
    WHERE user_id = 0 AND account_id = OLD.account_id AND line_id = OLD.line_id;
    INSERT INTO inbox_unread_totals (user_id, account_id, line_id, unread) VALUES (0, NEW.account_id, NEW.line_id, max(NEW.team_unread, 0))
    ON CONFLICT (user_id, account_id, line_id) DO UPDATE SET unread = unread + excluded.unread;
END;
