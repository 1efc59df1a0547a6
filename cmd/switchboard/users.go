package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/phone"
	"switchboard/internal/store"
)

// The commands that change a person after "user create": edit, disable,
// enable, password-reset and delete. docs/decisions.md, "Offboarding a
// person", says what each does to the person's sign-in, tokens and history.

// openUser is openAccount for the commands that act on one user: it adds the
// required --id and reads the user.
func (c *cli) openUser(ctx context.Context, name string, args []string, define func(fs *flag.FlagSet)) (*store.Store, domain.User, error) {
	var id int64
	account, st, err := c.openAccount(ctx, name, args, func(fs *flag.FlagSet) {
		fs.Int64Var(&id, "id", 0, "user id (required)")
		if define != nil {
			define(fs)
		}
	})
	if err != nil {
		return nil, domain.User{}, err
	}
	if id <= 0 {
		return nil, domain.User{}, usageError{"--id is required"}
	}
	u, err := st.User(ctx, account, id)
	if err != nil {
		return nil, u, fmt.Errorf("user %d of account %d: %w", id, account, err)
	}
	return st, u, nil
}

func cmdUserEdit(ctx context.Context, c *cli, args []string) error {
	var role optionalString
	var text [9]optionalString
	var lists [4]optionalString
	st, u, err := c.openUser(ctx, "user edit", args, func(fs *flag.FlagSet) {
		for i, f := range []struct{ name, usage string }{
			{"first", "first `name`"}, {"last", "last `name`"},
			{"username", "portal `username` (sign-in), unique across accounts; \"\" removes it: the user cannot sign in"},
			{"title", "job `title`"}, {"email", "email `address`"}, {"mobile", "personal cell `number`"},
			{"company", "company `override`; \"\" falls back to the account name"},
			{"timezone", "IANA time `zone`, e.g. America/Chicago"}, {"extension", "dial-by-name `extension`"},
		} {
			fs.Var(&text[i], f.name, f.usage)
		}
		for i, name := range []string{"extensions", "lines", "numbers", "voicemails"} {
			fs.Var(&lists[i], name, "comma-separated `list` that replaces the user's "+name+" (\"\" empties it)")
		}
		fs.Var(&role, "role", "role `name`; \"\" removes the user's role")
	})
	if err != nil {
		return err
	}
	for i, dst := range []*string{&u.FirstName, &u.LastName, &u.Username, &u.Title, &u.Email, &u.Mobile, &u.Company, &u.TimeZone, &u.Extension} {
		text[i].apply(dst)
	}
	if strings.TrimSpace(u.FirstName) == "" || strings.TrimSpace(u.LastName) == "" {
		return usageError{"--first and --last cannot be empty"}
	}
	if u.TimeZone != "" && !validTimeZone(u.TimeZone) {
		return usageError{fmt.Sprintf("unknown time zone %q", u.TimeZone)}
	}
	for i, dst := range []*[]string{&u.Extensions, &u.Lines, &u.Numbers, &u.Voicemails} {
		if lists[i].set {
			*dst = splitList(lists[i].value)
		}
	}
	if lists[2].set {
		if u.Numbers, err = parseNumbers(u.Numbers); err != nil {
			return err
		}
	}
	if role.set {
		if u.RoleID, err = roleID(ctx, st, u.AccountID, role.value); err != nil {
			return err
		}
	}
	if err := st.UpdateUser(ctx, u); err != nil {
		return err
	}
	c.print(map[string]any{"id": u.ID, "account": u.AccountID, "username": u.Username, "firstName": u.FirstName, "lastName": u.LastName, "roleId": u.RoleID},
		fmt.Sprintf("user %d updated: %s %s", u.ID, u.FirstName, u.LastName))
	return nil
}

// parseNumbers normalizes the --numbers of user create and edit.
func parseNumbers(numbers []string) ([]string, error) {
	out := make([]string, 0, len(numbers))
	for _, n := range numbers {
		norm, err := phone.Parse(n)
		if err != nil {
			return nil, usageError{fmt.Sprintf("--numbers %q: %v", n, err)}
		}
		out = append(out, norm)
	}
	return out, nil
}

// roleID is the id of the account's role called name; 0 for "".
func roleID(ctx context.Context, st *store.Store, account int64, name string) (int64, error) {
	if name == "" {
		return 0, nil
	}
	r, err := st.RoleByName(ctx, account, name)
	if domain.IsNotFound(err) {
		return 0, fmt.Errorf("role %q not found in account %d (switchboard role list --account %d)", name, account, account)
	}
	return r.ID, err
}

func cmdUserDisable(ctx context.Context, c *cli, args []string) error {
	return setUserDisabled(ctx, c, "user disable", args, true)
}

func cmdUserEnable(ctx context.Context, c *cli, args []string) error {
	return setUserDisabled(ctx, c, "user enable", args, false)
}

func setUserDisabled(ctx context.Context, c *cli, name string, args []string, disabled bool) error {
	st, u, err := c.openUser(ctx, name, args, nil)
	if err != nil {
		return err
	}
	if err := st.SetUserDisabled(ctx, u.AccountID, u.ID, disabled); err != nil {
		return err
	}
	text := fmt.Sprintf("user %d disabled: %s %s cannot sign in, and their OAuth grants and tokens are revoked", u.ID, u.FirstName, u.LastName)
	if !disabled {
		text = fmt.Sprintf("user %d enabled: %s %s may sign in again (grants revoked while disabled stay revoked)", u.ID, u.FirstName, u.LastName)
	}
	c.print(map[string]any{"id": u.ID, "disabled": disabled}, text)
	return nil
}

func cmdUserPasswordReset(ctx context.Context, c *cli, args []string) error {
	var file string
	var generate bool
	st, u, err := c.openUser(ctx, "user password-reset", args, func(fs *flag.FlagSet) {
		fs.StringVar(&file, "password-file", "", "read the new password from the first line of this `file`; - reads stdin")
		fs.BoolVar(&generate, "generate", false, "generate a password and print it, once")
	})
	if err != nil {
		return err
	}
	if u.Username == "" {
		return fmt.Errorf("user %d has no username to sign in with: give them one first (switchboard user edit --username)", u.ID)
	}
	password, err := newPassword(c, file, generate)
	if err != nil {
		return err
	}
	hash, err := auth.HashPassword(password)
	if err != nil {
		return usageError{fmt.Sprintf("the password cannot be used: %v", err)}
	}
	if err := st.SetUserPassword(ctx, u.AccountID, u.ID, hash); err != nil {
		return err
	}
	text := fmt.Sprintf("user %d (%s): password set; their OAuth grants are revoked (signed out everywhere)", u.ID, u.Username)
	out := map[string]any{"id": u.ID, "username": u.Username, "passwordSet": true}
	if generate {
		text += "\nnew password (shown once, hand it over now):\n" + password
		out["password"] = password
	}
	c.print(out, text)
	return nil
}

// newPassword is the password for password-reset: generated, read from a
// file or stdin, or typed at a prompt (twice, not echoed). It is never taken
// from a flag, where it would stay in the shell history and process list.
func newPassword(c *cli, file string, generate bool) (string, error) {
	switch {
	case generate && file != "":
		return "", usageError{"give --generate or --password-file, not both"}
	case generate:
		return rand.Text(), nil
	case file == "-":
		return readPassword(os.Stdin)
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return "", err
		}
		defer f.Close()
		return readPassword(f)
	case !term.IsTerminal(int(os.Stdin.Fd())):
		return "", usageError{"stdin is not a terminal to prompt on: give --password-file FILE (- for stdin) or --generate"}
	}
	fd := int(os.Stdin.Fd())
	fmt.Fprint(c.stderr, "New password: ")
	first, err := term.ReadPassword(fd)
	fmt.Fprintln(c.stderr)
	if err != nil {
		return "", err
	}
	fmt.Fprint(c.stderr, "Again: ")
	again, err := term.ReadPassword(fd)
	fmt.Fprintln(c.stderr)
	if err != nil {
		return "", err
	}
	if string(first) != string(again) {
		return "", errors.New("the passwords differ: nothing changed")
	}
	return checkPassword(string(first))
}

// readPassword reads the first line of r.
func readPassword(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return checkPassword(strings.TrimRight(line, "\r\n"))
}

func checkPassword(p string) (string, error) {
	if p == "" {
		return "", usageError{"the new password is empty"}
	}
	return p, nil
}

func cmdUserDelete(ctx context.Context, c *cli, args []string) error {
	st, u, err := c.openUser(ctx, "user delete", args, nil)
	if err != nil {
		return err
	}
	d, err := st.DeleteUser(ctx, u.AccountID, u.ID)
	if err != nil {
		return err
	}
	c.print(map[string]any{"id": u.ID, "deleted": true, "unassignedConversations": d.Unassigned},
		fmt.Sprintf("user %d deleted: %s %s; %d conversation(s) unassigned; their comments stay", u.ID, u.FirstName, u.LastName, d.Unassigned))
	return nil
}
