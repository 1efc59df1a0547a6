package demo

import (
	"context"
	"fmt"
	"strings"

	"switchboard/internal/auth"
	"switchboard/internal/contacts"
	"switchboard/internal/store"
)

// seedContacts fills the address book with the patients (issue 33), so the
// inbox and the call log show their names: each under the name the texts
// and the calls already use, with the number they text from, through the
// import a clinic would use for its patient list.
func seedContacts(ctx context.Context, st *store.Store, accountID int64) error {
	var b strings.Builder
	b.WriteString("Name,Phone,Email,Tags\n")
	for k := range Patients {
		n := patientNumber(k)
		name := patientName(n)
		email := ""
		if k%3 == 0 {
			email = strings.ToLower(strings.ReplaceAll(name, " ", ".")) + "@example.com"
		}
		tags := "patient"
		if k%10 == 0 {
			tags += ";new patient"
		}
		fmt.Fprintf(&b, "%s,+%s,%s,%s\n", name, n, email, tags)
	}
	p := auth.Principal{AccountID: accountID, Scopes: auth.AllScopes}
	rep, err := contacts.New(st).Import(ctx, p, contacts.CSV, []byte(b.String()), nil)
	if err != nil {
		return err
	}
	if rep.Created != Patients {
		return fmt.Errorf("%d patients' contacts made of %d: %+v", rep.Created, Patients, rep.Skipped)
	}
	return nil
}
