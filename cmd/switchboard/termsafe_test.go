package main

import (
	"encoding/json"
	"strings"
	"testing"

	"switchboard/internal/store/storetest"
)

func TestTermSafe(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Acme Corp", "Acme Corp"},
		{"tab\tand\nnewline", "tab\tand\nnewline"},
		{"\x1b]0;pwned\x07", `\x1b]0;pwned\x07`},
		{"\x1b[2J\r\x00\x7f", `\x1b[2J\x0d\x00\x7f`},
		{"C1 \u009b31m \u0085", `C1 \u009b31m \u0085`},
		{"bidi \u202eevil\u202c \u2066x\u2069", `bidi \u202eevil\u202c \u2066x\u2069`},
		{"raw byte \x9b31m", `raw byte \x9b31m`},
		{"Zoë 😀 \u200d", "Zoë 😀 \u200d"},
	}
	for _, c := range cases {
		if got := termSafe(c.in); got != c.want {
			t.Errorf("termSafe(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// jsonSafe keeps the JSON's meaning: the escaped text decodes to the
	// same string.
	in := "a\u009bb\u202ec\x7fd"
	b, _ := json.Marshal(in)
	var back string
	if out := jsonSafe(string(b)); strings.ContainsFunc(out, unsafeRune) || json.Unmarshal([]byte(out), &back) != nil || back != in {
		t.Errorf("jsonSafe(%s) = %s, decoding to %q; want no unsafe character and %q", b, out, back, in)
	}
}

// raw lists the characters a terminal obeys that must never reach it.
var raw = []string{"\x1b", "\x07", "\u009b", "\u0085", "\u202e", "\x7f"}

// TestListsEscapeControlCharacters: names an account's admin typed (or a
// restored backup brought) reach the operator's terminal as visible escapes,
// in text and in JSON, where they decode to the name as stored.
func TestListsEscapeControlCharacters(t *testing.T) {
	for _, engine := range storetest.Engines(t) {
		t.Run(string(engine), func(t *testing.T) {
			t.Parallel()
			db := storetest.DSN(t, engine)
			name := "\x1b]0;pwned\x07Acme\x1b[2J \u009b31m\u0085 \u202eevil\x7f"
			cliJSONOut(t, db, nil, "account", "create", "--name", name)
			cliJSONOut(t, db, nil, "role", "create", "--account", "1", "--name", name, "--permissions", "all")
			cliJSONOut(t, db, nil, "user", "create", "--account", "1", "--first", name, "--last", name, "--username", name)
			cliJSONOut(t, db, nil, "line", "create", "--account", "1", "--number", "+1 415 555 0100", "--name", name)
			cliJSONOut(t, db, nil, "key", "create", "--account", "1", "--name", name, "--scopes", "all")
			for _, list := range [][]string{{"account", "list"}, {"role", "list", "--account", "1"}, {"user", "list", "--account", "1"},
				{"line", "list", "--account", "1"}, {"key", "list", "--account", "1"}} {
				out, stderr, code := runArgs(t, append(list, "--db", db)...)
				if code != 0 {
					t.Fatalf("%v: exit %d: %s", list, code, stderr)
				}
				for _, r := range raw {
					if strings.Contains(out, r) {
						t.Errorf("%v prints %q raw:\n%q", list, r, out)
					}
				}
				if !strings.Contains(out, `\x1b]0;pwned\x07Acme\x1b[2J \u009b31m\u0085 \u202eevil\x7f`) {
					t.Errorf("%v does not show the name escaped:\n%s", list, out)
				}
				out, _, _ = runArgs(t, append(list, "--db", db, "--json")...)
				for _, r := range raw {
					if strings.Contains(out, r) {
						t.Errorf("%v --json prints %q raw:\n%q", list, r, out)
					}
				}
				if !strings.Contains(out, `\u001b]0;pwned\u0007Acme`) {
					t.Errorf("%v --json does not hold the name escaped:\n%s", list, out)
				}
			}
			var users struct {
				Users []struct{ FirstName string } `json:"users"`
			}
			cliJSONOut(t, db, &users, "user", "list", "--account", "1")
			if len(users.Users) != 1 || users.Users[0].FirstName != name {
				t.Errorf("user list --json decodes to %+v, want the name as stored", users)
			}
			// An error quoting a stored name is escaped too.
			_, stderr, _ := runArgs(t, "user", "create", "--db", db, "--account", "1", "--first", "A", "--last", "B", "--username", name)
			if !strings.Contains(stderr, "is taken") || strings.ContainsAny(stderr, "\x1b\x07\u202e") {
				t.Errorf("username conflict: stderr %q; want it refused, escaped", stderr)
			}
		})
	}
}

// cliJSONOut runs a command that must succeed with --db db --json and
// decodes its output into v (when not nil).
func cliJSONOut(t *testing.T, db string, v any, args ...string) {
	t.Helper()
	out, stderr, code := runArgs(t, append(args, "--db", db, "--json")...)
	if code != 0 {
		t.Fatalf("switchboard %s: exit %d: %s", strings.Join(args, " "), code, stderr)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("switchboard %s: %v in %q", strings.Join(args, " "), err, out)
		}
	}
}
