package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestMigrationsAndNewerDatabase: the status lists every migration, pending
// before Migrate and applied after; a database that a newer binary migrated
// is refused, naming what it does not know, and nothing is applied.
func TestMigrationsAndNewerDatabase(t *testing.T) {
	for _, e := range storetest.Engines(t) {
		t.Run(string(e), func(t *testing.T) {
			ctx := context.Background()
			st, err := store.Open(ctx, storetest.DSN(t, e))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			before, err := st.Migrations(ctx)
			if err != nil || len(before) == 0 {
				t.Fatalf("Migrations on an empty database: %d, %v; want every embedded one", len(before), err)
			}
			for _, m := range before {
				if !m.Known || !m.AppliedAt.IsZero() {
					t.Fatalf("on an empty database %+v is not pending", m)
				}
			}
			if err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			after, err := st.Migrations(ctx)
			if err != nil || len(after) != len(before) {
				t.Fatalf("Migrations after Migrate: %d, %v; want %d", len(after), err, len(before))
			}
			for i, m := range after {
				if m.Version != before[i].Version || !m.Known || m.AppliedAt.IsZero() {
					t.Fatalf("after Migrate: %+v, want %s applied", m, before[i].Version)
				}
			}

			const future = "9999_from_the_future.sql"
			if err := st.RecordMigration(ctx, future); err != nil {
				t.Fatal(err)
			}
			err = st.Migrate(ctx)
			var newer *store.NewerDatabaseError
			if !errors.As(err, &newer) || len(newer.Unknown) != 1 || newer.Unknown[0] != future ||
				newer.Latest != after[len(after)-1].Version || !strings.Contains(err.Error(), "newer Switchboard") {
				t.Fatalf("Migrate on a newer database: %v; want a NewerDatabaseError naming %s", err, future)
			}
			last, _ := st.Migrations(ctx)
			if m := last[len(last)-1]; m.Version != future || m.Known || m.AppliedAt.IsZero() {
				t.Fatalf("the newer migration in the status: %+v, want it applied and unknown", m)
			}
		})
	}
}
