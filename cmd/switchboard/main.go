// Command switchboard is the Switchboard server and its operator CLI.
//
//	switchboard serve                 run migrations and serve the API
//	switchboard demo                  serve a fresh demo account
//	switchboard migrate [--status]    apply database migrations (or list them)
//	switchboard backup --to F | --check F   copy a serving SQLite database; check a copy
//	switchboard account|role|user|line|key …   provision accounts
//
// Every subcommand reads the common flags (--db, --json, …) and their
// SWITCHBOARD_* environment variables; run "switchboard help" for the list.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
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
	{"backup", "copy the SQLite database while it serves: --to FILE [--force]; check a copy: --check FILE", cmdBackup},
	{"account create", "create an account: --name NAME", cmdAccountCreate},
	{"account list", "list accounts", cmdAccountList},
	{"account set", "change account settings: --account ID [--restrict-sms-delete=BOOL] [--sensitive-reverify=BOOL]", cmdAccountSet},
	{"role create", "create a role: --account ID --name NAME --permissions LIST", cmdRoleCreate},
	{"role set", "replace a role's permissions: --account ID --name NAME --permissions LIST", cmdRoleSet},
	{"user create", "create a user: --account ID --first F --last L [--username U --password P] [--role NAME] …", cmdUserCreate},
	{"user list", "list an account's users: --account ID", cmdUserList},
	{"line create", "create a line: --account ID --number N [--name NAME] [--users 1,2] [--bulk] [--no-sms]", cmdLineCreate},
	{"line list", "list an account's lines: --account ID", cmdLineList},
	{"key create", "create an API key (printed once): --account ID --name NAME --scopes a,b,c", cmdKeyCreate},
	{"key list", "list an account's API keys: --account ID", cmdKeyList},
	{"key revoke", "revoke an API key: --account ID --id KEYID", cmdKeyRevoke},
	{"rate set", "set a rate: --account ID --prefix P --sms X --mms Y (USD)", cmdRateSet},
	{"rate list", "list an account's rate card: --account ID", cmdRateList},
	{"rate delete", "delete a rate: --account ID --prefix P", cmdRateDelete},
	{"oauth allow-host", "allow a redirect host for client registration: HOST", cmdOAuthAllowHost},
	{"oauth disallow-host", "stop allowing a redirect host: HOST", cmdOAuthDisallowHost},
	{"oauth hosts", "list allowed redirect hosts", cmdOAuthHosts},
	{"oauth clients", "list registered OAuth clients", cmdOAuthClients},
	{"oauth grants", "list an account's OAuth grants: --account ID [--user ID]", cmdOAuthGrants},
	{"oauth revoke-grant", "revoke a grant and all its tokens: --account ID --id GRANTID", cmdOAuthRevokeGrant},
	{"calls import", "import calls from a file: --account ID [--format jsonl] FILE", cmdCallsImport},
	{"ingest-token create", "create a token a phone system pushes calls with (printed once): --account ID [--name NAME]", cmdIngestTokenCreate},
	{"ingest-token list", "list an account's ingest tokens: --account ID", cmdIngestTokenList},
	{"ingest-token revoke", "revoke an ingest token: --account ID --id TOKENID", cmdIngestTokenRevoke},
	{"recordings revoke", "revoke a call's signed recording links: --account ID --call CALLID", cmdRecordingsRevoke},
	{"recordings rotate-key", "replace the recording link key: every link handed out stops working", cmdRecordingsRotateKey},
	{"ledger list", "list an account's charges, newest first: --account ID [--limit N]", cmdLedgerList},
}

// usageError is a bad invocation: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		return 0
	}
	global, args := leadingFlags(args)
	cmd, rest := find(args)
	if cmd == nil {
		fmt.Fprintf(stderr, "switchboard: unknown command %q (run \"switchboard help\")\n", joinArgs(args))
		return 2
	}
	env := &cli{stdout: stdout, stderr: stderr}
	err := cmd.run(ctx, env, append(global, rest...))
	env.close()
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "switchboard %s: %s\n", cmd.name, ue.msg)
		return 2
	default:
		fmt.Fprintf(stderr, "switchboard %s: %s\n", cmd.name, oneLine(err))
		return 1
	}
}

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

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: switchboard <command> [flags]")
	fmt.Fprintln(w)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-20s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Common flags (each also read from its environment variable):")
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	fs.SetOutput(w)
	(&cli{}).commonFlags(fs)
	fs.PrintDefaults()
}
