package sqldb

import (
	"context"
	"testing"
	"time"
)

func showStatementTimeout(t *testing.T, s *DB) string {
	t.Helper()
	var v string
	if err := s.r.QueryRowContext(context.Background(), `SHOW statement_timeout`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The statement timeout reaches PostgreSQL with the connection, cuts a
// statement that runs longer, and that failure counts as the database being
// unavailable (503, retry), not as an internal error. Behind PgBouncer it is
// not sent: PgBouncer refuses unknown startup parameters.
func TestStatementTimeout(t *testing.T) {
	t.Parallel()
	s := openPostgresTest(t, Options{StatementTimeout: 300 * time.Millisecond, MaxConns: 2})
	if got := showStatementTimeout(t, s); got != "300ms" {
		t.Errorf("SHOW statement_timeout: got %q, want 300ms", got)
	}
	_, err := s.r.ExecContext(context.Background(), `SELECT pg_sleep(2)`)
	if err == nil {
		t.Fatal("SELECT pg_sleep(2) with a 300 ms statement timeout: got no error")
	}
	if !s.Unavailable(err) {
		t.Errorf("Unavailable(%v): got false, want true", err)
	}

	if got := showStatementTimeout(t, openPostgresTest(t, Options{StatementTimeout: -1})); got != "0" {
		t.Errorf("no statement timeout: SHOW statement_timeout got %q, want 0", got)
	}
	if got := showStatementTimeout(t, openPostgresTest(t, Options{PgBouncer: true})); got != "0" {
		t.Errorf("PgBouncer: SHOW statement_timeout got %q, want 0 (not sent)", got)
	}
}

// A statement the database refuses is not "unavailable".
func TestUnavailableIsOnlyReachability(t *testing.T) {
	t.Parallel()
	s := openPostgresTest(t, Options{})
	_, err := s.r.ExecContext(context.Background(), `SELECT * FROM no_such_table`)
	if err == nil || s.Unavailable(err) {
		t.Errorf("SELECT from a missing table: got %v, Unavailable %t; want an error that is not unavailable", err, s.Unavailable(err))
	}
	if s.Unavailable(nil) {
		t.Error("Unavailable(nil): got true")
	}
}
