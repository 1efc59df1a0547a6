-- The exact total of a search sums one (direction, status) row per day and
-- hour of its window. Keyed hour first, a month's sum stepped over the eleven
-- other (direction, status) rows of every day to find the one it adds (360
-- rows read for 30 used); keyed by (direction, status) first, each row it
-- adds is next to the previous one (docs/benchmarks.md, call search). SQLite
-- only: PostgreSQL's table has its own migration.
CREATE TABLE call_counts_new (
    account_id BIGINT NOT NULL,
    direction  TEXT   NOT NULL,
    status     TEXT   NOT NULL,
    hour       BIGINT NOT NULL,
    n          BIGINT NOT NULL,
    PRIMARY KEY (account_id, direction, status, hour)
) WITHOUT ROWID;
INSERT INTO call_counts_new (account_id, direction, status, hour, n)
SELECT account_id, direction, status, hour, n FROM call_counts;
DROP TABLE call_counts;
ALTER TABLE call_counts_new RENAME TO call_counts;
