package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"switchboard/internal/apitest"
	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

var ctx = context.Background()

func mustAccount(t *testing.T, s *store.Store, name string) domain.Account {
	t.Helper()
	return storetest.Account(t, s, &storetest.AccountOpts{Name: name})
}

func wantCode(t *testing.T, err error, code domain.Code) {
	t.Helper()
	if got := domain.ErrorCode(err); err == nil || got != code {
		t.Fatalf("got error %v (code %s), want code %s", err, got, code)
	}
}

func TestMigrateIsIdempotent(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("second migrate: %v", err)
		}
	})
}

func TestAccountsAndRoles(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		a := mustAccount(t, s, "Acme")
		got, err := s.Account(ctx, a.ID)
		if err != nil || got.Name != "Acme" || got.CreatedAt.IsZero() {
			t.Fatalf("Account = %+v, %v; want Acme with a creation time", got, err)
		}
		_, err = s.Account(ctx, a.ID+100)
		wantCode(t, err, domain.NotFound)

		a.RestrictSMSDelete = true
		if err := s.UpdateAccountSettings(ctx, a); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Account(ctx, a.ID); !got.RestrictSMSDelete || got.SensitiveReverify {
			t.Fatalf("settings = %+v, want restrict delete only", got)
		}

		perms, _ := domain.ParsePermissions("users:self,numbers:assigned,reports,webhooks")
		r := domain.Role{AccountID: a.ID, Name: "agent", Permissions: perms}
		if err := s.CreateRole(ctx, &r); err != nil {
			t.Fatal(err)
		}
		dup := domain.Role{AccountID: a.ID, Name: "agent"}
		wantCode(t, s.CreateRole(ctx, &dup), domain.Conflict)
		gotRole, err := s.RoleByName(ctx, a.ID, "agent")
		if err != nil || gotRole.Permissions != perms || gotRole.ID != r.ID {
			t.Fatalf("RoleByName = %+v, %v; want %+v", gotRole, err, perms)
		}
		// Replacing its permissions shows at once, through the cache.
		if got, err := s.Role(ctx, a.ID, r.ID); err != nil || got.Permissions != perms {
			t.Fatalf("Role = %+v, %v; want %+v", got, err, perms)
		}
		narrowed, _ := domain.ParsePermissions("users:self")
		set, err := s.SetRolePermissions(ctx, a.ID, "agent", narrowed)
		if err != nil || set.ID != r.ID || set.Permissions != narrowed {
			t.Fatalf("SetRolePermissions = %+v, %v; want role %d with %+v", set, err, r.ID, narrowed)
		}
		if got, err := s.Role(ctx, a.ID, r.ID); err != nil || got.Permissions != narrowed {
			t.Fatalf("Role after SetRolePermissions = %+v, %v; want %+v", got, err, narrowed)
		}
		other := mustAccount(t, s, "Other")
		_, err = s.SetRolePermissions(ctx, other.ID, "agent", perms)
		wantCode(t, err, domain.NotFound)
		_, err = s.Role(ctx, other.ID, r.ID)
		wantCode(t, err, domain.NotFound)
		bad := domain.Role{AccountID: 9999, Name: "x"}
		wantCode(t, s.CreateRole(ctx, &bad), domain.NotFound)
	})
}

func TestUsersOrderAndIsolation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		a := mustAccount(t, s, "Acme")
		b := mustAccount(t, s, "Beta")
		for _, u := range []domain.User{
			{AccountID: a.ID, FirstName: "Zoe", LastName: "adams"},
			{AccountID: a.ID, FirstName: "Amy", LastName: "Baker", Username: "amy", Extensions: []string{"201", "202"}},
			{AccountID: a.ID, FirstName: "Amy", LastName: "Adams"},
			{AccountID: a.ID, FirstName: "Amy", LastName: "Adams"},
			{AccountID: b.ID, FirstName: "Other", LastName: "Account"},
		} {
			if err := s.CreateUser(ctx, &u); err != nil {
				t.Fatal(err)
			}
		}
		users, err := s.Users(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, u := range users {
			got = append(got, fmt.Sprintf("%s %s #%d", u.FirstName, u.LastName, u.ID))
		}
		want := []string{"Amy Adams #3", "Amy Adams #4", "Zoe adams #1", "Amy Baker #2"}
		if !slices.Equal(got, want) {
			t.Fatalf("order = %v, want %v", got, want)
		}
		if !slices.Equal(users[3].Extensions, []string{"201", "202"}) || users[0].Extensions == nil {
			t.Fatalf("lists not round-tripped: %+v / %+v", users[3].Extensions, users[0].Extensions)
		}
		dup := domain.User{AccountID: b.ID, Username: "amy"}
		wantCode(t, s.CreateUser(ctx, &dup), domain.Conflict)
		_, err = s.User(ctx, b.ID, users[0].ID)
		wantCode(t, err, domain.NotFound)
		if u, err := s.UserByUsername(ctx, "amy"); err != nil || u.LastName != "Baker" {
			t.Fatalf("UserByUsername = %+v, %v", u, err)
		}
		r := domain.Role{AccountID: b.ID, Name: "r"}
		if err := s.CreateRole(ctx, &r); err != nil {
			t.Fatal(err)
		}
		cross := domain.User{AccountID: a.ID, RoleID: r.ID}
		wantCode(t, s.CreateUser(ctx, &cross), domain.NotFound)
	})
}

func TestLines(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		a := mustAccount(t, s, "Acme")
		b := mustAccount(t, s, "Beta")
		u1 := storetest.User(t, s, a.ID, &storetest.UserOpts{FirstName: "A"})
		u2 := storetest.User(t, s, a.ID, &storetest.UserOpts{FirstName: "B"})
		ub := storetest.User(t, s, b.ID, &storetest.UserOpts{FirstName: "C"})
		lines := []domain.Line{
			{AccountID: a.ID, Number: "15550000002", Name: "Support", UserIDs: []int64{u2.ID, u1.ID}, SMSEnabled: true, BulkEnabled: true},
			{AccountID: a.ID, Number: "15550000001", SMSEnabled: true},
			{AccountID: a.ID, Number: "15550000003", SMSEnabled: false},
			{AccountID: b.ID, Number: "15550000004", SMSEnabled: true},
		}
		for i := range lines {
			if err := s.CreateLine(ctx, &lines[i]); err != nil {
				t.Fatal(err)
			}
		}
		dup := domain.Line{AccountID: b.ID, Number: "15550000001"}
		wantCode(t, s.CreateLine(ctx, &dup), domain.Conflict)
		cross := domain.Line{AccountID: a.ID, Number: "15550000009", UserIDs: []int64{ub.ID}}
		wantCode(t, s.CreateLine(ctx, &cross), domain.NotFound)
		if _, err := s.LineByNumber(ctx, "15550000009"); !domain.IsNotFound(err) {
			t.Fatalf("a failed create left a line behind: %v", err)
		}

		got, err := s.Lines(ctx, a.ID, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Number != "15550000001" || got[1].Number != "15550000002" {
			t.Fatalf("sms lines = %+v, want 15550000001, 15550000002", got)
		}
		if len(got[0].UserIDs) != 0 || got[0].UserIDs == nil {
			t.Fatalf("unassigned line userIds = %#v, want empty non-nil", got[0].UserIDs)
		}
		if !slices.Equal(got[1].UserIDs, []int64{u1.ID, u2.ID}) || !got[1].BulkEnabled || got[1].Name != "Support" {
			t.Fatalf("assigned line = %+v", got[1])
		}
		all, _ := s.Lines(ctx, a.ID, false)
		if len(all) != 3 {
			t.Fatalf("all lines = %d, want 3", len(all))
		}
		l, err := s.LineByNumber(ctx, "15550000002")
		if err != nil || l.AccountID != a.ID || len(l.UserIDs) != 2 {
			t.Fatalf("LineByNumber = %+v, %v", l, err)
		}
	})
}

func TestAPIKeys(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		a := mustAccount(t, s, "Acme")
		k := domain.APIKey{AccountID: a.ID, Name: "crm", Prefix: "sb_abcd", Hash: []byte{1, 2, 3}, Scopes: []string{"users:read", "sms:read"}}
		if err := s.CreateAPIKey(ctx, &k); err != nil {
			t.Fatal(err)
		}
		got, err := s.APIKeyByHash(ctx, []byte{1, 2, 3})
		if err != nil || got.ID != k.ID || !slices.Equal(got.Scopes, k.Scopes) || got.RevokedAt != nil {
			t.Fatalf("APIKeyByHash = %+v, %v", got, err)
		}
		_, err = s.APIKeyByHash(ctx, []byte{9})
		wantCode(t, err, domain.NotFound)
		b := mustAccount(t, s, "Beta")
		wantCode(t, s.RevokeAPIKey(ctx, b.ID, k.ID), domain.NotFound)
		if err := s.RevokeAPIKey(ctx, a.ID, k.ID); err != nil {
			t.Fatal(err)
		}
		got, _ = s.APIKeyByHash(ctx, []byte{1, 2, 3})
		if got.RevokedAt == nil {
			t.Fatal("key not revoked")
		}
		keys, _ := s.APIKeys(ctx, a.ID)
		if len(keys) != 1 {
			t.Fatalf("keys = %d, want 1", len(keys))
		}
	})
}

// TestConcurrentWrites checks that grouped commits keep each write's outcome
// separate: failing writes roll back alone and successful ones all land.
func TestConcurrentWrites(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		a := mustAccount(t, s, "Acme")
		const n = 200
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				u := domain.User{AccountID: a.ID, FirstName: fmt.Sprint(i), Username: fmt.Sprintf("u%d", i%150)}
				errs[i] = s.CreateUser(ctx, &u)
			}()
		}
		wg.Wait()
		ok, conflicts := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case domain.ErrorCode(err) == domain.Conflict:
				conflicts++
			default:
				t.Fatalf("unexpected error: %v", err)
			}
		}
		users, _ := s.Users(ctx, a.ID)
		if ok != 150 || conflicts != 50 || len(users) != 150 {
			t.Fatalf("ok=%d conflicts=%d stored=%d, want 150/50/150", ok, conflicts, len(users))
		}
	})
}

func TestWriteCanceledBeforeRunDoesNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		c, cancel := context.WithCancel(ctx)
		cancel()
		a := domain.Account{Name: "never"}
		err := s.CreateAccount(c, &a)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if all, _ := s.Accounts(ctx); len(all) != 0 {
			t.Fatalf("accounts = %v, want none", all)
		}
	})
}

// TestCacheSeesOtherProcesses checks that a write through another store on
// the same database (the CLI revoking a key while the server runs) is visible
// to the server, however many cached reads came before, and that the read
// cache answers again once nothing changes. On SQLite the server's very next
// read sees it; on PostgreSQL the notification takes a moment to arrive
// (bench/revocation measures how long), so the server is polled.
func TestCacheSeesOtherProcesses(t *testing.T) {
	for _, e := range storetest.Engines(t) {
		t.Run(string(e), func(t *testing.T) {
			dsn := storetest.DSN(t, e)
			server, cli := serverAndCLI(t, dsn)

			a := mustAccount(t, cli, "Acme")
			for round := range 5 {
				id, secret := storetest.Key(t, cli, a.ID, auth.UsersRead)
				hash := auth.HashSecret(secret)
				for range 3 { // warm the server's cache
					got, err := server.APIKeyByHash(store.WithReadScope(ctx), hash)
					if err != nil || got.RevokedAt != nil {
						t.Fatalf("round %d: before revoking: %+v, %v", round, got, err)
					}
				}
				if server.CachedEntries() == 0 {
					t.Fatalf("round %d: the warm reads cached nothing", round)
				}
				if err := cli.RevokeAPIKey(ctx, a.ID, id); err != nil {
					t.Fatal(err)
				}
				revoked := func() bool {
					got, err := server.APIKeyByHash(store.WithReadScope(ctx), hash)
					if err != nil {
						t.Fatal(err)
					}
					return got.RevokedAt != nil
				}
				if e == store.SQLite {
					if !revoked() {
						t.Fatalf("round %d: revocation by another store not seen by the next read", round)
					}
					continue
				}
				apitest.Eventually(t, fmt.Sprintf("round %d: revocation by another store", round), revoked)
			}
		})
	}
}

// TestPostgresCacheOffWhileNotListening checks that a PostgreSQL node whose
// notification connection is lost serves no cached read until it listens
// again, and that what it had cached before is dropped when it does: a write
// made while it could not hear of it is never hidden by a stale entry.
func TestPostgresCacheOffWhileNotListening(t *testing.T) {
	if storetest.PostgresURL(t) == "" {
		t.Skip("PostgreSQL only")
	}
	dsn := storetest.DSN(t, store.Postgres)
	server, cli := serverAndCLI(t, dsn)

	a := mustAccount(t, cli, "Acme")
	keys := make([]domain.APIKey, 2) // the id and hash of each
	for i := range keys {
		id, secret := storetest.Key(t, cli, a.ID, auth.UsersRead)
		keys[i] = domain.APIKey{ID: id, Hash: auth.HashSecret(secret)}
	}
	revoked := func(k domain.APIKey) bool {
		got, err := server.APIKeyByHash(store.WithReadScope(ctx), k.Hash)
		if err != nil {
			t.Fatal(err)
		}
		return got.RevokedAt != nil
	}
	apitest.Eventually(t, "both keys cached", func() bool { revoked(keys[0]); revoked(keys[1]); return server.CachedEntries() >= 2 })

	// Lose the connection, and keep it lost until the test is done with it.
	if err := server.KillCacheListener(ctx); err != nil {
		t.Fatal(err)
	}
	apitest.Eventually(t, "the cache to turn off", func() bool { return !server.CacheServing() })
	if n := server.CachedEntries(); n != 0 {
		t.Errorf("%d entries kept after the connection was lost", n)
	}
	// Written while nobody listens: read from the database at once.
	if err := cli.RevokeAPIKey(ctx, a.ID, keys[0].ID); err != nil {
		t.Fatal(err)
	}
	if !revoked(keys[0]) || server.CachedEntries() != 0 {
		t.Fatalf("while not listening: revocation seen %t, %d entries cached", revoked(keys[0]), server.CachedEntries())
	}
	// Back: cached again, and still exact.
	server.RedialCacheListener()
	apitest.Eventually(t, "the cache to serve again", server.CacheServing)
	if !revoked(keys[0]) || revoked(keys[1]) || server.CachedEntries() == 0 {
		t.Fatalf("after reconnecting: key 0 revoked %t, key 1 revoked %t, %d entries", revoked(keys[0]), revoked(keys[1]), server.CachedEntries())
	}
	if err := cli.RevokeAPIKey(ctx, a.ID, keys[1].ID); err != nil {
		t.Fatal(err)
	}
	apitest.Eventually(t, "a revocation after reconnecting", func() bool { return revoked(keys[1]) })
}

// serverAndCLI opens two stores on dsn, as a running server and the CLI
// beside it, and returns once the server's read cache is serving.
func serverAndCLI(t *testing.T, dsn string) (server, cli *store.Store) {
	t.Helper()
	for _, s := range []**store.Store{&server, &cli} {
		st, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if err := st.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		*s = st
	}
	apitest.Eventually(t, "the server's cache to serve", server.CacheServing)
	return server, cli
}

// TestPingNoticesFileRemovedOrReplaced checks that a SQLite database file
// deleted or swapped from under an open store makes Ping (hence /readyz) fail:
// SQLite would go on writing to the old file through its open descriptors,
// and every write would be lost on restart.
func TestPingNoticesFileRemovedOrReplaced(t *testing.T) {
	for _, replace := range []bool{false, true} {
		t.Run(fmt.Sprintf("replace=%t", replace), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sb.db")
			s, err := store.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s.Ping(ctx); err != nil {
				t.Fatalf("ping before: %v", err)
			}
			if err := os.Rename(path, path+".moved"); err != nil {
				t.Fatal(err)
			}
			if replace {
				if err := os.WriteFile(path, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Ping(ctx); err == nil || !strings.Contains(err.Error(), "removed or replaced") {
				t.Fatalf("ping after the file was moved away: %v, want removed or replaced", err)
			}
		})
	}
}
