package sqldb

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// TestCacheUsesWALIndex checks that on SQLite the read cache really maps the
// WAL index (so the fast path runs in the other tests), that an unchanged
// database is answered without a generation query, and that a commit makes
// the next check query again.
func TestCacheUsesWALIndex(t *testing.T) {
	ctx := context.Background()
	s := openSQLite(t)
	defer s.Close()
	c := s.cache
	check := func() int64 {
		c.mu.Lock()
		defer c.mu.Unlock()
		v, err := c.current(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	check()
	check()
	if c.wal == nil {
		t.Fatal("the WAL index was not mapped")
	}
	seen := c.seen
	check()
	if c.seen != seen {
		t.Error("an unchanged database changed the recorded header")
	}
	before := check()
	if err := s.Write(ctx, DropCache, func(tx *Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if after := check(); after != before+1 || c.seen == seen {
		t.Errorf("after a write: generation %d → %d, header changed %v", before, after, c.seen != seen)
	}
}

// TestCacheBounded checks that the cache starts over instead of growing past
// maxCacheEntries, and that a value loaded before a commit is not kept.
func TestCacheBounded(t *testing.T) {
	ctx := context.Background()
	s := openSQLite(t)
	defer s.Close()
	c := s.cache
	_, _, v, err := c.Lookup(ctx, "k0")
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxCacheEntries {
		c.Keep(fmt.Sprint("k", i), i, v)
	}
	if len(c.entries) != maxCacheEntries {
		t.Fatalf("%d entries, want %d", len(c.entries), maxCacheEntries)
	}
	c.Keep("one more", 1, v)
	if len(c.entries) != 1 {
		t.Errorf("after one more: %d entries, want 1", len(c.entries))
	}
	if err := s.Write(ctx, DropCache, func(tx *Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.Lookup(ctx, "k1"); err != nil {
		t.Fatal(err)
	}
	c.Keep("stale", 1, v)
	if _, found, _, _ := c.Lookup(ctx, "stale"); found {
		t.Error("a value loaded before a commit was kept")
	}
}

// TestShmDescriptorOutlivesEveryStore checks that the process's -shm
// descriptor stays open while any DB has the database open, mapped or not:
// closing it would drop the remaining DBs' SQLite locks.
func TestShmDescriptorOutlivesEveryStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	a := openSQLiteAt(t, path)
	createTestSchema(t, a)
	a.cache.mu.Lock()
	a.cache.current(ctx)
	a.cache.current(ctx) // the second check maps the header
	a.cache.mu.Unlock()
	if a.cache.wal == nil || a.shm == nil {
		t.Fatal("the first DB did not map the WAL index")
	}
	b := openSQLiteAt(t, path) // open, never mapped
	sf := b.shm
	if sf == nil || sf != a.shm || sf.refs != 2 {
		t.Fatalf("DBs share %p/%p with %d references, want one descriptor held twice", a.shm, sf, sf.refs)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sf.f.Stat(); err != nil || sf.refs != 1 {
		t.Fatalf("after the first DB closed: descriptor %v, %d references; want open and 1", err, sf.refs)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := sf.f.Stat(); err == nil {
		t.Error("the descriptor is still open after the last DB closed")
	}
}
