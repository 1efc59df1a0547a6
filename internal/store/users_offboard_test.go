package store_test

import (
	"strings"
	"testing"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

func TestUpdateUser(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		a, b := mustAccount(t, s, "Acme"), mustAccount(t, s, "Beta")
		role := storetest.Role(t, s, a.ID, domain.Permissions{Users: domain.UsersAll})
		other := storetest.Role(t, s, b.ID, domain.Permissions{Users: domain.UsersAll})
		u := storetest.User(t, s, a.ID, &storetest.UserOpts{Username: "amy", FirstName: "Amy", LastName: "Adams"})
		storetest.User(t, s, b.ID, &storetest.UserOpts{Username: "bob"})

		u.FirstName, u.Username, u.Email, u.RoleID, u.Lines = "Amelia", "amelia", "a@example.com", role.ID, []string{"sip/101"}
		if err := s.UpdateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		got, err := s.User(ctx, a.ID, u.ID)
		if err != nil || got.FirstName != "Amelia" || got.Username != "amelia" || got.Email != "a@example.com" || got.RoleID != role.ID ||
			len(got.Lines) != 1 || got.LastName != "Adams" || got.PasswordHash != u.PasswordHash {
			t.Errorf("after update: got %+v, %v; want the new details, the rest kept", got, err)
		}
		if _, err := s.UserByUsername(ctx, "amy"); !domain.IsNotFound(err) {
			t.Errorf("old username: got %v, want not_found (freed)", err)
		}

		taken := got
		taken.Username = "bob"
		wantCode(t, s.UpdateUser(ctx, taken), domain.Conflict)
		foreign := got
		foreign.RoleID = other.ID
		wantCode(t, s.UpdateUser(ctx, foreign), domain.NotFound)
		elsewhere := got
		elsewhere.AccountID = b.ID
		wantCode(t, s.UpdateUser(ctx, elsewhere), domain.NotFound)
	})
}

func TestDisableUserRevokesAccess(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := setupOAuth(t, s)
		code, _ := f.approve(t, "sms:read")
		_, access, refresh, err := f.exchange(code)
		if err != nil {
			t.Fatal(err)
		}
		wantToken(t, s, access, true)
		// A sign-in waiting for consent when the user is disabled.
		pending := store.OAuthRequest{Hash: h("pending"), ClientID: f.client.ClientID, RedirectURI: f.client.RedirectURIs[0],
			Scopes: []string{"sms:read"}, State: "st", CodeChallenge: "challenge", CSRFHash: h("csrf"), UserID: f.user.ID}
		if err := s.CreateOAuthRequest(ctx, &pending); err != nil {
			t.Fatal(err)
		}

		if err := s.SetUserDisabled(ctx, f.account.ID, f.user.ID, true); err != nil {
			t.Fatal(err)
		}
		wantToken(t, s, access, false)
		if _, _, _, err := f.rotate(refresh, nil); err == nil {
			t.Error("refresh token of a disabled user: rotated, want refused")
		}
		if _, _, err := s.ApproveOAuthRequest(ctx, h("pending"), h("late-code")); !domain.IsNotFound(err) {
			t.Errorf("approving a disabled user's pending sign-in: got %v, want not_found", err)
		}
		u, err := s.UserByUsername(ctx, f.user.Username)
		if err != nil || !u.Disabled {
			t.Errorf("disabled user: got %+v, %v; want Disabled", u, err)
		}
		grants, err := s.OAuthGrants(ctx, f.account.ID, f.user.ID)
		if err != nil || len(grants) != 1 || grants[0].RevokedAt == nil {
			t.Errorf("grants after disable: %+v, %v; want the one grant, revoked", grants, err)
		}

		if err := s.SetUserDisabled(ctx, f.account.ID, f.user.ID, false); err != nil {
			t.Fatal(err)
		}
		if u, _ := s.User(ctx, f.account.ID, f.user.ID); u.Disabled {
			t.Error("enabled user: still Disabled")
		}
		wantToken(t, s, access, false) // enabling does not bring tokens back
		code, _ = f.approve(t, "sms:read")
		if _, access, _, err = f.exchange(code); err != nil {
			t.Fatal(err)
		}
		wantToken(t, s, access, true)

		other := mustAccount(t, s, "Other")
		wantCode(t, s.SetUserDisabled(ctx, other.ID, f.user.ID, true), domain.NotFound)
	})
}

func TestSetUserPasswordSignsOutEverywhere(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := setupOAuth(t, s)
		code, _ := f.approve(t, "sms:read")
		_, access, _, err := f.exchange(code)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SetUserPassword(ctx, f.account.ID, f.user.ID, "new-hash"); err != nil {
			t.Fatal(err)
		}
		wantToken(t, s, access, false)
		if u, _ := s.User(ctx, f.account.ID, f.user.ID); u.PasswordHash != "new-hash" {
			t.Errorf("password hash: got %q, want new-hash", u.PasswordHash)
		}
	})
}

func TestDeleteUser(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := setupOAuth(t, s)
		a := f.account
		amy, ben := f.user, storetest.User(t, s, a.ID, nil)
		code, _ := f.approve(t, "sms:read")
		_, access, _, err := f.exchange(code)
		if err != nil {
			t.Fatal(err)
		}
		line := storetest.Line(t, s, a.ID, &storetest.LineOpts{UserIDs: []int64{amy.ID}})
		storetest.Message(t, s, line, nil)
		key := domain.ConversationKey{Line: line, Participants: []string{"14155550123"}}
		if _, err := s.Assign(ctx, store.StateChange{Key: key, Actor: ben.ID}, amy.ID); err != nil {
			t.Fatal(err)
		}
		conv, err := s.AddComment(ctx, store.StateChange{Key: key, Actor: amy.ID}, "called back")
		if err != nil {
			t.Fatal(err)
		}

		// The only user of the line: without her it would be everyone's.
		_, err = s.DeleteUser(ctx, a.ID, amy.ID)
		wantCode(t, err, domain.Conflict)
		if err == nil || !strings.Contains(err.Error(), line.Number) {
			t.Errorf("refusal %v does not name line %s", err, line.Number)
		}
		line.UserIDs = []int64{amy.ID, ben.ID}
		if err := s.UpdateLine(ctx, line); err != nil {
			t.Fatal(err)
		}

		d, err := s.DeleteUser(ctx, a.ID, amy.ID)
		if err != nil || d.Unassigned != 1 {
			t.Fatalf("DeleteUser = %+v, %v; want 1 conversation unassigned", d, err)
		}
		if _, err := s.User(ctx, a.ID, amy.ID); !domain.IsNotFound(err) {
			t.Errorf("deleted user: got %v, want not_found", err)
		}
		if users, _ := s.Users(ctx, a.ID); len(users) != 1 || users[0].ID != ben.ID {
			t.Errorf("users after delete: %+v, want only ben", users)
		}
		wantToken(t, s, access, false)
		c, _, err := s.Conversation(ctx, key)
		if err != nil || c.AssignedTo != 0 {
			t.Errorf("conversation after delete: %+v, %v; want assigned to nobody", c, err)
		}
		acts, err := s.ConversationActivity(ctx, conv.ID)
		if err != nil || len(acts) == 0 || acts[len(acts)-1].Kind != domain.ActivityUnassign || acts[len(acts)-1].Actor != 0 {
			t.Errorf("activity after delete: %+v, %v; want an unassign by nobody last", acts, err)
		}
		comments, err := s.Comments(ctx, conv.ID)
		if err != nil || len(comments) != 1 || comments[0].AuthorID != amy.ID {
			t.Errorf("comments after delete: %+v, %v; want hers kept", comments, err)
		}
		lines, _ := s.Lines(ctx, a.ID, false)
		if len(lines) != 1 || len(lines[0].UserIDs) != 1 || lines[0].UserIDs[0] != ben.ID {
			t.Errorf("lines after delete: %+v, want the line ben's alone", lines)
		}
		// Her username is free, and her id is never given again (SQLite
		// reuses the largest rowid of a deleted row).
		again := storetest.User(t, s, a.ID, &storetest.UserOpts{Username: amy.Username})
		if again.ID == amy.ID {
			t.Errorf("a new user got the deleted user's id %d", amy.ID)
		}
		_, err = s.DeleteUser(ctx, a.ID, amy.ID)
		wantCode(t, err, domain.NotFound)
		line.UserIDs = []int64{amy.ID}
		wantCode(t, s.UpdateLine(ctx, line), domain.NotFound)
	})
}

func TestUpdateAndDeleteLine(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		a, b := mustAccount(t, s, "Acme"), mustAccount(t, s, "Beta")
		amy, bob := storetest.User(t, s, a.ID, nil), storetest.User(t, s, b.ID, nil)
		l := storetest.Line(t, s, a.ID, nil)

		l.Name, l.UserIDs, l.BulkEnabled, l.SMSEnabled = "Front desk", []int64{amy.ID}, true, false
		if err := s.UpdateLine(ctx, l); err != nil {
			t.Fatal(err)
		}
		got, err := s.LineByNumber(ctx, l.Number)
		if err != nil || got.Name != "Front desk" || len(got.UserIDs) != 1 || got.UserIDs[0] != amy.ID || !got.BulkEnabled || got.SMSEnabled {
			t.Errorf("after update: %+v, %v", got, err)
		}
		foreign := l
		foreign.UserIDs = []int64{bob.ID}
		wantCode(t, s.UpdateLine(ctx, foreign), domain.NotFound)
		if got, _ := s.LineByNumber(ctx, l.Number); len(got.UserIDs) != 1 || got.UserIDs[0] != amy.ID {
			t.Errorf("a refused update changed the users: %v", got.UserIDs)
		}
		wantCode(t, s.DeleteLine(ctx, b.ID, l.ID), domain.NotFound)

		used := storetest.Line(t, s, a.ID, nil)
		storetest.Message(t, s, used, nil)
		storetest.Message(t, s, used, &storetest.MessageOpts{Outbound: true})
		err = s.DeleteLine(ctx, a.ID, used.ID)
		wantCode(t, err, domain.Conflict)
		if err == nil || !strings.Contains(err.Error(), "1 conversation, 2 messages") {
			t.Errorf("refusal %v does not say what the line holds (1 conversation, 2 messages)", err)
		}

		if err := s.DeleteLine(ctx, a.ID, l.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.LineByNumber(ctx, l.Number); !domain.IsNotFound(err) {
			t.Errorf("deleted line: got %v, want not_found", err)
		}
		if lines, _ := s.Lines(ctx, a.ID, false); len(lines) != 1 || lines[0].ID != used.ID {
			t.Errorf("lines after delete: %+v, want only the used one", lines)
		}
	})
}
