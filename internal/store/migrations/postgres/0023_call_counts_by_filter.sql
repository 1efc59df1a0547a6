-- The exact total of a search sums one (direction, status) row per day and
-- hour of its window. Keyed hour first, a month's sum stepped over the other
-- (direction, status) rows of every day and fetched each row it added from
-- the table, where a year's day rows lie one per page; keyed by (direction,
-- status) first with n carried in the index, the rows it adds are adjacent
-- index entries and the sum never reads the table (4 buffers instead of 35
-- for a month of a 10M-call year). It also gives the statement a plan cheap
-- enough that PostgreSQL keeps its generic plan instead of planning it again
-- on every search, which cost the year 0.3 ms per search that a month-only
-- database did not pay (docs/benchmarks.md, call search). Updates of n are no
-- longer HOT: each ingested call adds 8 index entries, which bottom-up index
-- deletion and vacuum remove. SQLite has its own migration (0024).
ALTER TABLE call_counts DROP CONSTRAINT call_counts_pkey,
    ADD PRIMARY KEY (account_id, direction, status, hour) INCLUDE (n);
