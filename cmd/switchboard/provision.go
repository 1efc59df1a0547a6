package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/bytesize"
	"switchboard/internal/domain"
	"switchboard/internal/phone"
	"switchboard/internal/store"
)

func cmdMigrate(ctx context.Context, c *cli, args []string) error {
	var status bool
	if err := c.parse("migrate", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&status, "status", false, "list applied and pending migrations; apply nothing")
	}); err != nil {
		return err
	}
	if status {
		return migrateStatus(ctx, c)
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	c.print(map[string]any{"migrated": true, "engine": st.Engine()}, "migrations applied")
	return nil
}

// migrateStatus lists the migrations this binary has and the database has
// applied, changing nothing: before an upgrade it says what the new binary
// will apply; after a downgrade, what the database has that the binary
// does not know.
func migrateStatus(ctx context.Context, c *cli) error {
	st, err := c.openReadOnly(ctx)
	if err != nil {
		return err
	}
	all, err := st.Migrations(ctx)
	if err != nil {
		return err
	}
	type row struct {
		Version   string     `json:"version"`
		State     string     `json:"state"` // applied, pending, unknown
		AppliedAt *time.Time `json:"appliedAt,omitempty"`
	}
	rows := make([]row, len(all))
	var applied, pending, unknown int
	var b strings.Builder
	for i, m := range all {
		r := row{Version: m.Version, State: "applied"}
		switch {
		case !m.Known:
			r.State, unknown = "unknown", unknown+1
		case m.AppliedAt.IsZero():
			r.State, pending = "pending", pending+1
		default:
			applied++
		}
		if !m.AppliedAt.IsZero() {
			at := m.AppliedAt
			r.AppliedAt = &at
		}
		rows[i] = r
		switch r.State {
		case "applied":
			fmt.Fprintf(&b, "  %-44s applied %s\n", m.Version, m.AppliedAt.Format(time.RFC3339))
		case "pending":
			fmt.Fprintf(&b, "  %-44s pending\n", m.Version)
		default:
			fmt.Fprintf(&b, "  %-44s applied %s by a newer Switchboard: unknown to this binary\n", m.Version, m.AppliedAt.Format(time.RFC3339))
		}
	}
	summary := fmt.Sprintf("%s database: %d applied, %d pending", st.Engine(), applied, pending)
	switch {
	case unknown > 0:
		summary += fmt.Sprintf(", %d unknown to this binary (the database is newer: this binary refuses to serve it)", unknown)
	case pending > 0:
		summary += " (applied by `switchboard migrate` or when `serve` starts)"
	default:
		summary += " (up to date)"
	}
	c.print(map[string]any{"engine": st.Engine(), "applied": applied, "pending": pending, "unknown": unknown, "migrations": rows},
		summary+"\n"+b.String())
	return nil
}

func cmdAccountCreate(ctx context.Context, c *cli, args []string) error {
	var name string
	if err := c.parse("account create", args, func(fs *flag.FlagSet) {
		fs.StringVar(&name, "name", "", "account name (required)")
	}); err != nil {
		return err
	}
	if strings.TrimSpace(name) == "" {
		return usageError{"--name is required"}
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	a := domain.Account{Name: name}
	if err := st.CreateAccount(ctx, &a); err != nil {
		return err
	}
	c.print(map[string]any{"id": a.ID, "name": a.Name}, fmt.Sprintf("account %d created: %s", a.ID, a.Name))
	return nil
}

func cmdAccountList(ctx context.Context, c *cli, args []string) error {
	st, err := c.parseOpen(ctx, "account list", args)
	if err != nil {
		return err
	}
	all, err := st.Accounts(ctx)
	if err != nil {
		return err
	}
	media, err := st.MediaUsages(ctx)
	if err != nil {
		return err
	}
	type row struct {
		ID                int64  `json:"id"`
		Name              string `json:"name"`
		RestrictSMSDelete bool   `json:"restrictSmsDelete"`
		SensitiveReverify bool   `json:"sensitiveReverify"`
		MediaUsed         int64  `json:"mediaUsed"`  // bytes of hosted media
		MediaQuota        int64  `json:"mediaQuota"` // bytes
	}
	printList(c, "accounts", "ID\tNAME\tRESTRICT SMS DELETE\tSENSITIVE REVERIFY\tMEDIA USED\tMEDIA QUOTA", all, func(a domain.Account) (row, string) {
		u := media[a.ID]
		return row{a.ID, a.Name, a.RestrictSMSDelete, a.SensitiveReverify, u.Used, u.Quota},
			fmt.Sprintf("%d\t%s\t%t\t%t\t%s\t%s", a.ID, a.Name, a.RestrictSMSDelete, a.SensitiveReverify, bytesize.Format(u.Used), bytesize.Format(u.Quota))
	})
	return nil
}

func cmdAccountSet(ctx context.Context, c *cli, args []string) error {
	var restrict, reverify optionalBool
	var quota optionalSize
	id, st, err := c.openAccount(ctx, "account set", args, func(fs *flag.FlagSet) {
		fs.Var(&restrict, "restrict-sms-delete", "forbid deleting single messages over the API (true/false)")
		fs.Var(&reverify, "sensitive-reverify", "sensitive-content re-verification: recordings unavailable over the API (true/false)")
		fs.Var(&quota, "media-quota", "storage for hosted media (uploads and sent attachments), e.g. 500MiB, 1GiB, 750MB or bytes; default 1GiB")
	})
	if err != nil {
		return err
	}
	a, err := st.Account(ctx, id)
	if err != nil {
		return err
	}
	restrict.apply(&a.RestrictSMSDelete)
	reverify.apply(&a.SensitiveReverify)
	if err := st.UpdateAccountSettings(ctx, a); err != nil {
		return err
	}
	if quota.set {
		if err := st.SetMediaQuota(ctx, id, quota.value); err != nil {
			return err
		}
	}
	u, err := st.MediaUsage(ctx, id)
	if err != nil {
		return err
	}
	c.print(map[string]any{"id": a.ID, "restrictSmsDelete": a.RestrictSMSDelete, "sensitiveReverify": a.SensitiveReverify, "mediaQuota": u.Quota, "mediaUsed": u.Used},
		fmt.Sprintf("account %d: restrict-sms-delete=%t sensitive-reverify=%t media-quota=%s (in use: %s)", a.ID, a.RestrictSMSDelete, a.SensitiveReverify,
			bytesize.Format(u.Quota), bytesize.Format(u.Used)))
	return nil
}

func cmdRoleCreate(ctx context.Context, c *cli, args []string) error {
	account, name, p, err := roleArgs(c, "role create", args)
	if err != nil {
		return err
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	r := domain.Role{AccountID: account, Name: name, Permissions: p}
	if err := st.CreateRole(ctx, &r); err != nil {
		return err
	}
	c.print(map[string]any{"id": r.ID, "account": account, "name": r.Name, "permissions": p.String()},
		fmt.Sprintf("role %d created: %s (%s)", r.ID, r.Name, p))
	return nil
}

func cmdRoleList(ctx context.Context, c *cli, args []string) error {
	account, st, err := c.openAccount(ctx, "role list", args, nil)
	if err != nil {
		return err
	}
	roles, err := st.Roles(ctx, account)
	if err != nil {
		return err
	}
	type row struct {
		ID          int64  `json:"id"`
		Name        string `json:"name"`
		Permissions string `json:"permissions"`
	}
	printList(c, "roles", "ID\tNAME\tPERMISSIONS", roles, func(r domain.Role) (row, string) {
		return row{r.ID, r.Name, r.Permissions.String()}, fmt.Sprintf("%d\t%s\t%s", r.ID, r.Name, r.Permissions)
	})
	return nil
}

// cmdRoleSet replaces a role's permissions (how an existing role is given,
// or loses, a permission such as webhooks).
func cmdRoleSet(ctx context.Context, c *cli, args []string) error {
	account, name, p, err := roleArgs(c, "role set", args)
	if err != nil {
		return err
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	r, err := st.SetRolePermissions(ctx, account, name, p)
	if err != nil {
		return err
	}
	c.print(map[string]any{"id": r.ID, "account": account, "name": r.Name, "permissions": r.Permissions.String()},
		fmt.Sprintf("role %d set: %s (%s)", r.ID, r.Name, r.Permissions))
	return nil
}

// roleArgs reads the flags role create and role set share.
func roleArgs(c *cli, cmd string, args []string) (account int64, name string, p domain.Permissions, err error) {
	var perms string
	if err := c.parse(cmd, args, func(fs *flag.FlagSet) {
		fs.Int64Var(&account, "account", 0, "account id (required)")
		fs.StringVar(&name, "name", "", "role name (required)")
		fs.StringVar(&perms, "permissions", "", "comma-separated: users:all|users:self, numbers:all|numbers:assigned, reports, recordings, webhooks, or all")
	}); err != nil {
		return 0, "", p, err
	}
	if account <= 0 || strings.TrimSpace(name) == "" {
		return 0, "", p, usageError{"--account and --name are required"}
	}
	if p, err = domain.ParsePermissions(perms); err != nil {
		return 0, "", p, usageError{err.Error()}
	}
	return account, name, p, nil
}

func cmdUserCreate(ctx context.Context, c *cli, args []string) error {
	var account int64
	var u domain.User
	var password, passwordFile, role, exts, lines, numbers, voicemails string
	if err := c.parse("user create", args, func(fs *flag.FlagSet) {
		fs.Int64Var(&account, "account", 0, "account id (required)")
		fs.StringVar(&u.FirstName, "first", "", "first name (required)")
		fs.StringVar(&u.LastName, "last", "", "last name (required)")
		fs.StringVar(&u.Username, "username", "", "portal username (sign-in); unique across accounts")
		fs.StringVar(&password, "password", "", "portal password (needs --username); --password-file keeps it out of the shell history")
		fs.StringVar(&passwordFile, "password-file", "", "read the portal password from the first line of this `file`; - reads stdin (needs --username)")
		fs.StringVar(&role, "role", "", "role name")
		fs.StringVar(&u.Title, "title", "", "job title")
		fs.StringVar(&u.Email, "email", "", "email address")
		fs.StringVar(&u.Mobile, "mobile", "", "personal cell number")
		fs.StringVar(&u.Company, "company", "", "company override (default: the account name)")
		fs.StringVar(&u.TimeZone, "timezone", "", "IANA time zone, e.g. America/Chicago (the API reports UTC when omitted)")
		fs.StringVar(&u.Extension, "extension", "", "dial-by-name extension")
		fs.StringVar(&exts, "extensions", "", "comma-separated PBX extensions")
		fs.StringVar(&lines, "lines", "", "comma-separated SIP lines")
		fs.StringVar(&numbers, "numbers", "", "comma-separated DIDs owned")
		fs.StringVar(&voicemails, "voicemails", "", "comma-separated mailbox names")
	}); err != nil {
		return err
	}
	if account <= 0 || strings.TrimSpace(u.FirstName) == "" || strings.TrimSpace(u.LastName) == "" {
		return usageError{"--account, --first and --last are required"}
	}
	if (password != "" || passwordFile != "") && u.Username == "" {
		return usageError{"--password needs --username"}
	}
	if u.TimeZone != "" && !validTimeZone(u.TimeZone) {
		return usageError{fmt.Sprintf("unknown time zone %q", u.TimeZone)}
	}
	u.AccountID = account
	u.Extensions, u.Lines, u.Voicemails = splitList(exts), splitList(lines), splitList(voicemails)
	var err error
	if u.Numbers, err = parseNumbers(splitList(numbers)); err != nil {
		return err
	}
	if passwordFile != "" {
		if password != "" {
			return usageError{"give --password or --password-file, not both"}
		}
		if password, err = newPassword(c, passwordFile, false); err != nil {
			return err
		}
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	if u.RoleID, err = roleID(ctx, st, account, role); err != nil {
		return err
	}
	if password != "" {
		if u.PasswordHash, err = auth.HashPassword(password); err != nil {
			return err
		}
	}
	if err := st.CreateUser(ctx, &u); err != nil {
		return err
	}
	c.print(map[string]any{"id": u.ID, "account": account, "username": u.Username, "firstName": u.FirstName, "lastName": u.LastName, "role": role},
		fmt.Sprintf("user %d created: %s %s", u.ID, u.FirstName, u.LastName))
	return nil
}

func cmdUserList(ctx context.Context, c *cli, args []string) error {
	account, st, err := c.openAccount(ctx, "user list", args, nil)
	if err != nil {
		return err
	}
	all, err := st.Users(ctx, account)
	if err != nil {
		return err
	}
	type row struct {
		ID        int64  `json:"id"`
		Username  string `json:"username"`
		FirstName string `json:"firstName"`
		LastName  string `json:"lastName"`
		RoleID    int64  `json:"roleId,omitempty"`
		Disabled  bool   `json:"disabled"`
	}
	printList(c, "users", "ID\tUSERNAME\tNAME\tROLE\tDISABLED", all, func(u domain.User) (row, string) {
		return row{u.ID, u.Username, u.FirstName, u.LastName, u.RoleID, u.Disabled},
			fmt.Sprintf("%d\t%s\t%s %s\t%d\t%t", u.ID, u.Username, u.FirstName, u.LastName, u.RoleID, u.Disabled)
	})
	return nil
}

func cmdLineCreate(ctx context.Context, c *cli, args []string) error {
	var account int64
	var number, name, users, carrier string
	var bulk, noSMS bool
	if err := c.parse("line create", args, func(fs *flag.FlagSet) {
		fs.StringVar(&carrier, "carrier", "", "the carrier connection its texts go through (default: the server's --carrier flags)")
		fs.Int64Var(&account, "account", 0, "account id (required)")
		fs.StringVar(&number, "number", "", "phone number (required); formatting is stripped, 10 digits get a leading 1")
		fs.StringVar(&name, "name", "", "caller-ID name")
		fs.StringVar(&users, "users", "", "comma-separated user ids the line is assigned to (empty: every user)")
		fs.BoolVar(&bulk, "bulk", false, "10DLC bulk registration (reported only)")
		fs.BoolVar(&noSMS, "no-sms", false, "the line cannot send or receive texts")
	}); err != nil {
		return err
	}
	if account <= 0 || number == "" {
		return usageError{"--account and --number are required"}
	}
	norm, err := phone.Parse(number)
	if err != nil {
		return usageError{fmt.Sprintf("--number %q: %v", number, err)}
	}
	l := domain.Line{AccountID: account, Number: norm, Name: name, BulkEnabled: bulk, SMSEnabled: !noSMS}
	if l.UserIDs, err = parseUserIDs(users); err != nil {
		return err
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	if carrier != "" && carrier != "default" {
		if l.CarrierID, err = carrierID(ctx, st, carrier); err != nil {
			return err
		}
	}
	if err := st.CreateLine(ctx, &l); err != nil {
		return err
	}
	c.print(lineJSON(l), fmt.Sprintf("line %d created: %s", l.ID, l.Number))
	return nil
}

func cmdLineList(ctx context.Context, c *cli, args []string) error {
	account, st, err := c.openAccount(ctx, "line list", args, nil)
	if err != nil {
		return err
	}
	all, err := st.Lines(ctx, account, false)
	if err != nil {
		return err
	}
	type row struct {
		ID          int64   `json:"id"`
		Number      string  `json:"number"`
		Name        string  `json:"name"`
		UserIDs     []int64 `json:"userIds"`
		BulkEnabled bool    `json:"bulkEnabled"`
		SMSEnabled  bool    `json:"smsEnabled"`
	}
	printList(c, "lines", "ID\tNUMBER\tNAME\tUSERS\tBULK\tSMS", all, func(l domain.Line) (row, string) {
		return row{l.ID, l.Number, l.Name, l.UserIDs, l.BulkEnabled, l.SMSEnabled},
			fmt.Sprintf("%d\t%s\t%s\t%v\t%t\t%t", l.ID, l.Number, l.Name, l.UserIDs, l.BulkEnabled, l.SMSEnabled)
	})
	return nil
}

func cmdKeyCreate(ctx context.Context, c *cli, args []string) error {
	var account int64
	var name, scopeList string
	if err := c.parse("key create", args, func(fs *flag.FlagSet) {
		fs.Int64Var(&account, "account", 0, "account id (required)")
		fs.StringVar(&name, "name", "", "a name to tell keys apart (required)")
		fs.StringVar(&scopeList, "scopes", "", "comma-separated scopes, or all (required)")
	}); err != nil {
		return err
	}
	if account <= 0 || strings.TrimSpace(name) == "" {
		return usageError{"--account, --name and --scopes are required"}
	}
	scopes, err := auth.ParseScopes(scopeList)
	if err != nil {
		return usageError{"--scopes: " + err.Error()}
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	secret, k, err := auth.NewAPIKey(ctx, st, account, name, scopes)
	if err != nil {
		return err
	}
	c.print(map[string]any{"id": k.ID, "account": account, "name": k.Name, "scopes": k.Scopes, "key": secret},
		fmt.Sprintf("key %d created (shown once, store it now):\n%s", k.ID, secret))
	return nil
}

func cmdKeyList(ctx context.Context, c *cli, args []string) error {
	account, st, err := c.openAccount(ctx, "key list", args, nil)
	if err != nil {
		return err
	}
	keys, err := st.APIKeys(ctx, account)
	if err != nil {
		return err
	}
	type row struct {
		ID      int64    `json:"id"`
		Name    string   `json:"name"`
		Prefix  string   `json:"prefix"`
		Scopes  []string `json:"scopes"`
		Revoked bool     `json:"revoked"`
	}
	printList(c, "keys", "ID\tNAME\tPREFIX\tSCOPES\tREVOKED", keys, func(k domain.APIKey) (row, string) {
		return row{k.ID, k.Name, k.Prefix, k.Scopes, k.RevokedAt != nil},
			fmt.Sprintf("%d\t%s\t%s…\t%s\t%t", k.ID, k.Name, k.Prefix, strings.Join(k.Scopes, ","), k.RevokedAt != nil)
	})
	return nil
}

func cmdKeyRevoke(ctx context.Context, c *cli, args []string) error {
	return revokeByID(ctx, c, "key revoke", "key", args, (*store.Store).RevokeAPIKey, "")
}
