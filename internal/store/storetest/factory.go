package storetest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/money"
	"switchboard/internal/sms/smsevent"
	"switchboard/internal/store"
)

// The factory: one call per object a test needs, with defaults for every
// field the test does not care about, so a test's setup says only what
// matters to it. Each helper fails the test on error. Names, usernames and
// numbers that must be unique get a per-process sequence number by default.

var seq atomic.Int64

func next() int64 { return seq.Add(1) }

// AccountOpts are the optional fields of Account.
type AccountOpts struct {
	Name              string // default "Account N"
	RestrictSMSDelete bool
	SensitiveReverify bool
}

// Account creates an account.
func Account(t testing.TB, st *store.Store, o *AccountOpts) domain.Account {
	t.Helper()
	if o == nil {
		o = &AccountOpts{}
	}
	a := domain.Account{Name: o.Name, RestrictSMSDelete: o.RestrictSMSDelete, SensitiveReverify: o.SensitiveReverify}
	if a.Name == "" {
		a.Name = fmt.Sprintf("Account %d", next())
	}
	if err := st.CreateAccount(context.Background(), &a); err != nil {
		t.Fatalf("storetest: create account: %v", err)
	}
	return a
}

// Role creates a role in account with permissions p, named "role N".
func Role(t testing.TB, st *store.Store, account int64, p domain.Permissions) domain.Role {
	t.Helper()
	r := domain.Role{AccountID: account, Name: fmt.Sprintf("role %d", next()), Permissions: p}
	if err := st.CreateRole(context.Background(), &r); err != nil {
		t.Fatalf("storetest: create role: %v", err)
	}
	return r
}

// UserOpts are the optional fields of User. Fields of domain.User not named
// here can be set through Fill.
type UserOpts struct {
	FirstName string // default "User"
	LastName  string // default "N"
	Username  string // default "" (no sign-in name) unless Password is set: then "userN"
	// Password, when set, lets the user sign in. It is hashed at bcrypt's
	// lowest cost: CheckPassword accepts any cost, and tests stay fast.
	Password string
	// RoleID puts the user in an existing role. Permissions, when set instead,
	// creates a new role with them for this user.
	RoleID      int64
	Permissions *domain.Permissions
	// Extensions are the user's phone extensions (calls match users by them).
	Extensions []string
	// Fill, when set, adjusts the user before it is created.
	Fill func(*domain.User)
}

// User creates a user in account.
func User(t testing.TB, st *store.Store, account int64, o *UserOpts) domain.User {
	t.Helper()
	if o == nil {
		o = &UserOpts{}
	}
	n := next()
	u := domain.User{AccountID: account, FirstName: o.FirstName, LastName: o.LastName, Username: o.Username, RoleID: o.RoleID, Extensions: o.Extensions}
	if u.FirstName == "" {
		u.FirstName = "User"
	}
	if u.LastName == "" {
		u.LastName = fmt.Sprint(n)
	}
	if o.Password != "" {
		if u.Username == "" {
			u.Username = fmt.Sprintf("user%d", n)
		}
		h, err := bcrypt.GenerateFromPassword([]byte(o.Password), bcrypt.MinCost)
		if err != nil {
			t.Fatalf("storetest: hash password: %v", err)
		}
		u.PasswordHash = string(h)
	}
	if o.Permissions != nil {
		if o.RoleID != 0 {
			t.Fatal("storetest: UserOpts sets both RoleID and Permissions")
		}
		u.RoleID = Role(t, st, account, *o.Permissions).ID
	}
	if o.Fill != nil {
		o.Fill(&u)
	}
	if err := st.CreateUser(context.Background(), &u); err != nil {
		t.Fatalf("storetest: create user: %v", err)
	}
	return u
}

// LineOpts are the optional fields of Line.
type LineOpts struct {
	Number  string  // default a unique 1415555NNNN number
	Name    string  // caller-ID name
	UserIDs []int64 // assigned users; none means every user's
	NoSMS   bool    // SMS is enabled unless set
	Bulk    bool    // 10DLC bulk registration
}

// Line creates a line in account.
func Line(t testing.TB, st *store.Store, account int64, o *LineOpts) domain.Line {
	t.Helper()
	if o == nil {
		o = &LineOpts{}
	}
	l := domain.Line{AccountID: account, Number: o.Number, Name: o.Name, UserIDs: o.UserIDs, SMSEnabled: !o.NoSMS, BulkEnabled: o.Bulk}
	if l.Number == "" {
		// 1000 up: the fixed numbers tests spell out are 0100–0199.
		l.Number = fmt.Sprintf("1415555%04d", 1000+next()%9000)
	}
	if err := st.CreateLine(context.Background(), &l); err != nil {
		t.Fatalf("storetest: create line: %v", err)
	}
	return l
}

// Key creates an API key in account with scopes (every scope when none are
// given) and returns its id and its secret, the bearer credential.
func Key(t testing.TB, st *store.Store, account int64, scopes ...auth.Scope) (int64, string) {
	t.Helper()
	if len(scopes) == 0 {
		scopes = auth.AllScopes
	}
	secret, k, err := auth.NewAPIKey(context.Background(), st, account, fmt.Sprintf("key %d", next()), scopes)
	if err != nil {
		t.Fatalf("storetest: create API key: %v", err)
	}
	return k.ID, secret
}

// Rate sets account's price for destinations starting with prefix, per SMS
// and per MMS unit, as decimal amounts ("0.0079").
func Rate(t testing.TB, st *store.Store, account int64, prefix, sms, mms string) domain.Rate {
	t.Helper()
	r := domain.Rate{AccountID: account, Prefix: prefix, SMS: Money(t, sms), MMS: Money(t, mms)}
	if err := st.SetRate(context.Background(), &r); err != nil {
		t.Fatalf("storetest: set rate: %v", err)
	}
	return r
}

// Money parses a decimal amount such as "0.0079".
func Money(t testing.TB, s string) money.Micros {
	t.Helper()
	m, err := money.Parse(s)
	if err != nil {
		t.Fatalf("storetest: money %q: %v", s, err)
	}
	return m
}

// MessageOpts are the optional fields of Message.
type MessageOpts struct {
	// Outbound makes a message sent from the line (accepted by the carrier
	// and charged Price); otherwise the message is received on the line.
	Outbound bool
	// Other is the other parties: the sender of an inbound message (only the
	// first is used unless the message is a group text), the recipients of an
	// outbound one. Default 14155550123.
	Other []string
	Body  string // default "hello N"
	Media []string
	Price money.Micros // outbound only: the charge, default 0
	By    int64        // outbound only: the sending user, if any
}

// Message stores a message on line the way the send and receive paths do
// (conversation, event, and for an outbound message the ledger entry) and
// returns it as the API reads it.
func Message(t testing.TB, st *store.Store, line domain.Line, o *MessageOpts) domain.Message {
	t.Helper()
	ctx := context.Background()
	if o == nil {
		o = &MessageOpts{}
	}
	others := o.Other
	if len(others) == 0 {
		others = []string{"14155550123"}
	}
	body := o.Body
	if body == "" {
		body = fmt.Sprintf("hello %d", next())
	}
	sorted := append([]string(nil), others...)
	sort.Strings(sorted)
	var id int64
	var err error
	if o.Outbound {
		typ := domain.BillingSMS
		if len(o.Media) > 0 || len(others) > 1 {
			typ = domain.BillingMMS
		}
		out := &store.Outbound{
			AccountID: line.AccountID, LineID: line.ID, From: line.Number, To: others,
			Participants: strings.Join(sorted, ","), Body: body, Media: o.Media, Type: typ,
			Units: 1, UnitPrice: int64(o.Price), Price: int64(o.Price), SentBy: o.By,
		}
		if id, err = st.CreateOutbound(ctx, out); err == nil {
			var sent domain.Event
			if sent, err = smsevent.Sent(id, out.From, out.To); err == nil {
				err = st.MarkOutboundSent(ctx, out, fmt.Sprintf("ref-%d", id), sent)
			}
		}
	} else {
		in := store.Inbound{Line: line, From: others[0], Participants: sorted, Body: body, Media: o.Media}
		if err = smsevent.SetReceived(&in); err == nil {
			id, err = st.StoreInbound(ctx, in)
		}
	}
	if err != nil {
		t.Fatalf("storetest: store message: %v", err)
	}
	m, err := st.Message(ctx, line.AccountID, id)
	if err != nil {
		t.Fatalf("storetest: read message %d: %v", id, err)
	}
	return m
}

// FanOut fans out every event committed so far, as the webhook dispatcher's
// next passes would, and returns how many events and deliveries that made.
// One store.FanOutEvents may not be enough on PostgreSQL: it leaves an event
// for a later fan-out while an older transaction anywhere on the server (a
// test running beside) is still open.
func FanOut(t testing.TB, st *store.Store) (events, deliveries int) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		e, d, err := st.FanOutEvents(ctx, 1000)
		if err != nil {
			t.Fatalf("fan out: %v", err)
		}
		events, deliveries = events+e, deliveries+d
		left, err := st.HasUnfannedEvents(ctx)
		if err != nil {
			t.Fatalf("fan out: %v", err)
		}
		if !left {
			return events, deliveries
		}
		if time.Now().After(deadline) {
			t.Fatalf("fan out: events still waiting after 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
