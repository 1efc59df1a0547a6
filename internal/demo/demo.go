// Package demo fills a fresh database with a realistic demo account, so that
// "switchboard demo" has something to show. Each capability adds its data here.
package demo

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/money"
	"switchboard/internal/store"
)

// Result is what the demo prints: the account and the keys it made.
type Result struct {
	AccountID int64
	// Key has every scope; ReadOnlyKey only sms:read and users:read.
	Key, ReadOnlyKey string
	// Lines are the account's SMS lines; the first is unassigned.
	Lines []string
	Users map[string]domain.User // by username
	// Client is a registered OAuth client redirecting to DemoRedirectHost.
	Client store.OAuthClient
}

// PacedConnection is the demo's carrier connection (a sim at one text a
// second from a number), and PacedLine the line that sends through it.
const (
	PacedConnection = "paced-sim"
	PacedLine       = "14155550102"
)

// DemoRedirectHost is the allow-listed redirect host of the demo OAuth client.
const DemoRedirectHost = "app.example.com"

func randomString(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)[:n]
}

// Seed creates the demo account: three roles, six users, four lines and two keys.
func Seed(ctx context.Context, st *store.Store) (Result, error) {
	res := Result{Users: map[string]domain.User{}}
	acct := domain.Account{Name: "Acme Dental Group"}
	if err := st.CreateAccount(ctx, &acct); err != nil {
		return res, err
	}
	res.AccountID = acct.ID

	// Only the administrators manage webhooks ("all" includes it): a
	// subscription receives every line's texts and every call.
	roles := map[string]string{
		"admin":      "all",
		"front-desk": "users:self,numbers:assigned",
		"manager":    "users:all,numbers:all,reports",
	}
	roleIDs := map[string]int64{}
	for _, name := range []string{"admin", "front-desk", "manager"} {
		p, err := domain.ParsePermissions(roles[name])
		if err != nil {
			return res, err
		}
		r := domain.Role{AccountID: acct.ID, Name: name, Permissions: p}
		if err := st.CreateRole(ctx, &r); err != nil {
			return res, err
		}
		roleIDs[name] = r.ID
	}

	password, err := auth.HashPassword("demo-password")
	if err != nil {
		return res, err
	}
	people := []struct {
		username, first, last, title, role, tz, ext string
	}{
		{"maria", "Maria", "Garcia", "Practice Manager", "admin", "America/Chicago", "100"},
		{"james", "James", "Okafor", "Front Desk", "front-desk", "America/Chicago", "101"},
		{"li", "Li", "Chen", "Front Desk", "front-desk", "America/Chicago", "102"},
		{"sam", "Samantha", "O'Neil", "Hygienist", "front-desk", "America/Denver", "103"},
		{"raj", "Raj", "Patel", "Operations Manager", "manager", "America/New_York", "104"},
		{"", "Night", "Service", "Answering service", "", "America/Chicago", "199"},
	}
	for _, p := range people {
		u := domain.User{
			AccountID: acct.ID, RoleID: roleIDs[p.role], Username: p.username,
			FirstName: p.first, LastName: p.last, Title: p.title, TimeZone: p.tz, Extension: p.ext,
			Extensions: []string{p.ext}, Voicemails: []string{p.ext},
		}
		if p.username != "" {
			u.PasswordHash = password
			u.Email = p.username + "@acme-dental.example"
			u.Lines = []string{"SIP/" + p.ext}
		}
		if p.role == "" {
			u.Company = "Nightingale Answering Co."
		}
		if err := st.CreateUser(ctx, &u); err != nil {
			return res, err
		}
		res.Users[p.username] = u
	}

	lines := []domain.Line{
		{Number: "14155550100", Name: "Acme Dental", SMSEnabled: true, BulkEnabled: true},
		{Number: "14155550101", Name: "Front Desk", SMSEnabled: true, UserIDs: []int64{res.Users["james"].ID, res.Users["li"].ID}},
		{Number: "14155550102", Name: "Hygiene", SMSEnabled: true, UserIDs: []int64{res.Users["sam"].ID}},
		{Number: "14155550199", Name: "Fax", SMSEnabled: false},
	}
	for _, l := range lines {
		l.AccountID = acct.ID
		if err := st.CreateLine(ctx, &l); err != nil {
			return res, err
		}
		if l.SMSEnabled {
			res.Lines = append(res.Lines, l.Number)
		}
	}

	// The Hygiene line sends through a carrier connection of its own: a
	// simulated carrier that lets one text a second leave a number, so that
	// the queue behind a limit can be watched offline.
	paced := &store.CarrierConnection{Name: PacedConnection, Kind: "sim", Settings: map[string]string{"number-throughput": "1"}}
	if err := st.CreateCarrier(ctx, paced); err != nil {
		return res, fmt.Errorf("demo carrier connection: %w", err)
	}
	if err := st.SetLineCarrier(ctx, acct.ID, PacedLine, paced.ID); err != nil {
		return res, fmt.Errorf("demo carrier connection: %w", err)
	}

	if res.Key, _, err = auth.NewAPIKey(ctx, st, acct.ID, "demo (all scopes)", auth.AllScopes); err != nil {
		return res, fmt.Errorf("demo key: %w", err)
	}
	if res.ReadOnlyKey, _, err = auth.NewAPIKey(ctx, st, acct.ID, "demo (read only)", []auth.Scope{auth.SMSRead, auth.UsersRead}); err != nil {
		return res, fmt.Errorf("demo key: %w", err)
	}

	for _, r := range []struct{ prefix, sms, mms string }{
		{"1", "0.0079", "0.02"},
		{"44", "0.04", "0.1"},
		{"49", "0.075", "0.15"},
	} {
		rate := domain.Rate{AccountID: acct.ID, Prefix: r.prefix}
		if rate.SMS, err = money.Parse(r.sms); err != nil {
			return res, err
		}
		if rate.MMS, err = money.Parse(r.mms); err != nil {
			return res, err
		}
		if err := st.SetRate(ctx, &rate); err != nil {
			return res, err
		}
	}

	if err := seedInbox(ctx, st, acct.ID); err != nil {
		return res, fmt.Errorf("demo inbox: %w", err)
	}
	if err := seedContacts(ctx, st, acct.ID); err != nil {
		return res, fmt.Errorf("demo contacts: %w", err)
	}

	// An OAuth client, so a person can try the sign-in and consent pages.
	if err := st.AllowHost(ctx, DemoRedirectHost); err != nil {
		return res, err
	}
	res.Client = store.OAuthClient{ClientID: "demo-" + randomString(12), Name: "Acme CRM (demo)",
		RedirectURIs: []string{"https://" + DemoRedirectHost + "/oauth/callback"}}
	if err := st.CreateOAuthClient(ctx, &res.Client); err != nil {
		return res, err
	}

	// A second account shows isolation: its objects never appear above.
	other := domain.Account{Name: "Riverside Vet Clinic"}
	if err := st.CreateAccount(ctx, &other); err != nil {
		return res, err
	}
	vet := domain.User{AccountID: other.ID, FirstName: "Pat", LastName: "Morgan"}
	if err := st.CreateUser(ctx, &vet); err != nil {
		return res, err
	}
	return res, st.CreateLine(ctx, &domain.Line{AccountID: other.ID, Number: "12125550100", Name: "Riverside", SMSEnabled: true})
}
