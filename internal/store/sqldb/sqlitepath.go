package sqldb

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// checkSQLitePath says what keeps SQLite from using path, naming the path
// and the reason, before SQLite would say only "unable to open database file
// (14)". SQLite needs the file readable and writable (created if missing)
// and its directory writable, for the -wal and -shm files beside it.
func checkSQLitePath(path string) error {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("store: SQLite database %s: directory %s does not exist (create it first)", path, dir)
	case err != nil:
		return fmt.Errorf("store: SQLite database %s: %w", path, err)
	case !fi.IsDir():
		return fmt.Errorf("store: SQLite database %s: %s is not a directory", path, dir)
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("store: SQLite database %s is a directory, not a file", path)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("store: SQLite database %s: cannot open it for reading and writing: %w", path, unwrapPath(err))
	}
	f.Close()
	// The directory must take new files too: SQLite creates -wal and -shm
	// there, and fails with the same opaque error when it cannot.
	probe, err := os.CreateTemp(dir, ".switchboard-probe-*")
	if err != nil {
		return fmt.Errorf("store: SQLite database %s: cannot create files in %s (SQLite keeps its -wal and -shm files there): %w", path, dir, unwrapPath(err))
	}
	probe.Close()
	os.Remove(probe.Name())
	return nil
}

// SQLiteFile is one file of a SQLite database: its path and what it is.
type SQLiteFile struct {
	Path string
	What string // e.g. "the database's write-ahead log"
}

// SQLiteFiles are the files of the SQLite database at path that SQLite and
// a serving process read and write: the database, its -wal, -shm and
// -journal files, and the lock a server holds (ClaimServing). Some may not
// exist at the moment; each is the database's as soon as it does.
func SQLiteFiles(path string) []SQLiteFile {
	return []SQLiteFile{
		{path, "the database itself"},
		{path + "-wal", "the database's write-ahead log (its latest commits)"},
		{path + "-shm", "the database's shared-memory index"},
		{path + "-journal", "the database's rollback journal"},
		{lockPath(path), "the lock a serving switchboard holds"},
	}
}

// lockPath is the file a serving process locks (ClaimServing).
func lockPath(path string) string { return path + ".lock" }

// unwrapPath drops a *fs.PathError's operation and path, which the caller's
// message already names, keeping the reason ("permission denied").
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
