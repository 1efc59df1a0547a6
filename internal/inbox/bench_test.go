package inbox_test

import (
	"context"
	"fmt"
	"testing"

	"switchboard/internal/auth"
	"switchboard/internal/contacts"
	"switchboard/internal/domain"
	"switchboard/internal/inbox"
	"switchboard/internal/store/storetest"
)

// BenchmarkListPage reads a first page of 50 conversations from the
// database (inbox.List: what a kept first page costs to load, and what
// every deeper page costs), half of whose numbers are contacts', on each
// engine: "names" with the contact names (a credential that may read
// contacts), "bare" without (one that may not: the lookup is skipped, as
// before issue 33). docs/benchmarks.md, "Contacts: names on the inbox".
func BenchmarkListPage(b *testing.B) {
	ctx := context.Background()
	for _, e := range storetest.Engines(b) {
		st := storetest.Open(b, e)
		acct := storetest.Account(b, st, nil)
		line := storetest.Line(b, st, acct.ID, &storetest.LineOpts{Number: "14155550100"})
		key := auth.Principal{AccountID: acct.ID, Scopes: auth.AllScopes}
		book := contacts.New(st)
		for i := range 200 {
			n := fmt.Sprintf("1415555%04d", 3000+i)
			storetest.Message(b, st, line, &storetest.MessageOpts{Other: []string{n}})
			if i%2 == 0 {
				name := fmt.Sprintf("Contact %d", i)
				if _, err := book.Create(ctx, key, contacts.Input{Name: &name, Numbers: &[]domain.ContactNumber{{Number: n}}}); err != nil {
					b.Fatal(err)
				}
			}
		}
		svc := inbox.New(inbox.Config{Store: st})
		for _, tc := range []struct {
			name   string
			scopes []auth.Scope
		}{{"names", auth.AllScopes}, {"bare", []auth.Scope{auth.SMSRead}}} {
			p := auth.Principal{AccountID: acct.ID, Scopes: tc.scopes}
			b.Run(string(e)+"/"+tc.name, func(b *testing.B) {
				for range b.N {
					page, err := svc.List(ctx, p, inbox.ListParams{Limit: 50})
					if err != nil || len(page) != 50 {
						b.Fatal(err, len(page))
					}
				}
			})
		}
	}
}
