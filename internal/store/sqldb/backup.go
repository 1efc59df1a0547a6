package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
)

// ErrNotSQLite is the error of the SQLite-only operations (VacuumInto,
// SizeBytes) on PostgreSQL, whose copies are pg_dump's business.
var ErrNotSQLite = errors.New("store: only a SQLite database can be copied this way")

// VacuumInto writes a consistent copy of the SQLite database to dst, which
// must not exist or be empty, while other connections (a serving process)
// keep reading and writing. It is SQLite's VACUUM INTO: one read
// transaction, so the copy is the database as of one commit, and in WAL
// mode writers are not blocked by it nor does it restart when they commit
// (the online backup API, stepped a few pages at a time, restarts at every
// commit of another connection: docs/decisions.md). The copy is compacted
// (no free pages) and in rollback-journal mode; SQLite does not fsync it,
// so the caller does.
//
// It runs on a connection of its own opened with mode=ro: VACUUM INTO is
// refused on the reader pool's query_only connections ("attempt to write a
// readonly database"), and the writer pool's spare connection serves
// migrations and must not be held for the minutes a large copy takes. A
// read-only open reads the source and still writes dst, which SQLite opens
// separately.
func (db *DB) VacuumInto(ctx context.Context, dst string) error {
	if db.engine != SQLite {
		return ErrNotSQLite
	}
	src, err := sql.Open("sqlite", fileURI(db.path)+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("store: open %s for the copy: %w", db.path, err)
	}
	defer src.Close()
	src.SetMaxOpenConns(1)
	if _, err := src.ExecContext(ctx, `VACUUM INTO ?`, dst); err != nil {
		return fmt.Errorf("store: copy %s to %s: %w", db.path, dst, err)
	}
	return nil
}

// SizeBytes is the SQLite database's size in pages times the page size:
// what a copy's size approaches (a compacted copy drops the free pages).
func (db *DB) SizeBytes(ctx context.Context) (int64, error) {
	if db.engine != SQLite {
		return 0, ErrNotSQLite
	}
	var pages, size int64
	if err := db.r.QueryRowContext(ctx, `SELECT page_count, page_size FROM pragma_page_count(), pragma_page_size()`).Scan(&pages, &size); err != nil {
		return 0, fmt.Errorf("store: database size: %w", err)
	}
	return pages * size, nil
}

// OpenReadOnly opens the SQLite database file at path for reading only,
// writing nothing in its directory: for checking a copy, which nothing else
// should have open, or the database a server holds (migrate --status).
// The file is opened immutable (no locks, no -wal or -shm file), unless it
// is served: a -wal file beside it holds commits (the file was served after
// it was copied), or a -wal and a -shm are there (a server holds them).
// Then it is opened mode=ro so that those commits are read, under locks,
// and SQLite may need the -shm file. The DB has no committer, no
// cache and no write path: reads (Query, QueryRow, Readers, Writer) only.
func OpenReadOnly(ctx context.Context, path string) (*DB, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("store: %s does not exist", path)
	case err != nil:
		return nil, fmt.Errorf("store: %s: %w", path, unwrapPath(err))
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("store: %s is not a regular file", path)
	}
	// Opening is lazy: read a byte now so that a file we may not read is
	// reported as that, not as SQLite's "unable to open database file".
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("store: %s: cannot read it: %w", path, unwrapPath(err))
	}
	f.Close()
	mode := "mode=ro&immutable=1"
	if served(path) {
		mode = "mode=ro"
	}
	r, err := sql.Open("sqlite", fileURI(path)+"?"+mode+"&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	r.SetMaxOpenConns(1)
	db := &DB{engine: SQLite, w: r, r: r, path: path, now: func() time.Time { return time.Now().UTC() }}
	// A file that is not a database fails here (SQLite reads the header
	// at the first statement).
	if _, err := r.ExecContext(ctx, `SELECT COUNT(*) FROM sqlite_master`); err != nil {
		r.Close()
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	return db, nil
}

// served reports whether the SQLite database at path may be written
// while it is read, or has commits beyond its file: its -wal holds
// commits, or a -wal and -shm sit beside it (a server holds them, its WAL
// perhaps empty since the last checkpoint). Then it must be read with
// locks, not as immutable; neither file needs creating.
func served(path string) bool {
	wal, err := os.Stat(path + "-wal")
	if err != nil {
		return false
	}
	if wal.Size() > 0 {
		return true
	}
	_, err = os.Stat(path + "-shm")
	return err == nil
}

// Integrity runs SQLite's integrity_check and foreign_key_check and returns
// what they found: nil and nil for a sound database. Each finding is one
// line as SQLite reports it (a foreign key's as "TABLE row ROWID: no PARENT
// row"). Each check's findings come back as one JSON array in one row, so
// that the whole check runs within its statement's first step, the one a
// cancelled ctx interrupts (the driver does not interrupt later steps, and
// a damaged file can take long between two findings).
func (db *DB) Integrity(ctx context.Context) (integrity, foreignKeys []string, err error) {
	if db.engine != SQLite {
		return nil, nil, ErrNotSQLite
	}
	var lines []string
	if err := db.jsonRow(ctx, `SELECT json_group_array(integrity_check) FROM pragma_integrity_check`, &lines); err != nil {
		return nil, nil, fmt.Errorf("store: integrity_check: %w", err)
	}
	for _, l := range lines {
		if l != "ok" {
			integrity = append(integrity, l)
		}
	}
	var violations []struct {
		Table, Parent string
		RowID         *int64
	}
	if err := db.jsonRow(ctx, `SELECT json_group_array(json_object('table', "table", 'rowid', rowid, 'parent', parent)) FROM pragma_foreign_key_check`, &violations); err != nil {
		return nil, nil, fmt.Errorf("store: foreign_key_check: %w", err)
	}
	for _, v := range violations {
		var rowid int64
		if v.RowID != nil {
			rowid = *v.RowID
		}
		foreignKeys = append(foreignKeys, fmt.Sprintf("%s row %d: no %s row", v.Table, rowid, v.Parent))
	}
	return integrity, foreignKeys, nil
}

// jsonRow decodes the JSON text query returns in its one row into v.
func (db *DB) jsonRow(ctx context.Context, query string, v any) error {
	var text string
	if err := db.r.QueryRowContext(ctx, query).Scan(&text); err != nil {
		return err
	}
	return json.Unmarshal([]byte(text), v)
}

// fileURI is path as the path of a file: URI, escaped so that a '?', '#'
// or '%' in it is part of the name rather than the start of the query.
func fileURI(path string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return "file:" + r.Replace(path)
}

// SQLitePath is the file a SQLite dsn names ("" and false for PostgreSQL
// or another scheme), as Open reads it.
func SQLitePath(dsn string) (string, bool) {
	if isPostgresDSN(dsn) {
		return "", false
	}
	if strings.Contains(dsn, "://") && !strings.HasPrefix(dsn, "sqlite://") {
		return "", false
	}
	return strings.TrimPrefix(dsn, "sqlite://"), true
}

// isPostgresDSN reports whether dsn selects PostgreSQL.
func isPostgresDSN(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// EngineOf is the engine dsn selects, without connecting; "" for a scheme
// Open refuses.
func EngineOf(dsn string) Engine {
	if isPostgresDSN(dsn) {
		return Postgres
	}
	if _, ok := SQLitePath(dsn); ok {
		return SQLite
	}
	return ""
}
