// Command switchboard is the Switchboard server and its operator CLI.
//
//	switchboard serve                 run migrations and serve the API
//	switchboard demo                  serve a fresh demo account
//	switchboard migrate [--status]    apply database migrations (or list them)
//	switchboard backup --to F | --check F   copy a serving SQLite database; check a copy
//	switchboard account|role|user|line|key …   provision accounts
//	switchboard contact import|export|list …   an account's address book
//	switchboard sim inbound …         text a running server's line through the sim carrier
//	switchboard version               version, commit and Go version
//
// The commands read shared flags (--db, --json, …) and their SWITCHBOARD_*
// environment variables; "switchboard help" lists every command and flag,
// "switchboard CMD --help" one command's.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	_ "time/tzdata" // time zones validate on machines without tzdata
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// command is one subcommand: its name path (e.g. "key create"), a one-line
// summary, and the function that runs it.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *cli, args []string) error
}

var commands = []command{
	{"serve", "apply migrations and serve the API", cmdServe},
	{"demo", "create a fresh demo database, print a key and curl examples, and serve", cmdDemo},
	{"migrate", "apply database migrations; --status lists applied and pending ones", cmdMigrate},
	{"backup", "copy the SQLite database while it serves (--to FILE), or check a copy (--check FILE)", cmdBackup},
	{"version", "print the version, commit and Go version", cmdVersion},
	{"account create", "create an account", cmdAccountCreate},
	{"account list", "list accounts", cmdAccountList},
	{"account set", "change an account's settings (only those given)", cmdAccountSet},
	{"role create", "create a role", cmdRoleCreate},
	{"role set", "replace a role's permissions (applies at once)", cmdRoleSet},
	{"role list", "list an account's roles", cmdRoleList},
	{"user create", "create a user", cmdUserCreate},
	{"user list", "list an account's users", cmdUserList},
	{"user edit", "change a user's details (only those given)", cmdUserEdit},
	{"user disable", "stop a user signing in and revoke their OAuth grants and tokens", cmdUserDisable},
	{"user enable", "let a disabled user sign in again", cmdUserEnable},
	{"user password-reset", "set a user's password (prompted, read from a file or stdin, or generated and printed once) and sign them out everywhere", cmdUserPasswordReset},
	{"user delete", "delete a user: unassigns their conversations, keeps their comments, revokes their grants", cmdUserDelete},
	{"line create", "create a line", cmdLineCreate},
	{"line list", "list an account's lines", cmdLineList},
	{"line edit", "change a line's name, users, bulk or SMS setting (only those given)", cmdLineEdit},
	{"line delete", "delete a line that was never used (no conversations, messages or scheduled texts)", cmdLineDelete},
	{"line set", "set the carrier connection a line's texts go through (--carrier NAME, or default)", cmdLineSet},
	{"carrier add", "add a named carrier connection (--kind and its settings)", cmdCarrierAdd},
	{"carrier set", "change a carrier connection's settings (only those given), or disable it", cmdCarrierSet},
	{"carrier list", "list the carrier connections: state, lines, settings (secrets shown as set / not set), callback URLs", cmdCarrierList},
	{"carrier remove", "remove a carrier connection no line uses", cmdCarrierRemove},
	{"carrier kinds", "list the kinds of carrier connection and the settings each takes", cmdCarrierKinds},
	{"key create", "create an API key (printed once)", cmdKeyCreate},
	{"key list", "list an account's API keys", cmdKeyList},
	{"key revoke", "revoke an API key", cmdKeyRevoke},
	{"rate set", "set a rate (USD)", cmdRateSet},
	{"rate list", "list an account's rate card", cmdRateList},
	{"rate delete", "delete a rate", cmdRateDelete},
	{"oauth allow-host", "allow a redirect host for client registration", cmdOAuthAllowHost},
	{"oauth disallow-host", "stop allowing a redirect host", cmdOAuthDisallowHost},
	{"oauth hosts", "list allowed redirect hosts", cmdOAuthHosts},
	{"oauth clients", "list registered OAuth clients", cmdOAuthClients},
	{"oauth grants", "list an account's OAuth grants", cmdOAuthGrants},
	{"oauth revoke-grant", "revoke a grant and all its tokens", cmdOAuthRevokeGrant},
	{"calls import", "import calls from a file", cmdCallsImport},
	{"contact import", "import an account's contacts from a CSV (plain, Google, Outlook) or vCard file, with progress on stderr", cmdContactImport},
	{"contact export", "export an account's contacts as CSV or vCard", cmdContactExport},
	{"contact list", "list an account's contacts, newest first (--q searches)", cmdContactList},
	{"ingest-token create", "create a token a phone system pushes calls with (printed once)", cmdIngestTokenCreate},
	{"ingest-token list", "list an account's ingest tokens", cmdIngestTokenList},
	{"ingest-token revoke", "revoke an ingest token", cmdIngestTokenRevoke},
	{"recordings revoke", "revoke a call's signed recording links", cmdRecordingsRevoke},
	{"recordings rotate-key", "replace the recording link key: every link handed out stops working", cmdRecordingsRotateKey},
	{"ledger list", "list an account's charges, newest first", cmdLedgerList},
	{"sim inbound", "text a line of a running server through its sim carrier (serve --sim-secret; the demo prints an example)", cmdSimInbound},
}

// usageError is a bad invocation: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch {
	case args[0] == "help" || isHelp(args[0]):
		if len(args) == 1 {
			usage(stdout)
			return 0
		}
		args = append(args[1:], "--help") // "help user create" is "user create --help"
	case args[0] == "-version" || args[0] == "--version":
		args = append([]string{"version"}, args[1:]...)
	}
	global, args := leadingFlags(args)
	if len(args) == 0 { // flags only, as in "switchboard --db x.db --help"
		if slices.ContainsFunc(global, isHelp) {
			usage(stdout)
			return 0
		}
		usage(stderr)
		return 2
	}
	cmd, rest := find(args)
	if cmd == nil {
		return unknownCommand(args, stdout, stderr)
	}
	env := &cli{stdout: stdout, stderr: stderr, summary: cmd.summary}
	err := cmd.run(ctx, env, append(global, rest...))
	env.close()
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "switchboard %s: %s\n", cmd.name, termSafe(ue.msg))
		return 2
	default:
		// An error may quote a name from the database: escaped like output.
		fmt.Fprintf(stderr, "switchboard %s: %s\n", cmd.name, termSafe(oneLine(err)))
		return 1
	}
}

// unknownCommand answers args that name no command. A first word that
// begins commands ("user") lists them: on stdout, exit 0, when help was asked
// for ("switchboard user --help").
func unknownCommand(args []string, stdout, stderr io.Writer) int {
	var word string
	if len(args) > 0 {
		word = args[0]
	}
	var names []string
	for _, c := range commands {
		if strings.HasPrefix(c.name, word+" ") {
			names = append(names, fmt.Sprintf("  %-22s %s", c.name, c.summary))
		}
	}
	if len(names) == 0 || word == "" {
		fmt.Fprintf(stderr, "switchboard: unknown command %q (run \"switchboard help\")\n", joinArgs(args))
		return 2
	}
	list := fmt.Sprintf("switchboard %s: one of\n%s\nRun \"switchboard %s <command> --help\" for its flags.\n",
		termSafe(word), strings.Join(names, "\n"), termSafe(word))
	if len(args) > 1 && isHelp(args[1]) {
		fmt.Fprint(stdout, list)
		return 0
	}
	if len(args) > 1 {
		fmt.Fprintf(stderr, "switchboard: unknown command %q\n", joinArgs(args[:2]))
	}
	fmt.Fprint(stderr, list)
	return 2
}

// isHelp reports whether arg asks for help, as the flag package takes it.
func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" || arg == "--h" }

// leadingFlags splits off common flags written before the command name
// ("switchboard --db x.db account list"), so they can go after it.
func leadingFlags(args []string) (flags, rest []string) {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		n := 1
		name := strings.TrimLeft(args[0], "-")
		if !strings.Contains(name, "=") && !boolFlags[name] && len(args) > 1 {
			n = 2 // the flag's value follows it
		}
		flags, args = append(flags, args[:n]...), args[n:]
	}
	return flags, args
}

// find matches the longest command name at the start of args.
func find(args []string) (*command, []string) {
	for n := min(2, len(args)); n >= 1; n-- {
		name := joinArgs(args[:n])
		for i := range commands {
			if commands[i].name == name {
				return &commands[i], args[n:]
			}
		}
	}
	return nil, nil
}
