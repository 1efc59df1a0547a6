package storetest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestFactory checks that each factory helper stores what it says, with its
// defaults, on both engines.
func TestFactory(t *testing.T) {
	ctx := context.Background()
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		acme := storetest.Account(t, st, &storetest.AccountOpts{Name: "Acme", RestrictSMSDelete: true})
		other := storetest.Account(t, st, nil)
		if got, err := st.Account(ctx, acme.ID); err != nil || got.Name != "Acme" || !got.RestrictSMSDelete {
			t.Fatalf("account = %+v (%v), want Acme with RestrictSMSDelete", got, err)
		}
		if other.Name == "" || other.ID == acme.ID {
			t.Fatalf("default account = %+v", other)
		}

		perms := domain.Permissions{Users: domain.UsersSelf, Numbers: domain.NumbersAssigned}
		amy := storetest.User(t, st, acme.ID, &storetest.UserOpts{FirstName: "Amy", Password: "pw", Permissions: &perms})
		plain := storetest.User(t, st, acme.ID, nil)
		got, err := st.UserByUsername(ctx, amy.Username)
		if err != nil || got.ID != amy.ID || !auth.CheckPassword(got.PasswordHash, "pw") || auth.CheckPassword(got.PasswordHash, "nope") {
			t.Fatalf("user %q = %+v (%v), want Amy signing in with pw only", amy.Username, got, err)
		}
		if role, err := st.Role(ctx, acme.ID, got.RoleID); err != nil || role.Permissions != perms {
			t.Fatalf("Amy's role = %+v (%v), want permissions %+v", role, err, perms)
		}
		if plain.RoleID != 0 || plain.Username != "" || plain.PasswordHash != "" {
			t.Fatalf("default user = %+v, want no role, username or password", plain)
		}
		agent := storetest.User(t, st, acme.ID, &storetest.UserOpts{Extensions: []string{"101", "102"}})
		if got, err := st.User(ctx, acme.ID, agent.ID); err != nil || !slices.Equal(got.Extensions, []string{"101", "102"}) {
			t.Fatalf("user with extensions = %+v (%v), want 101 and 102", got, err)
		}

		mine := storetest.Line(t, st, acme.ID, &storetest.LineOpts{UserIDs: []int64{amy.ID}})
		fax := storetest.Line(t, st, acme.ID, &storetest.LineOpts{Number: "14155550102", NoSMS: true})
		lines, err := st.Lines(ctx, acme.ID, false)
		if err != nil || len(lines) != 2 {
			t.Fatalf("lines = %+v (%v), want 2", lines, err)
		}
		for _, l := range lines {
			switch l.ID {
			case mine.ID:
				if !l.SMSEnabled || !slices.Equal(l.UserIDs, []int64{amy.ID}) {
					t.Fatalf("assigned line = %+v, want SMS on, Amy's", l)
				}
			case fax.ID:
				if l.SMSEnabled || l.Number != "14155550102" {
					t.Fatalf("fax line = %+v, want SMS off", l)
				}
			}
		}

		id, secret := storetest.Key(t, st, acme.ID, auth.SMSRead)
		k, err := st.APIKeyByHash(ctx, auth.HashSecret(secret))
		if err != nil || k.ID != id || k.AccountID != acme.ID || !slices.Equal(k.Scopes, []string{string(auth.SMSRead)}) {
			t.Fatalf("key = %+v (%v), want id %d in Acme with sms read only", k, err, id)
		}

		storetest.Rate(t, st, acme.ID, "44", "0.04", "0.10")
		if rates, err := st.Rates(ctx, acme.ID); err != nil || len(rates) != 1 || rates[0].SMS != 40000 || rates[0].MMS != 100000 {
			t.Fatalf("rates = %+v (%v), want 44 at 0.04/0.10", rates, err)
		}

		in := storetest.Message(t, st, mine, nil)
		if in.Direction != "in" || in.From != "14155550123" || in.Status != domain.StatusReceived || in.Body == "" {
			t.Fatalf("inbound = %+v", in)
		}
		out := storetest.Message(t, st, mine, &storetest.MessageOpts{Outbound: true, Other: []string{"447700900123"}, Body: "hi", Price: 40000, By: amy.ID})
		if out.Direction != "out" || out.Status != domain.StatusSent || out.Price != 40000 || out.SentBy != amy.ID || out.ConversationID == in.ConversationID {
			t.Fatalf("outbound = %+v", out)
		}
		if total, n, err := st.LedgerTotal(ctx, acme.ID); err != nil || total != 40000 || n != 1 {
			t.Fatalf("ledger = %d in %d entries (%v), want 40000 in 1", total, n, err)
		}
		if reply := storetest.Message(t, st, mine, &storetest.MessageOpts{Outbound: true}); reply.ConversationID != in.ConversationID {
			t.Fatalf("reply to 14155550123 in conversation %d, want %d", reply.ConversationID, in.ConversationID)
		}
	})
}

// TestClock checks the test clock: it reads its start, keeps the wall
// clock's pace and jumps by Advance.
func TestClock(t *testing.T) {
	start := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	c := storetest.NewClock(start)
	if d := c.Now().Sub(start); d < 0 || d > time.Minute {
		t.Fatalf("a new clock reads %v past its start, want about 0", d)
	}
	before := c.Now()
	c.Advance(time.Hour)
	if d := c.Now().Sub(before); d < time.Hour || d > time.Hour+time.Minute {
		t.Fatalf("advanced an hour: moved %v", d)
	}
}
