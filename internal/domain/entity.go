package domain

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Account is a customer of the operator: the unit every credential and object belongs to.
type Account struct {
	ID   int64
	Name string
	// RestrictSMSDelete forbids deleting single messages over the API, whatever the scope.
	RestrictSMSDelete bool
	// SensitiveReverify makes call recordings unavailable over the API for every credential.
	SensitiveReverify bool
	CreatedAt         time.Time
}

// UserVisibility is the role permission deciding which users a person can see.
type UserVisibility string

// NumberAccess is the role permission deciding which phone numbers a person can use.
type NumberAccess string

// Values of the role permissions. The zero value grants nothing.
const (
	UsersNone UserVisibility = ""
	UsersSelf UserVisibility = "self"
	UsersAll  UserVisibility = "all"

	NumbersNone     NumberAccess = ""
	NumbersAssigned NumberAccess = "assigned"
	NumbersAll      NumberAccess = "all"
)

// Permissions are what a role lets a person do through an OAuth token, on top of
// the token's scopes. API keys are not subject to them.
type Permissions struct {
	Users           UserVisibility
	Numbers         NumberAccess
	CallReports     bool
	AllowRecordings bool
	// Webhooks is managing the account's webhook subscriptions: each is a
	// standing read of every event of the account, whatever the other
	// permissions hide, so it is the administrators'.
	Webhooks bool
}

// ParsePermissions reads the operator's comma-separated permission list:
// users:all, users:self, numbers:all, numbers:assigned, reports, recordings,
// webhooks, or "all" for everything. An empty list grants nothing.
func ParsePermissions(list string) (Permissions, error) {
	var p Permissions
	for _, tok := range strings.Split(list, ",") {
		switch strings.TrimSpace(tok) {
		case "":
		case "all":
			p = Permissions{Users: UsersAll, Numbers: NumbersAll, CallReports: true, AllowRecordings: true, Webhooks: true}
		case "users:all", "users":
			p.Users = UsersAll
		case "users:self":
			p.Users = UsersSelf
		case "numbers:all", "numbers":
			p.Numbers = NumbersAll
		case "numbers:assigned":
			p.Numbers = NumbersAssigned
		case "reports":
			p.CallReports = true
		case "recordings":
			p.AllowRecordings = true
		case "webhooks":
			p.Webhooks = true
		default:
			return Permissions{}, fmt.Errorf("unknown permission %q (want users:all, users:self, numbers:all, numbers:assigned, reports, recordings, webhooks or all)", tok)
		}
	}
	if p.AllowRecordings && !p.CallReports {
		return Permissions{}, fmt.Errorf("permission recordings needs reports")
	}
	return p, nil
}

// String formats p in the form ParsePermissions reads.
func (p Permissions) String() string {
	var out []string
	if p.Users != UsersNone {
		out = append(out, "users:"+string(p.Users))
	}
	if p.Numbers != NumbersNone {
		out = append(out, "numbers:"+string(p.Numbers))
	}
	if p.CallReports {
		out = append(out, "reports")
	}
	if p.AllowRecordings {
		out = append(out, "recordings")
	}
	if p.Webhooks {
		out = append(out, "webhooks")
	}
	return strings.Join(out, ",")
}

// Role is a named set of permissions within an account.
type Role struct {
	ID          int64
	AccountID   int64
	Name        string
	Permissions Permissions
}

// User is a person of the account, as the public API's User describes it, plus
// what the login page needs.
type User struct {
	ID           int64
	AccountID    int64
	RoleID       int64 // 0 when the user has no role
	Username     string
	PasswordHash string // empty when the user cannot sign in
	FirstName    string
	LastName     string
	Title        string
	Email        string
	Mobile       string
	Company      string // per-user override; empty falls back to the account name
	TimeZone     string
	Extension    string
	Extensions   []string
	Lines        []string
	Numbers      []string
	Voicemails   []string
	// Disabled users cannot sign in, and their OAuth tokens stop working
	// (switchboard user disable); they still show in lists and history.
	Disabled bool
}

// Line is one of the account's phone numbers.
type Line struct {
	ID        int64
	AccountID int64
	Number    string // normalized digits with country code
	Name      string // caller-ID name
	// UserIDs are the users the line is assigned to; empty means every user.
	UserIDs     []int64
	BulkEnabled bool // 10DLC bulk registration; reported, never enforced
	SMSEnabled  bool
	// CarrierID is the carrier connection its texts go through; 0: the
	// server's --carrier flags.
	CarrierID int64
}

// AvailableTo reports whether the line is assigned to user (an unassigned line is everyone's).
func (l Line) AvailableTo(user int64) bool {
	return len(l.UserIDs) == 0 || slices.Contains(l.UserIDs, user)
}

// APIKey is an account credential. The secret itself is never stored, only its hash.
type APIKey struct {
	ID        int64
	AccountID int64
	Name      string
	Prefix    string // the first characters of the key, shown to operators to tell keys apart
	Hash      []byte
	Scopes    []string
	CreatedAt time.Time
	RevokedAt *time.Time
}
