package sqldb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

// The tables the engine's tests write: the engine has none of its own.
var testGeneration = Generation{
	Read: `SELECT gen FROM gen_counter WHERE id = 1`,
	Bump: `UPDATE gen_counter SET gen = gen + 1 WHERE id = 1`,
}

var testSchema = []string{
	`CREATE TABLE gen_counter (id BIGINT PRIMARY KEY, gen BIGINT NOT NULL)`,
	`INSERT INTO gen_counter (id, gen) VALUES (1, 0)`,
	`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, created_at BIGINT NOT NULL DEFAULT 0)`,
}

// createTestSchema creates the test tables through the writers' pool.
func createTestSchema(t testing.TB, db *DB) {
	t.Helper()
	for _, q := range testSchema {
		if db.Engine() == Postgres {
			// A serial id, as SQLite's INTEGER PRIMARY KEY is.
			if q == testSchema[2] {
				q = `CREATE TABLE items (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, created_at BIGINT NOT NULL DEFAULT 0)`
			}
		}
		if _, err := db.Writer().ExecContext(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
}

// openSQLiteAt opens the SQLite database at path without creating tables.
func openSQLiteAt(t testing.TB, path string) *DB {
	t.Helper()
	db, err := Open(context.Background(), "sqlite://"+path, Options{}, testGeneration)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// openSQLite opens a fresh SQLite database with the test tables; the
// caller closes it.
func openSQLite(t testing.TB) *DB {
	t.Helper()
	db := openSQLiteAt(t, filepath.Join(t.TempDir(), "s.db"))
	createTestSchema(t, db)
	return db
}

// postgresURL is the test server's URL; the test is skipped without one.
func postgresURL(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("SWITCHBOARD_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("SWITCHBOARD_TEST_POSTGRES is unset")
	}
	return dsn
}

// openPostgresTest opens the test server (no schema needed) with o.
func openPostgresTest(t *testing.T, o Options) *DB {
	t.Helper()
	db, err := Open(context.Background(), postgresURL(t), o, testGeneration)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openPostgresSchema opens a fresh schema of the test server, with the test
// tables, dropped when the test ends.
func openPostgresSchema(t *testing.T) *DB {
	t.Helper()
	base := postgresURL(t)
	var b [6]byte
	rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if db, err := sql.Open("pgx", base); err == nil {
			db.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
			db.Close()
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	db, err := Open(context.Background(), u.String(), Options{}, testGeneration)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	createTestSchema(t, db)
	return db
}

// eachEngine runs fn on a fresh SQLite database, and on a fresh PostgreSQL
// schema when the test server is set.
func eachEngine(t *testing.T, fn func(t *testing.T, db *DB)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db := openSQLite(t)
		t.Cleanup(func() { db.Close() })
		fn(t, db)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		fn(t, openPostgresSchema(t))
	})
}

// names lists the items' names in id order.
func names(t testing.TB, db *DB) []string {
	t.Helper()
	rows, err := db.Readers().QueryContext(context.Background(), `SELECT name FROM items ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
