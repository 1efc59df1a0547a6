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
-- whose sum falls to 0 stays.
--
-- Kept exact by triggers on the two tables whose columns it sums, so that no
-- write path (an inbound text, a read, an unread, a deletion, a cascade, a
-- backfill, a statement written later) can forget it. A send writes neither
-- column, and the triggers name their columns (UPDATE OF) and test a WHEN
-- before anything is queued, so a send runs none of them.
--
-- A counter row is hot: every inbound text of a line moves the row of each
-- user of the line. Updated in place by each statement it would stay locked
-- from there to the end of the write's group commit, so the groups of every
-- committer that touch a line would run one after the other, and two groups
-- touching two lines in opposite orders would deadlock. So the row triggers
-- only note the change in inbox_unread_pending (an insert: no row of anyone
-- else's is locked), and one deferred trigger per transaction folds the
-- transaction's notes into the counters at COMMIT, in key order: a counter
-- row is locked for the commit's flush only (as GroupMerge does for the
-- Contended writes), and every transaction locks counter rows in one order.
-- The notes never outlive their transaction (the fold deletes them), so the
-- table is UNLOGGED: no WAL for them, and a crash leaves nothing to lose.
CREATE TABLE inbox_unread_totals (
    user_id    BIGINT NOT NULL,
    account_id BIGINT NOT NULL,
    line_id    BIGINT NOT NULL,
    unread     BIGINT NOT NULL,
    PRIMARY KEY (user_id, account_id, line_id)
);

INSERT INTO inbox_unread_totals (user_id, account_id, line_id, unread)
SELECT user_id, account_id, line_id, SUM(unread) FROM inbox_reads WHERE unread > 0 GROUP BY user_id, account_id, line_id;
INSERT INTO inbox_unread_totals (user_id, account_id, line_id, unread)
SELECT 0, account_id, line_id, SUM(team_unread) FROM conversations WHERE team_unread > 0 GROUP BY account_id, line_id;

-- fold marks a transaction's first note: the one whose deferred trigger
-- folds them all (the others queue no trigger).
CREATE UNLOGGED TABLE inbox_unread_pending (
    user_id    BIGINT NOT NULL,
    account_id BIGINT NOT NULL,
    line_id    BIGINT NOT NULL,
    delta      BIGINT NOT NULL,
    fold       BOOLEAN NOT NULL
);

-- Notes delta for a counter row. The transaction-local setting says whether
-- the transaction has noted anything yet; it goes back to unset with a
-- savepoint's rollback, as the note and its queued trigger do.
CREATE FUNCTION inbox_unread_note(u BIGINT, a BIGINT, l BIGINT, delta BIGINT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    first BOOLEAN := coalesce(current_setting('switchboard.unread_noted', true), '') = '';
BEGIN
    IF delta = 0 THEN
        RETURN;
    END IF;
    IF first THEN
        PERFORM set_config('switchboard.unread_noted', 'on', true);
    END IF;
    INSERT INTO inbox_unread_pending (user_id, account_id, line_id, delta, fold) VALUES (u, a, l, delta, first);
END $$;

CREATE FUNCTION inbox_reads_totals() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.user_id = OLD.user_id AND NEW.account_id = OLD.account_id AND NEW.line_id = OLD.line_id THEN
        PERFORM inbox_unread_note(NEW.user_id, NEW.account_id, NEW.line_id, greatest(NEW.unread, 0) - greatest(OLD.unread, 0));
        RETURN NULL;
    END IF;
    IF TG_OP <> 'INSERT' THEN
        PERFORM inbox_unread_note(OLD.user_id, OLD.account_id, OLD.line_id, -greatest(OLD.unread, 0));
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM inbox_unread_note(NEW.user_id, NEW.account_id, NEW.line_id, greatest(NEW.unread, 0));
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION conversations_totals() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.account_id = OLD.account_id AND NEW.line_id = OLD.line_id THEN
        PERFORM inbox_unread_note(0, NEW.account_id, NEW.line_id, greatest(NEW.team_unread, 0) - greatest(OLD.team_unread, 0));
        RETURN NULL;
    END IF;
    IF TG_OP <> 'INSERT' THEN
        PERFORM inbox_unread_note(0, OLD.account_id, OLD.line_id, -greatest(OLD.team_unread, 0));
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM inbox_unread_note(0, NEW.account_id, NEW.line_id, greatest(NEW.team_unread, 0));
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER inbox_reads_totals_insert AFTER INSERT ON inbox_reads
    FOR EACH ROW WHEN (NEW.unread > 0) EXECUTE FUNCTION inbox_reads_totals();
CREATE TRIGGER inbox_reads_totals_delete AFTER DELETE ON inbox_reads
    FOR EACH ROW WHEN (OLD.unread > 0) EXECUTE FUNCTION inbox_reads_totals();
CREATE TRIGGER inbox_reads_totals_update AFTER UPDATE OF unread, user_id, account_id, line_id ON inbox_reads
    FOR EACH ROW WHEN (greatest(NEW.unread, 0) <> greatest(OLD.unread, 0) OR (NEW.unread > 0 AND
        (NEW.user_id, NEW.account_id, NEW.line_id) IS DISTINCT FROM (OLD.user_id, OLD.account_id, OLD.line_id)))
    EXECUTE FUNCTION inbox_reads_totals();
CREATE TRIGGER conversations_totals_insert AFTER INSERT ON conversations
    FOR EACH ROW WHEN (NEW.team_unread > 0) EXECUTE FUNCTION conversations_totals();
CREATE TRIGGER conversations_totals_delete AFTER DELETE ON conversations
    FOR EACH ROW WHEN (OLD.team_unread > 0) EXECUTE FUNCTION conversations_totals();
CREATE TRIGGER conversations_totals_update AFTER UPDATE OF team_unread, account_id, line_id ON conversations
    FOR EACH ROW WHEN (greatest(NEW.team_unread, 0) <> greatest(OLD.team_unread, 0) OR (NEW.team_unread > 0 AND
        (NEW.account_id, NEW.line_id) IS DISTINCT FROM (OLD.account_id, OLD.line_id)))
    EXECUTE FUNCTION conversations_totals();

-- The fold: the transaction's notes (the only ones it can see: the others
-- are uncommitted, and a committed transaction left none) summed per counter
-- row and added in key order.
CREATE FUNCTION inbox_unread_fold() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH d AS (DELETE FROM inbox_unread_pending RETURNING user_id, account_id, line_id, delta)
    INSERT INTO inbox_unread_totals (user_id, account_id, line_id, unread)
    SELECT user_id, account_id, line_id, SUM(delta) FROM d GROUP BY user_id, account_id, line_id
    HAVING SUM(delta) <> 0 ORDER BY user_id, account_id, line_id
    ON CONFLICT (user_id, account_id, line_id) DO UPDATE SET unread = inbox_unread_totals.unread + excluded.unread;
    RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER inbox_unread_fold AFTER INSERT ON inbox_unread_pending
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.fold) EXECUTE FUNCTION inbox_unread_fold();
