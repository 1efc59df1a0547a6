package store_test

import (
	"testing"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestWebhooksPermissionMigration writes roles in the schema before
// migration 0032 and checks that only the role that held every permission
// (what "all" created: the administrators') is given Webhooks; every role
// that hid something keeps hiding it from webhooks too.
func TestWebhooksPermissionMigration(t *testing.T) {
	for _, engine := range storetest.Engines(t) {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			st, err := store.Open(ctx, storetest.DSN(t, engine))
			noErr(t, err)
			defer st.Close()
			noErr(t, st.MigrateBefore(ctx, "0032"))
			roles := map[string]struct {
				users, numbers   string
				reports, records bool
				wantWebhooks     bool
			}{
				"admin":      {"all", "all", true, true, true},
				"manager":    {"all", "all", true, false, false},
				"no reports": {"all", "all", false, false, false},
				"front-desk": {"self", "assigned", false, false, false},
				"some lines": {"all", "assigned", true, true, false},
				"self only":  {"self", "all", true, true, false},
				"nothing":    {"", "", false, false, false},
			}
			noErr(t, st.ExecRaw(ctx, `INSERT INTO accounts (name, created_at) VALUES ('A', 0)`))
			for name, r := range roles {
				noErr(t, st.ExecRaw(ctx, `INSERT INTO roles (account_id, name, users_visibility, numbers_access, call_reports, allow_recordings) VALUES (1, ?, ?, ?, ?, ?)`,
					name, r.users, r.numbers, r.reports, r.records))
			}
			noErr(t, st.Migrate(ctx))
			for name, r := range roles {
				got, err := st.RoleByName(ctx, 1, name)
				noErr(t, err)
				want := domain.Permissions{Users: domain.UserVisibility(r.users), Numbers: domain.NumberAccess(r.numbers),
					CallReports: r.reports, AllowRecordings: r.records, Webhooks: r.wantWebhooks}
				if got.Permissions != want {
					t.Errorf("role %q after the migration: %+v, want %+v", name, got.Permissions, want)
				}
			}
		})
	}
}
