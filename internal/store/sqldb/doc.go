// Package sqldb is the store's database engine: it opens SQLite or
// PostgreSQL, and runs the SQL the store's entities write, as fast as each
// engine allows. It knows no table of the store's and imports nothing of
// Switchboard's: the store's entity code (package store) is its only
// caller, and hands it statements with ? placeholders.
//
// What it does:
//
//   - Writes go through one entry point, DB.Write, whose WriteOptions say
//     what kind of write it is (DropCache or KeepCache; Contended; Alone).
//     Concurrent writes are queued and run together in one transaction
//     (group commit, group.go): on SQLite by one committer on the single
//     writer connection, through the driver's own interfaces rather than
//     database/sql (rawconn.go); on PostgreSQL by a few committers on pool
//     connections, with a write's deferred statements (Tx.ExecLater) and the
//     COMMIT sent in pgx pipelines. A write function sees a Tx: Exec,
//     ExecLater, QueryRow, Query, Insert, Now, and Touches (touches.go).
//   - Work on a row that every write of a kind updates can be merged over a
//     group and done once at its end (GroupMerge), declared by the code that
//     owns the row.
//   - Reads go to a reader pool (DB.Query, DB.QueryRow), with statements
//     prepared once per connection on SQLite (prepared.go).
//   - An exact read cache (Cached, cache.go) dropped by DropCache writes: on
//     SQLite through a generation row the caller's schema holds
//     (Generation) and a view of the WAL index that skips the generation
//     query when nothing was committed (walindex_unix.go); on PostgreSQL
//     through LISTEN/NOTIFY (cachepg.go).
//   - Encoded hot pages (Page, pages.go), each an account's, that a commit
//     makes stale when one of its writes named the account (Tx.Touches) or
//     named none: exact by a per-account commit stamp, with SQLite's
//     WAL-index header for other processes' commits and PostgreSQL's commit
//     notifications (naming the accounts) for other nodes', behind a fence
//     (pagefence.go).
//   - Engine selection and opening (db.go), PostgreSQL's pool, timeouts
//     and PgBouncer mode (pool.go), the SQLite path checks (sqlitepath.go),
//     the one-server lock (serverlock_unix.go), durability (synchronous.go),
//     and the drivers' errors (errors.go, DB.Unavailable).
//
// What it is not: it holds no schema (migrations and the tables they make
// belong to package store, which also names the generation row), no query
// builder and no entity; it decides nothing about what a write means. Its
// errors keep the "store:" prefix, since callers see them as the store's.
package sqldb
