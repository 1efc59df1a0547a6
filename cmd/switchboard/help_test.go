package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net"
	"runtime"
	"strings"
	"testing"
)

// runArgs runs the CLI as main does, and returns what it printed and its
// exit status.
func runArgs(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), code
}

// TestHelpHoldsEveryFlag holds the help to the flags the commands really
// define: the top-level help names every command and every flag, and each
// command's --help (and -h) shows its usage, its summary and exactly its
// flags, on stdout with exit status 0.
func TestHelpHoldsEveryFlag(t *testing.T) {
	top, stderr, code := runArgs(t, "help")
	if code != 0 || stderr != "" || !strings.HasPrefix(top, "usage: switchboard <command>") {
		t.Fatalf("help: exit %d, stderr %q, stdout %.80q; want the help on stdout, exit 0", code, stderr, top)
	}
	// The words of each command's lines (its summary, then its flags).
	words := map[string]map[string]bool{}
	var current string
	for _, line := range strings.Split(top, "\n") {
		for i := range commands {
			if strings.HasPrefix(line, "  "+commands[i].name+" ") {
				current = commands[i].name
				words[current] = map[string]bool{}
			}
		}
		if line == "" {
			current = ""
		}
		if current != "" {
			for _, w := range strings.Fields(line) {
				words[current][strings.Trim(w, "[]")] = true
			}
		}
	}
	every := flag.NewFlagSet("", flag.ContinueOnError) // every flag of every command
	for _, g := range flagGroups {
		g.define(&cli{}, every)
	}
	for i := range commands {
		cmd := &commands[i]
		if !strings.Contains(top, "  "+cmd.name+" ") || !strings.Contains(top, cmd.summary) {
			t.Errorf("help does not list %q with its summary", cmd.name)
		}
		d, ok := describe(cmd)
		if !ok {
			t.Errorf("%s does not reach its parse before doing anything: its flags cannot be shown", cmd.name)
			continue
		}
		own, _ := grouped(d.fs)
		for _, f := range own {
			if !words[cmd.name]["--"+f.Name] {
				t.Errorf("help does not name %s's flag --%s on its line", cmd.name, f.Name)
			}
		}
		for _, h := range []string{"--help", "-h"} {
			args := append(strings.Fields(cmd.name), h)
			out, stderr, code := runArgs(t, args...)
			if code != 0 || stderr != "" {
				t.Errorf("switchboard %s: exit %d, stderr %q; want the help on stdout, exit 0", strings.Join(args, " "), code, stderr)
				continue
			}
			if !strings.HasPrefix(out, "usage: switchboard "+cmd.name+" ") || !strings.Contains(out, "\n"+cmd.summary+"\n") {
				t.Errorf("switchboard %s: %.120q does not start with its usage line and summary", strings.Join(args, " "), out)
			}
			shown := map[string]bool{}
			for _, line := range strings.Split(out, "\n") {
				if name, ok := strings.CutPrefix(line, "  --"); ok {
					shown[strings.Fields(name)[0]] = true
				}
			}
			d.fs.VisitAll(func(f *flag.Flag) {
				if !shown[f.Name] {
					t.Errorf("switchboard %s does not show its flag --%s", strings.Join(args, " "), f.Name)
				}
				delete(shown, f.Name)
			})
			for name := range shown {
				t.Errorf("switchboard %s shows --%s, a flag it does not read", strings.Join(args, " "), name)
			}
		}
		d.fs.VisitAll(func(f *flag.Flag) {
			if every.Lookup(f.Name) == nil {
				every.Var(f.Value, f.Name, f.Usage)
			}
		})
	}
	every.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(top, "--"+f.Name) {
			t.Errorf("help does not name the flag --%s", f.Name)
		}
	})
	// Groups are shown where the commands read them, and only there.
	if out, _, _ := runArgs(t, "account", "list", "--help"); strings.Contains(out, "--listen") || strings.Contains(out, "--log-level") {
		t.Errorf("account list --help shows server or logging flags it does not read:\n%s", out)
	}
	if out, _, _ := runArgs(t, "serve", "--help"); !strings.Contains(out, "\nServer flags:\n") || !strings.Contains(out, "--metrics-addr") {
		t.Errorf("serve --help does not show the server flags:\n%s", out)
	}
}

func TestHelpExitStatus(t *testing.T) {
	cases := []struct {
		args       []string
		code       int
		onStdout   bool
		wantPrefix string
	}{
		{nil, 2, false, "usage: switchboard <command>"},
		{[]string{"--help"}, 0, true, "usage: switchboard <command>"},
		{[]string{"-h"}, 0, true, "usage: switchboard <command>"},
		{[]string{"help", "user", "create"}, 0, true, "usage: switchboard user create --account N"},
		{[]string{"--db", "x.db", "--help"}, 0, true, "usage: switchboard <command>"},
		{[]string{"--json"}, 2, false, "usage: switchboard <command>"},
		{[]string{"user", "--help"}, 0, true, "switchboard user: one of"},
		{[]string{"user"}, 2, false, "switchboard user: one of"},
		{[]string{"user", "frobnicate"}, 2, false, `switchboard: unknown command "user frobnicate"`},
		{[]string{"frobnicate"}, 2, false, `switchboard: unknown command "frobnicate"`},
	}
	for _, c := range cases {
		stdout, stderr, code := runArgs(t, c.args...)
		got, quiet := stderr, stdout
		if c.onStdout {
			got, quiet = stdout, stderr
		}
		if code != c.code || !strings.HasPrefix(got, c.wantPrefix) || quiet != "" {
			t.Errorf("switchboard %s: exit %d, stdout %.60q, stderr %.60q; want exit %d and %q on %s only",
				strings.Join(c.args, " "), code, stdout, stderr, c.code, c.wantPrefix, map[bool]string{true: "stdout", false: "stderr"}[c.onStdout])
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, stderr, code := runArgs(t, args...)
		if code != 0 || stderr != "" || !strings.HasPrefix(out, "switchboard ") || !strings.Contains(out, "\ncommit ") || !strings.Contains(out, runtime.Version()) {
			t.Errorf("switchboard %s: exit %d, stderr %q, stdout %q; want version, commit and Go version", args[0], code, stderr, out)
		}
		out, _, code = runArgs(t, append(args, "--json")...)
		var v buildVersion
		if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 || v.Go != runtime.Version() || v.Version == "" {
			t.Errorf("switchboard %s --json: %q (%v); want one object with version, commit, modified and go", args[0], out, err)
		}
		if !strings.Contains(out, `"commit":`) || !strings.Contains(out, `"modified":`) {
			t.Errorf("switchboard %s --json: %q lacks commit or modified", args[0], out)
		}
	}
}

// TestPortInUse: a taken --listen address is refused by serve and demo with
// how to choose another.
func TestPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	for _, args := range [][]string{
		{"serve", "--listen", addr, "--db", t.TempDir() + "/sb.db", "--media", "file://" + t.TempDir()},
		{"demo", "--listen", addr},
	} {
		_, stderr, code := runArgs(t, args...)
		for _, want := range []string{addr + " is in use by another program", "--listen HOST:PORT", "SWITCHBOARD_LISTEN", "--listen 127.0.0.1:0 picks a free port"} {
			if code != 1 || !strings.Contains(stderr, want) {
				t.Errorf("%s on a taken port: exit %d, stderr %q; want exit 1 saying %q", args[0], code, stderr, want)
			}
		}
	}
}
