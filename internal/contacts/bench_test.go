package contacts_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"switchboard/internal/auth"
	"switchboard/internal/contacts"
	"switchboard/internal/store/storetest"
)

// BenchmarkImport10k imports 10,000 contacts (a Google-style CSV: name,
// company, email, two numbers, a group) into a fresh account per
// iteration, on each engine: the figure in docs/benchmarks.md ("Contacts
// import"). Run with -benchtime=3x.
func BenchmarkImport10k(b *testing.B) {
	const n = 10_000
	var sb strings.Builder
	sb.WriteString("Name,Organization 1 - Name,E-mail 1 - Value,Phone 1 - Type,Phone 1 - Value,Group Membership\n")
	for i := range n {
		fmt.Fprintf(&sb, "Person %d Lastname,Company %d,person%d@example.com,Mobile,+1 415 %03d %04d ::: +1 628 %03d %04d,* myContacts ::: Patients\n",
			i, i%97, i, 200+i/10000, i%10000, 200+i/10000, i%10000)
	}
	data := []byte(sb.String())
	ctx := context.Background()
	for _, e := range storetest.Engines(b) {
		b.Run(string(e), func(b *testing.B) {
			st := storetest.Open(b, e)
			svc := contacts.New(st)
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				acct := storetest.Account(b, st, nil)
				b.StartTimer()
				rep, err := svc.Import(ctx, auth.Principal{AccountID: acct.ID, Scopes: auth.AllScopes}, contacts.CSV, data, nil)
				if err != nil || rep.Created != n {
					b.Fatalf("import: %v, created %d of %d, skipped %v", err, rep.Created, n, rep.Skipped[:min(3, len(rep.Skipped))])
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/import")
		})
	}
}
