package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"switchboard/internal/auth"
	"switchboard/internal/contacts"
	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestSearchIndex checks the address book's search through its index
// (contact_terms) on each engine: word beginnings in name and company, all
// words required, any part of a number's digits, another account's contacts
// never found; an edit and a delete take the old terms away; and contacts
// that existed before migration 0037 are found after it.
func TestSearchIndex(t *testing.T) {
	ctx := context.Background()
	for _, e := range storetest.Engines(t) {
		t.Run(string(e), func(t *testing.T) {
			st := storetest.Open(t, e)
			svc := contacts.New(st)
			acct := storetest.Account(t, st, nil)
			other := storetest.Account(t, st, nil)
			p := auth.Principal{AccountID: acct.ID, Scopes: auth.AllScopes}
			create := func(p auth.Principal, name, company, number string) domain.Contact {
				t.Helper()
				c, err := svc.Create(ctx, p, contacts.Input{Name: &name, Company: &company,
					Numbers: &[]domain.ContactNumber{{Number: number}}})
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			ana := create(p, "Ana Müller", "Acme Dental", "+1 415 555 0101")
			ben := create(p, "Ben Okafor", "Zahnarzt Müller", "+1 628 555 4821")
			create(auth.Principal{AccountID: other.ID, Scopes: auth.AllScopes}, "Ana Okafor", "Acme", "+1 415 555 4821")
			search := func(q string) []string {
				t.Helper()
				got, err := svc.Search(ctx, acct.ID, q, 0, 20)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, c := range got {
					names = append(names, c.Name)
				}
				return names
			}
			check := func(when string) {
				t.Helper()
				for q, want := range map[string][]string{
					"mul":        {"Ben Okafor", "Ana Müller"}, // newest first; both have a word "müller"
					"MÜLLER ana": {"Ana Müller"},
					"acme":       {"Ana Müller"},
					"okaf":       {"Ben Okafor"},
					"kafor":      nil, // a word's beginning, not its middle
					"4821":       {"Ben Okafor"},
					"555 01":     {"Ana Müller"},
					"628555":     {"Ben Okafor"},
					"invoice":    nil,
				} {
					if got := search(q); !slices.Equal(got, want) {
						t.Errorf("%s: q=%q found %v, want %v", when, q, got, want)
					}
				}
			}
			check("written")

			// Back to the schema before 0037: the contacts are indexed by
			// the migration.
			err := st.Write(ctx, func(tx *store.Tx) error {
				for _, q := range []string{`DROP TABLE contact_terms`, `DELETE FROM schema_migrations WHERE version = '0037_contact_terms.sql'`} {
					if _, err := tx.Exec(ctx, q); err != nil {
						return fmt.Errorf("%s: %w", q, err)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			check("migrated")

			name, company := "Ben Adeyemi", ""
			if _, err := svc.Update(ctx, p, ben.ID, contacts.Input{Name: &name, Company: &company}); err != nil {
				t.Fatal(err)
			}
			if got := search("okafor"); got != nil {
				t.Errorf("the old name still finds %v", got)
			}
			if got := search("adey"); !slices.Equal(got, []string{"Ben Adeyemi"}) {
				t.Errorf("the new name finds %v", got)
			}
			if err := svc.Delete(ctx, p, ana.ID); err != nil {
				t.Fatal(err)
			}
			if got := search("0101"); got != nil {
				t.Errorf("a deleted contact's number still finds %v", got)
			}
		})
	}
}
