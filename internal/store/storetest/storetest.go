// Package storetest opens fresh, migrated stores for tests: SQLite always, and
// PostgreSQL when SWITCHBOARD_TEST_POSTGRES holds a server URL. Each store gets
// its own database file or PostgreSQL schema, so tests can run in parallel.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver for schema setup

	"switchboard/internal/store"
)

// PostgresEnv names the variable holding the PostgreSQL URL for tests.
const PostgresEnv = "SWITCHBOARD_TEST_POSTGRES"

// Engines lists the engines a test should run against.
func Engines(t testing.TB) []store.Engine {
	engines := []store.Engine{store.SQLite}
	if PostgresURL(t) != "" {
		engines = append(engines, store.Postgres)
	}
	return engines
}

// PostgresURL returns the test server URL, or "" (having logged why) when unset.
func PostgresURL(t testing.TB) string {
	u := os.Getenv(PostgresEnv)
	if u == "" {
		t.Logf("%s is unset: PostgreSQL variants of store tests are skipped", PostgresEnv)
	}
	return u
}

// Each runs fn as a subtest once per engine, each with a fresh store.
func Each(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	for _, e := range Engines(t) {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			fn(t, Open(t, e))
		})
	}
}

// Open returns a fresh migrated store on engine, closed when the test ends.
func Open(t testing.TB, engine store.Engine) *store.Store {
	t.Helper()
	ctx := context.Background()
	dsn := DSN(t, engine)
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return s
}

// DSN returns the URL of a fresh, empty database for engine: a file in the
// test's temporary directory, or a new PostgreSQL schema dropped at cleanup.
func DSN(t testing.TB, engine store.Engine) string {
	t.Helper()
	if engine == store.SQLite {
		return "sqlite://" + filepath.Join(t.TempDir(), "test.db")
	}
	base := os.Getenv(PostgresEnv)
	if base == "" {
		t.Skipf("%s is unset", PostgresEnv)
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	defer admin.Close()
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer db.Close()
		db.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %s: %v", PostgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
