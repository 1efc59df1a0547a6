package demo_test

import (
	"context"
	"testing"

	"switchboard/internal/demo"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestDemoRoles: of the demo's roles only the administrators manage
// webhooks (issue 32); the front desk and the manager do not.
func TestDemoRoles(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		res, err := demo.Seed(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]bool{"admin": true, "front-desk": false, "manager": false} {
			r, err := st.RoleByName(ctx, res.AccountID, name)
			if err != nil {
				t.Fatal(err)
			}
			if r.Permissions.Webhooks != want {
				t.Errorf("demo role %s: webhooks %v, want %v (%s)", name, r.Permissions.Webhooks, want, r.Permissions)
			}
		}
	})
}
