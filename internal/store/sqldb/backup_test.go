package sqldb

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The writers' wal_autocheckpoint follows Options.WALAutocheckpoint: SQLite's
// 1000 pages by default, 0 (never) when negative, for Litestream.
func TestWALAutocheckpointOption(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ opt, want int }{{0, 1000}, {-1, 0}, {250, 250}} {
		db, err := Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "a.db"), Options{WALAutocheckpoint: c.opt}, testGeneration)
		if err != nil {
			t.Fatal(err)
		}
		var got int
		if err := db.Writer().QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if got != c.want {
			t.Errorf("Options.WALAutocheckpoint %d: the writer's wal_autocheckpoint is %d, want %d", c.opt, got, c.want)
		}
	}
}

// VacuumInto copies what was committed, including what is still only in
// the WAL; the copy opens read-only without a -wal or -shm file appearing
// beside it, and passes the integrity checks.
func TestVacuumIntoAndOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	defer db.Close()
	if _, err := db.Writer().ExecContext(ctx, `INSERT INTO items (name) VALUES ('one'), ('two')`); err != nil {
		t.Fatal(err)
	}
	size, err := db.SizeBytes(ctx)
	if err != nil || size <= 0 {
		t.Fatalf("SizeBytes: %d, %v", size, err)
	}
	dir := t.TempDir()
	dst := filepath.Join(dir, "copy.db")
	if err := db.VacuumInto(ctx, dst); err != nil {
		t.Fatal(err)
	}
	if err := db.VacuumInto(ctx, dst); err == nil || !strings.Contains(err.Error(), dst) {
		t.Errorf("VacuumInto over a database: %v; want an error naming it", err)
	}
	cp, err := OpenReadOnly(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := cp.QueryRow(ctx, `SELECT COUNT(*) FROM items`).Scan(&n); err != nil || n != 2 {
		t.Errorf("the copy holds %d items (%v), want 2", n, err)
	}
	integrity, fks, err := cp.Integrity(ctx)
	if err != nil || integrity != nil || fks != nil {
		t.Errorf("Integrity of the copy: %v %v %v", integrity, fks, err)
	}
	if _, err := cp.Writer().ExecContext(ctx, `INSERT INTO items (name) VALUES ('three')`); err == nil {
		t.Errorf("a write through OpenReadOnly succeeded")
	}
	cp.Close()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("after opening the copy read-only the directory holds %v, want only copy.db", names)
	}

	if _, err := OpenReadOnly(ctx, filepath.Join(dir, "missing.db")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("OpenReadOnly of a missing file: %v", err)
	}
	junk := filepath.Join(dir, "junk.db")
	os.WriteFile(junk, []byte(strings.Repeat("not a database ", 100)), 0o600)
	if _, err := OpenReadOnly(ctx, junk); err == nil || !strings.Contains(err.Error(), junk) {
		t.Errorf("OpenReadOnly of a file that is not a database: %v", err)
	}
}

// A copy whose name holds what a URI would read as its query or fragment
// still opens (fileURI escapes them).
func TestOpenReadOnlyOddName(t *testing.T) {
	ctx := context.Background()
	db := openSQLite(t)
	defer db.Close()
	dst := filepath.Join(t.TempDir(), "a b?c#d%e.db")
	if err := db.VacuumInto(ctx, dst); err != nil {
		t.Fatal(err)
	}
	cp, err := OpenReadOnly(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	var n int
	if err := cp.QueryRow(ctx, `SELECT COUNT(*) FROM gen_counter`).Scan(&n); err != nil || n != 1 {
		t.Errorf("copy %q: %d rows, %v", dst, n, err)
	}
}

// A served database whose WAL was just checkpointed (empty, beside its
// -shm) is read under locks, not as immutable: a commit the server makes
// and checkpoints while the reader is open is seen by the reader's next
// read, where an immutable open would go on reading its stale pages.
func TestOpenReadOnlyServed(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "served.db")
	db := openSQLiteAt(t, path)
	defer db.Close()
	createTestSchema(t, db)
	checkpoint := func() {
		t.Helper()
		if _, err := db.Writer().ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			t.Fatal(err)
		}
		if wal, err := os.Stat(path + "-wal"); err != nil || wal.Size() != 0 {
			t.Fatalf("after the checkpoint the -wal: %v, %v; want it empty", wal, err)
		}
	}
	checkpoint()
	ro, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	count := func() int {
		t.Helper()
		var n int
		if err := ro.QueryRow(ctx, `SELECT COUNT(*) FROM items`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 0 {
		t.Fatalf("%d items, want 0", n)
	}
	if _, err := db.Writer().ExecContext(ctx, `INSERT INTO items (name) VALUES ('one')`); err != nil {
		t.Fatal(err)
	}
	checkpoint()
	if n := count(); n != 1 {
		t.Errorf("after a commit, checkpointed: the read-only open reads %d items, want 1", n)
	}
}
