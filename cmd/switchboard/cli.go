package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/logging"
	"switchboard/internal/oauth"
	"switchboard/internal/sms"
	"switchboard/internal/store"
	"switchboard/internal/stream"
	"switchboard/internal/webhooks"
)

// cli carries the common configuration every subcommand reads.
type cli struct {
	stdout, stderr io.Writer
	st             *store.Store // opened by open, closed by run
	// summary is the command's line in the command table, for its --help.
	summary string
	// positional names the command's positional arguments (parsePositional).
	positional []string
	// describe, when set, receives the command's flags and positional
	// arguments instead of a parse, and the command returns errDescribed: the
	// help is built from the flags the commands really define.
	describe func(fs *flag.FlagSet, positional []string)

	db        string
	dbOptions store.Options // PostgreSQL's pool and timeouts (--db-* flags)
	json      bool
	listen    string
	publicURL string
	logLevel  string
	logFormat string

	media          string
	carrier        string
	sim            string
	simSecret      string
	kannelSendURL  string
	kannelUser     string
	kannelPassword string
	kannelSecret   string
	reconcileAfter time.Duration
	carrierTimeout time.Duration
	// dbStatementTimeout and dbConnLifetime fill dbOptions (0 there means
	// the default, here none): see open.
	dbStatementTimeout time.Duration
	dbConnLifetime     time.Duration
	metricsAddr        string

	trustedProxyList string
	trustedProxies   []netip.Prefix // parsed by checkServeFlags
	// webhookAllowHosts may be plain http and private (serve --webhook-allow-hosts).
	webhookAllowHosts string
	// listenURL is where a PostgreSQL node's read cache listens for changes
	// (serve --database-listen-url); log, when set, receives the store's logs.
	listenURL string
	log       *slog.Logger
	// webhookRetention is how long finished webhook deliveries are kept.
	webhookRetention time.Duration
	// streamLimit is how many event streams an account may hold open on
	// one node (serve --stream-limit).
	streamLimit int
	// appSessionIdle and appSessionMax end an app session unused that long,
	// or begun that long ago (serve --app-session-idle, --app-session-max).
	appSessionIdle, appSessionMax time.Duration
	// walAutocheckpoint is --sqlite-wal-autocheckpoint: pages, 0 never.
	walAutocheckpoint int
	// pageCache is serve --page-cache: bytes, 0 off; not set, the default.
	pageCache optionalSize
}

// env returns the SWITCHBOARD_ variable for name, or def.
func env(name, def string) string {
	if v, ok := os.LookupEnv("SWITCHBOARD_" + name); ok {
		return v
	}
	return def
}

// The flags several commands share, in groups the help shows apart (see
// flagGroups). Every command reads the output flags; every command with a
// database the database flags; those that log, the logging flags.

func (c *cli) databaseFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.db, "db", env("DB", "./switchboard.db"), "database: a file path or sqlite://PATH for SQLite, postgres://… for PostgreSQL (SWITCHBOARD_DB)")
	fs.BoolVar(&c.dbOptions.PgBouncer, "db-pgbouncer", false, "the PostgreSQL URL points at PgBouncer in transaction pooling mode: no named prepared statements, no statement_timeout at connection start (see docs/operations.md) (SWITCHBOARD_DB_PGBOUNCER)")
	fs.IntVar(&c.walAutocheckpoint, "sqlite-wal-autocheckpoint", 1000, "SQLite: a commit that leaves the WAL this many pages long copies it into the database (a passive checkpoint); 0 never, when Litestream owns checkpoints (see docs/operations.md) (SWITCHBOARD_SQLITE_WAL_AUTOCHECKPOINT)")
}

func (c *cli) outputFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print one JSON object instead of text (SWITCHBOARD_JSON)")
}

func (c *cli) logFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.logLevel, "log-level", env("LOG_LEVEL", "info"), "log level: debug, info, warn, error (SWITCHBOARD_LOG_LEVEL)")
	fs.StringVar(&c.logFormat, "log-format", env("LOG_FORMAT", "text"), "log format: text or json (SWITCHBOARD_LOG_FORMAT)")
}

// serveFlags are the flags of the commands that run the server: the
// logging flags and the server flags.
func (c *cli) serveFlags(fs *flag.FlagSet) {
	c.logFlags(fs)
	c.serverFlags(fs)
}

// serverFlags are the flags only the server reads.
func (c *cli) serverFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.listen, "listen", env("LISTEN", "127.0.0.1:8080"), "address to serve on; port 0 picks a free one (SWITCHBOARD_LISTEN)")
	fs.StringVar(&c.publicURL, "public-url", env("PUBLIC_URL", ""), "public base URL of this server, e.g. https://sb.example.com; default http://LISTEN (SWITCHBOARD_PUBLIC_URL)")
	fs.StringVar(&c.media, "media", env("MEDIA", ""), "blob store for attachments: file:///abs/dir or s3://bucket?region=…; default file://<cwd>/switchboard-media (SWITCHBOARD_MEDIA)")
	fs.StringVar(&c.carrier, "carrier", env("CARRIER", "sim"), "carrier gateway: sim or kannel (SWITCHBOARD_CARRIER)")
	fs.StringVar(&c.sim, "sim", env("SIM", ""), "sim carrier script, e.g. receipt-delay=2s,latency=0,down=false,fail=1999,undeliverable=1555 (SWITCHBOARD_SIM)")
	fs.StringVar(&c.simSecret, "sim-secret", env("SIM_SECRET", ""), "sim carrier only: secret that opens its inbound door (POST /carrier/sim/inbound, for \"switchboard sim inbound\"), at least 16 characters; none keeps it closed; demo makes one up (SWITCHBOARD_SIM_SECRET)")
	fs.StringVar(&c.kannelSendURL, "kannel-send-url", env("KANNEL_SEND_URL", "http://127.0.0.1:13013/cgi-bin/sendsms"), "Kannel sendsms URL (SWITCHBOARD_KANNEL_SEND_URL)")
	fs.StringVar(&c.kannelUser, "kannel-user", env("KANNEL_USER", ""), "Kannel sendsms username (SWITCHBOARD_KANNEL_USER)")
	fs.StringVar(&c.kannelPassword, "kannel-password", env("KANNEL_PASSWORD", ""), "Kannel sendsms password (SWITCHBOARD_KANNEL_PASSWORD)")
	fs.StringVar(&c.kannelSecret, "kannel-secret", env("KANNEL_SECRET", ""), "secret Kannel's dlr-url and get-url carry, at least 16 characters (SWITCHBOARD_KANNEL_SECRET)")
	fs.DurationVar(&c.reconcileAfter, "reconcile-after", sms.DefaultReconcileAfter, "abandon a send still unanswered after this long; must be longer than --carrier-timeout (SWITCHBOARD_RECONCILE_AFTER)")
	fs.DurationVar(&c.carrierTimeout, "carrier-timeout", sms.DefaultCarrierTimeout, "how long a send waits for the carrier's answer, or for its receipt when the answer is lost (SWITCHBOARD_CARRIER_TIMEOUT)")
	fs.StringVar(&c.trustedProxyList, "trusted-proxies", env("TRUSTED_PROXIES", ""), "reverse proxies (addresses or CIDR prefixes, comma-separated) whose X-Forwarded-For names the client for per-address limits; none by default (SWITCHBOARD_TRUSTED_PROXIES)")
	fs.StringVar(&c.webhookAllowHosts, "webhook-allow-hosts", env("WEBHOOK_ALLOW_HOSTS", ""), "hosts webhook deliveries may reach over plain http and on private or loopback addresses, comma-separated, e.g. 127.0.0.1,localhost; for tests and local development (SWITCHBOARD_WEBHOOK_ALLOW_HOSTS)")
	fs.StringVar(&c.listenURL, "database-listen-url", env("DATABASE_LISTEN_URL", ""), "PostgreSQL only: URL the read cache listens for other nodes' changes on; must reach PostgreSQL directly (not through PgBouncer in transaction mode), same database and search_path; default --db (SWITCHBOARD_DATABASE_LISTEN_URL)")
	fs.IntVar(&c.dbOptions.MaxConns, "db-pool", 0, "PostgreSQL connections this node may hold; 0 means 4 per core; nodes × pool must stay under the server's max_connections (SWITCHBOARD_DB_POOL)")
	fs.DurationVar(&c.dbStatementTimeout, "db-statement-timeout", store.DefaultStatementTimeout, "PostgreSQL statement_timeout for every statement but migrations; 0 means none (SWITCHBOARD_DB_STATEMENT_TIMEOUT)")
	fs.DurationVar(&c.dbConnLifetime, "db-conn-lifetime", store.DefaultConnLifetime, "close a PostgreSQL connection this long after it opened, so connections spread over a restarted PgBouncer or server; 0 means never (SWITCHBOARD_DB_CONN_LIFETIME)")
	fs.DurationVar(&c.webhookRetention, "webhook-retention", webhooks.DefaultRetention, "how long finished webhook deliveries, their attempts and delivered events are kept before pruning (SWITCHBOARD_WEBHOOK_RETENTION)")
	fs.DurationVar(&c.appSessionIdle, "app-session-idle", oauth.DefaultSessionIdle, "end an app sign-in no tab has used for this long (SWITCHBOARD_APP_SESSION_IDLE)")
	fs.DurationVar(&c.appSessionMax, "app-session-max", oauth.DefaultSessionLifetime, "end an app sign-in this long after it began, however much it is used (SWITCHBOARD_APP_SESSION_MAX)")
	fs.IntVar(&c.streamLimit, "stream-limit", stream.DefaultLimit, "event streams (GET /events) one account may hold open on this node; beyond it 429 (SWITCHBOARD_STREAM_LIMIT)")
	fs.Var(&c.pageCache, "page-cache", "memory for the answers kept encoded while the database is unchanged (each filter's first page of conversations and the unread counts, per user), e.g. 64MiB; 0 turns them off; default 32MiB (SWITCHBOARD_PAGE_CACHE)")
	fs.StringVar(&c.metricsAddr, "metrics-addr", env("METRICS_ADDR", ""), "serve Prometheus /metrics and Go's /debug/pprof/ on this private address, e.g. 127.0.0.1:9090; off by default, never on --listen (SWITCHBOARD_METRICS_ADDR)")
}

// parse parses args with the database and output flags plus the command's
// own (added by define), and rejects stray positional arguments.
func (c *cli) parse(name string, args []string, define func(fs *flag.FlagSet)) error {
	return c.parseFlags(name, args, func(fs *flag.FlagSet) {
		c.databaseFlags(fs)
		if define != nil {
			define(fs)
		}
	})
}

// errDescribed ends a command run only to describe its flags (cli.describe).
var errDescribed = errors.New("described")

// parseFlags is parse without the database flags, for a command that opens
// no database. With --help it prints the command's help on stdout and
// returns flag.ErrHelp.
func (c *cli) parseFlags(name string, args []string, define func(fs *flag.FlagSet)) error {
	fs := flag.NewFlagSet("switchboard "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.outputFlags(fs)
	define(fs)
	if c.describe != nil {
		c.describe(fs, c.positional)
		return errDescribed
	}
	// Typed flags take their variable through the flag itself, so that a bad
	// value is refused like a bad flag instead of silently replaced.
	for name, variable := range map[string]string{"json": "JSON", "reconcile-after": "RECONCILE_AFTER", "carrier-timeout": "CARRIER_TIMEOUT",
		"db-pgbouncer": "DB_PGBOUNCER", "db-pool": "DB_POOL", "db-statement-timeout": "DB_STATEMENT_TIMEOUT", "db-conn-lifetime": "DB_CONN_LIFETIME",
		"webhook-retention": "WEBHOOK_RETENTION", "stream-limit": "STREAM_LIMIT", "sqlite-wal-autocheckpoint": "SQLITE_WAL_AUTOCHECKPOINT", "page-cache": "PAGE_CACHE"} {
		if f := fs.Lookup(name); f != nil {
			if v, ok := os.LookupEnv("SWITCHBOARD_" + variable); ok {
				if err := f.Value.Set(v); err != nil {
					return usageError{fmt.Sprintf("SWITCHBOARD_%s=%q: %v", variable, v, err)}
				}
			}
		}
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			commandHelp(c.stdout, name, c.summary, fs, c.positional)
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

// boolFlags are the common flags that take no value.
var boolFlags = map[string]bool{"json": true, "db-pgbouncer": true}

// parsePositional is parse for commands that take one positional argument
// per name in names (flags may come before or after them).
func (c *cli) parsePositional(name string, args []string, names []string, define func(fs *flag.FlagSet)) ([]string, error) {
	c.positional = names
	var pos, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			pos = append(pos, a)
			continue
		}
		rest = append(rest, a)
		// A flag's value may follow it as the next argument.
		if !strings.Contains(a, "=") && !boolFlags[strings.TrimLeft(a, "-")] && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++
			rest = append(rest, args[i])
		}
	}
	if err := c.parse(name, rest, define); err != nil {
		return nil, err
	}
	if len(pos) != len(names) {
		return nil, usageError{fmt.Sprintf("want %d argument(s) (%s), got %d", len(names), strings.Join(names, " "), len(pos))}
	}
	return pos, nil
}

// openAccount is parse and open for commands that act on one account: it
// adds the required --account flag and checks it before opening the store.
func (c *cli) openAccount(ctx context.Context, name string, args []string, define func(fs *flag.FlagSet)) (int64, *store.Store, error) {
	var account int64
	if err := c.parse(name, args, func(fs *flag.FlagSet) {
		fs.Int64Var(&account, "account", 0, "account id (required)")
		if define != nil {
			define(fs)
		}
	}); err != nil {
		return 0, nil, err
	}
	if account <= 0 {
		return 0, nil, usageError{"--account is required"}
	}
	st, err := c.open(ctx)
	if err != nil {
		return 0, nil, err
	}
	// An empty list for an account that does not exist would hide a typo.
	if _, err := st.Account(ctx, account); err != nil {
		return 0, nil, err
	}
	return account, st, nil
}

// parseOpen is open for a command with no flags of its own.
func (c *cli) parseOpen(ctx context.Context, name string, args []string) (*store.Store, error) {
	if err := c.parse(name, args, nil); err != nil {
		return nil, err
	}
	return c.open(ctx)
}

// open opens and migrates the configured database. The store stays open
// until the command returns; run closes it.
func (c *cli) open(ctx context.Context) (*store.Store, error) {
	o := c.storeOptions()
	o.ListenURL, o.Log = c.listenURL, c.log
	st, err := store.OpenWith(ctx, c.db, o)
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, err
	}
	c.st = st
	return st, nil
}

// openAsIs opens the configured database without migrating it: for the
// commands that must change nothing (backup; migrate --status on PostgreSQL).
func (c *cli) openAsIs(ctx context.Context) (*store.Store, error) {
	o := c.storeOptions()
	o.Log = c.log
	st, err := store.OpenWith(ctx, c.db, o)
	if err != nil {
		return nil, err
	}
	c.st = st
	return st, nil
}

// openReadOnly opens the configured database to read only (migrate
// --status): a SQLite file as backup --check opens a copy, so that nothing
// is created or changed, not even the journal mode; PostgreSQL as it is,
// the reads then run in read-only transactions (store.Migrations).
func (c *cli) openReadOnly(ctx context.Context) (*store.Store, error) {
	path, ok := store.SQLitePath(c.db)
	if !ok {
		return c.openAsIs(ctx)
	}
	if err := existingDatabase(path); err != nil {
		return nil, err
	}
	st, err := store.OpenCopy(ctx, path)
	if err != nil {
		return nil, err
	}
	c.st = st
	return st, nil
}

// storeOptions are dbOptions with the serve flags' durations, where 0 means
// none (store.Options takes a negative duration for that). Other commands
// define neither: they run without a statement timeout (an operator's bulk
// change is not a runaway statement) and hold their connections until done.
func (c *cli) storeOptions() store.Options {
	o := c.dbOptions
	none := func(d time.Duration) time.Duration {
		if d == 0 {
			return -1
		}
		return d
	}
	o.StatementTimeout, o.ConnLifetime = none(c.dbStatementTimeout), none(c.dbConnLifetime)
	o.WALAutocheckpoint = c.walAutocheckpoint
	if o.WALAutocheckpoint <= 0 {
		o.WALAutocheckpoint = -1 // store.Options' "never"
	}
	if c.pageCache.set {
		o.PageBytes = c.pageCache.value
		if o.PageBytes == 0 {
			o.PageBytes = -1 // store.Options' "off"
		}
	}
	return o
}

// close closes the store a command opened, if any.
func (c *cli) close() {
	if c.st != nil {
		c.st.Close()
		c.st = nil
	}
}

// logger returns the configured logger on stderr and a function that
// flushes it; call that before exiting.
func (c *cli) logger() (*slog.Logger, func(), error) {
	// A command that logs without defining the logging flags logs at info,
	// as text.
	var level slog.Level
	if c.logLevel == "" {
		c.logLevel, c.logFormat = "info", "text"
	}
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, nil, usageError{fmt.Sprintf("invalid --log-level %q", c.logLevel)}
	}
	if c.logFormat != "text" && c.logFormat != "json" {
		return nil, nil, usageError{fmt.Sprintf("invalid --log-format %q (want text or json)", c.logFormat)}
	}
	w := logging.NewWriter(c.stderr)
	return logging.New(w, c.logFormat == "json", level), func() { w.Close() }, nil
}

// table writes v as one JSON object with --json, else a table: header and
// each line are tab-separated columns.
func (c *cli) table(v any, header string, lines []string) {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, l := range lines {
		// Escaped before the columns are measured, so they stay aligned.
		fmt.Fprint(tw, termSafe(l))
	}
	tw.Flush()
	c.print(v, b.String())
}

// printList writes a list command's items: with --json one object whose key
// holds each item's JSON row ([] when there are none), else a table with
// header and each item's tab-separated line.
func printList[T, R any](c *cli, key, header string, items []T, row func(T) (R, string)) {
	rows := make([]R, 0, len(items))
	lines := make([]string, 0, len(items))
	for _, it := range items {
		r, line := row(it)
		rows = append(rows, r)
		lines = append(lines, line+"\n")
	}
	c.table(map[string]any{key: rows}, header, lines)
}

// revokeByID is a revoke subcommand: --account and --id, both required, and
// revoke called with them. what names the object in the confirmation, which
// says "<what> <id> revoked" and then after, if set.
func revokeByID(ctx context.Context, c *cli, name, what string, args []string, revoke func(*store.Store, context.Context, int64, int64) error, after string) error {
	var account, id int64
	if err := c.parse(name, args, func(fs *flag.FlagSet) {
		fs.Int64Var(&account, "account", 0, "account id (required)")
		fs.Int64Var(&id, "id", 0, what+" id (required)")
	}); err != nil {
		return err
	}
	if account <= 0 || id <= 0 {
		return usageError{"--account and --id are required"}
	}
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	if err := revoke(st, ctx, account, id); err != nil {
		return err
	}
	c.print(map[string]any{"id": id, "revoked": true}, fmt.Sprintf("%s %d revoked%s", what, id, after))
	return nil
}

// print writes v as one JSON object with --json, else the text; either way
// with the characters a terminal would obey escaped (see termSafe).
func (c *cli) print(v any, text string) {
	if c.json {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.Encode(v)
		fmt.Fprint(c.stdout, jsonSafe(b.String()))
		return
	}
	fmt.Fprint(c.stdout, termSafe(text))
	if !strings.HasSuffix(text, "\n") {
		fmt.Fprintln(c.stdout)
	}
}

func joinArgs(args []string) string { return strings.Join(args, " ") }

// oneLine keeps an error message to one line: no stack traces, ever.
// A domain error shows its client-safe message without the layers' prefixes.
func oneLine(err error) string {
	msg := err.Error()
	var de *domain.Error
	if errors.As(err, &de) {
		msg = de.Message
	}
	return strings.ReplaceAll(msg, "\n", "; ")
}
