-- Search pages walk calls_start newest first. With a direction or status
-- filter, every call in the window that the filter drops used to cost a
-- lookup of its table row; carrying both columns in the index lets the walk
-- drop them from the index entry alone, so a filtered page fetches only the
-- rows it returns (docs/benchmarks.md, call search).
CREATE INDEX calls_start_filters ON calls (account_id, start_time, id_sec, id_seq, direction, status);
DROP INDEX calls_start;
