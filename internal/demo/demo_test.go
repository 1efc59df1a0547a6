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

// TestDemoContacts: every patient is a contact under the name the texts
// and calls use, so the inbox shows names.
func TestDemoContacts(t *testing.T) {
	st := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	res, err := demo.Seed(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	// Patient 0 and patient 399 (demo.Patients-1), and a line: no one's.
	refs, err := st.ContactRefs(ctx, res.AccountID, []string{"14155552000", "14155552399", "14155550100"})
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 2 || refs["14155552000"].Name != "Olivia Brown" || refs["14155552399"].Name != "Henry Walker" {
		t.Errorf("patients' contacts: %+v", refs)
	}
}
