package main

import (
	"context"
	"database/sql"
	"slices"
	"testing"
	"time"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// The COPY load must leave exactly what ingesting every call through
// store.SaveCall leaves (ingested_at aside): the calls with their derived
// fields, their filter values, the hourly and daily counts, the vocabulary,
// and the identity sequence where the next ingested call takes it up.
func TestCopyMatchesIngest(t *testing.T) {
	if storetest.PostgresURL(t) == "" {
		t.Skip("needs PostgreSQL")
	}
	ctx := context.Background()
	// Few callers over a week, so that calls repeat and get called back.
	o := options{calls: 1500, end: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), days: 7, callers: 30}
	dump := map[string][]string{}
	for _, via := range []string{"copy", "ingest"} {
		o.dsn, o.via = storetest.DSN(t, store.Postgres), via
		res, err := run(ctx, o)
		if err != nil {
			t.Fatalf("%s: %v", via, err)
		}
		if res.stored != o.calls {
			t.Fatalf("%s stored %d calls, want %d", via, res.stored, o.calls)
		}
		db, err := sql.Open("pgx", o.dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var rows []string
		for _, q := range []string{
			`SELECT (to_jsonb(c) - 'ingested_at')::text FROM calls c ORDER BY id`,
			`SELECT to_jsonb(t)::text FROM call_tags t ORDER BY call_pk, kind, value`,
			`SELECT to_jsonb(n)::text FROM call_counts n ORDER BY account_id, hour, direction, status`,
			`SELECT to_jsonb(v)::text FROM call_vocabulary v ORDER BY account_id, kind, value`,
			`SELECT 'sequence ' || pg_sequence_last_value(pg_get_serial_sequence('calls', 'id'))`,
		} {
			r, err := db.QueryContext(ctx, q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			for r.Next() {
				var s string
				if err := r.Scan(&s); err != nil {
					t.Fatal(err)
				}
				rows = append(rows, s)
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			r.Close()
		}
		dump[via] = rows
		var repeated, calledBack int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FILTER (WHERE repeated > 0), COUNT(called_back) FROM calls`).Scan(&repeated, &calledBack); err != nil {
			t.Fatal(err)
		}
		if repeated == 0 || calledBack == 0 {
			t.Fatalf("%s: %d repeated and %d called-back calls: the set does not exercise the derived fields", via, repeated, calledBack)
		}
	}
	c, i := dump["copy"], dump["ingest"]
	if len(c) != len(i) {
		t.Errorf("copy left %d rows, ingest %d", len(c), len(i))
	}
	for k := range min(len(c), len(i)) {
		if c[k] != i[k] {
			t.Fatalf("row %d differs:\ncopy:   %s\ningest: %s", k, c[k], i[k])
		}
	}
	if !slices.Equal(c, i) {
		t.Fatal("copy and ingest differ")
	}
}
