-- Offboarding (issue 32; docs/decisions.md, "Offboarding a person").
--
-- disabled_at: the user cannot sign in (switchboard user disable); NULL is
-- enabled. deleted_at: the user is deleted (switchboard user delete) and gone
-- from every list and lookup, but the row stays, its username freed and its
-- password cleared: SQLite reuses the largest id after a delete, and a new
-- person must not inherit the comments, activity and calls that name the old
-- one's id.
ALTER TABLE users ADD COLUMN disabled_at BIGINT;
ALTER TABLE users ADD COLUMN deleted_at BIGINT;
