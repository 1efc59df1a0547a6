package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"switchboard/internal/apitest"
	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestOffboardingCommands walks an operator through changing and removing
// a person and a line with the CLI, and checks each step in the database.
func TestOffboardingCommands(t *testing.T) {
	for _, engine := range storetest.Engines(t) {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := storetest.DSN(t, engine)
			var acct, role, amy, ben, line struct{ ID int64 }
			cliJSONOut(t, db, &acct, "account", "create", "--name", "Acme")
			a := itoa(acct.ID)
			cliJSONOut(t, db, &role, "role", "create", "--account", a, "--name", "Agent", "--permissions", "users:all,numbers:assigned")
			pwFile := filepath.Join(t.TempDir(), "pw")
			if err := os.WriteFile(pwFile, []byte("first-password\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cliJSONOut(t, db, &amy, "user", "create", "--account", a, "--first", "Amy", "--last", "Adams", "--username", "amy",
				"--password-file", pwFile, "--role", "Agent")
			cliJSONOut(t, db, &ben, "user", "create", "--account", a, "--first", "Ben", "--last", "Brown")
			cliJSONOut(t, db, &line, "line", "create", "--account", a, "--number", "+1 415 555 0100", "--users", itoa(amy.ID))

			st, err := store.Open(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			// userIs waits for the test's store to see amy as want says: on
			// PostgreSQL its read cache hears of the CLI's writes a moment later.
			userIs := func(what string, want func(u domain.User, err error) bool) {
				t.Helper()
				apitest.Eventually(t, what, func() bool { u, err := st.User(ctx, acct.ID, amy.ID); return want(u, err) })
			}
			userIs("user create --password-file --role: the password and role", func(u domain.User, _ error) bool {
				return auth.CheckPassword(u.PasswordHash, "first-password") && u.RoleID == role.ID
			})

			out, _, _ := runArgs(t, "role", "list", "--account", a, "--db", db)
			if !strings.Contains(out, "Agent") || !strings.Contains(out, "users:all") {
				t.Errorf("role list: %q, want the Agent role and its permissions", out)
			}

			// edit: only the flags given change; "" clears.
			cliJSONOut(t, db, nil, "user", "edit", "--account", a, "--id", itoa(amy.ID), "--first", "Amelia", "--email", "amelia@example.com", "--role", "")
			userIs("user edit: the new name and email, no role, the rest kept", func(u domain.User, _ error) bool {
				return u.FirstName == "Amelia" && u.LastName == "Adams" && u.Email == "amelia@example.com" && u.RoleID == 0 && u.Username == "amy"
			})
			if _, stderr, code := runArgs(t, "user", "edit", "--db", db, "--account", a, "--id", itoa(amy.ID), "--role", "Nope"); code != 1 || !strings.Contains(stderr, `role "Nope" not found`) {
				t.Errorf("user edit --role Nope: exit %d, %q", code, stderr)
			}

			cliJSONOut(t, db, nil, "user", "disable", "--account", a, "--id", itoa(amy.ID))
			userIs("user disable: disabled", func(u domain.User, _ error) bool { return u.Disabled })
			out, _, _ = runArgs(t, "user", "list", "--account", a, "--db", db)
			if !strings.Contains(out, "DISABLED") || !strings.Contains(out, "true") {
				t.Errorf("user list does not show who is disabled:\n%s", out)
			}
			cliJSONOut(t, db, nil, "user", "enable", "--account", a, "--id", itoa(amy.ID))
			userIs("user enable: enabled", func(u domain.User, err error) bool { return err == nil && !u.Disabled })

			// password-reset: generated and printed once, or read from a file.
			var reset struct {
				Password string `json:"password"`
			}
			cliJSONOut(t, db, &reset, "user", "password-reset", "--account", a, "--id", itoa(amy.ID), "--generate")
			if len(reset.Password) < 16 {
				t.Errorf("password-reset --generate: printed %q, want a long password", reset.Password)
			}
			userIs("password-reset --generate: the printed password", func(u domain.User, _ error) bool {
				return auth.CheckPassword(u.PasswordHash, reset.Password)
			})
			if err := os.WriteFile(pwFile, []byte("second-password\r\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			out, _, _ = runArgs(t, "user", "password-reset", "--db", db, "--account", a, "--id", itoa(amy.ID), "--password-file", pwFile)
			if strings.Contains(out, "second-password") {
				t.Errorf("password-reset --password-file echoes the password: %q", out)
			}
			userIs("password-reset --password-file: the file's password", func(u domain.User, _ error) bool {
				return auth.CheckPassword(u.PasswordHash, "second-password")
			})
			if _, stderr, code := runArgs(t, "user", "password-reset", "--db", db, "--account", a, "--id", itoa(ben.ID), "--generate"); code != 1 || !strings.Contains(stderr, "no username") {
				t.Errorf("password-reset of a user without a username: exit %d, %q", code, stderr)
			}

			// delete: refused while she alone has a line, then done.
			_, stderr, code := runArgs(t, "user", "delete", "--db", db, "--account", a, "--id", itoa(amy.ID))
			if code != 1 || !strings.Contains(stderr, "only user of line 14155550100") || !strings.Contains(stderr, "line edit --users") {
				t.Errorf("user delete of a line's only user: exit %d, %q; want refused, naming the line and the fix", code, stderr)
			}
			cliJSONOut(t, db, nil, "line", "edit", "--account", a, "--id", itoa(line.ID), "--users", itoa(amy.ID)+","+itoa(ben.ID), "--name", "Front desk")
			cliJSONOut(t, db, nil, "user", "delete", "--account", a, "--id", itoa(amy.ID))
			userIs("user delete: not found", func(_ domain.User, err error) bool { return domain.IsNotFound(err) })
			out, _, _ = runArgs(t, "user", "list", "--account", a, "--db", db)
			if strings.Contains(out, "Amelia") {
				t.Errorf("user list shows the deleted user:\n%s", out)
			}

			// line edit: only the flags given change; --users "" is everyone.
			cliJSONOut(t, db, nil, "line", "edit", "--account", a, "--id", itoa(line.ID), "--users", "", "--no-sms=true")
			var l domain.Line
			apitest.Eventually(t, "line edit: the name kept, every user's, no SMS", func() bool {
				l, err = st.LineByNumber(ctx, "14155550100")
				return err == nil && l.Name == "Front desk" && len(l.UserIDs) == 0 && !l.SMSEnabled
			})

			// line delete: refused while in use, saying with what.
			storetest.Message(t, st, l, nil)
			_, stderr, code = runArgs(t, "line", "delete", "--db", db, "--account", a, "--id", itoa(line.ID))
			if code != 1 || !strings.Contains(stderr, "is in use: 1 conversation, 1 message") {
				t.Errorf("line delete of a line in use: exit %d, %q", code, stderr)
			}
			var unused struct{ ID int64 }
			cliJSONOut(t, db, &unused, "line", "create", "--account", a, "--number", "+1 415 555 0101")
			cliJSONOut(t, db, nil, "line", "delete", "--account", a, "--id", itoa(unused.ID))
			apitest.Eventually(t, "line delete: not found", func() bool {
				_, err := st.LineByNumber(ctx, "14155550101")
				return domain.IsNotFound(err)
			})
		})
	}
}

func itoa(id int64) string { return strconv.FormatInt(id, 10) }
