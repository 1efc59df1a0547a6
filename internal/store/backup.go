package store

import (
	"context"
	"fmt"
	"log/slog"

	"switchboard/internal/domain"
	"switchboard/internal/money"
	"switchboard/internal/store/sqldb"
)

// EngineOf is the engine dsn selects, without connecting ("" for a scheme
// Open refuses).
func EngineOf(dsn string) Engine { return sqldb.EngineOf(dsn) }

// SQLitePath is the file a SQLite dsn names; false for PostgreSQL.
func SQLitePath(dsn string) (string, bool) { return sqldb.SQLitePath(dsn) }

// SQLiteFile is one file of a SQLite database and what it is.
type SQLiteFile = sqldb.SQLiteFile

// SQLiteFiles are the files of the SQLite database at path: the database,
// its -wal, -shm and -journal, and the lock a server holds. Some may not
// exist yet.
func SQLiteFiles(path string) []SQLiteFile { return sqldb.SQLiteFiles(path) }

// OpenCopy opens the SQLite database file at path read-only and without
// migrating it or writing anything beside it (sqldb.OpenReadOnly): for
// checking a backup. Only reads work on it.
func OpenCopy(ctx context.Context, path string) (*Store, error) {
	db, err := sqldb.OpenReadOnly(ctx, path)
	if err != nil {
		return nil, err
	}
	return &Store{db: db, log: slog.New(slog.DiscardHandler)}, nil
}

// Backup writes a consistent copy of the SQLite database to dst (which must
// not exist or be empty) while the database keeps serving: see
// sqldb.DB.VacuumInto. dst is not synced to disk.
func (s *Store) Backup(ctx context.Context, dst string) error { return s.db.VacuumInto(ctx, dst) }

// SizeBytes is the SQLite database's page count times its page size.
func (s *Store) SizeBytes(ctx context.Context) (int64, error) { return s.db.SizeBytes(ctx) }

// Integrity runs SQLite's integrity and foreign key checks and returns what
// each found (nil when sound).
func (s *Store) Integrity(ctx context.Context) (integrity, foreignKeys []string, err error) {
	return s.db.Integrity(ctx)
}

// CheckedTables are the tables a copy's check reads (Migrations,
// ChargesByAccount, LedgerAgreement), schema_migrations first.
var CheckedTables = []string{"schema_migrations", "accounts", "messages", "ledger"}

// SchemaKinds says what the SQLite file holds under each of names: "table"
// for a table with rows in the file, else "view", "trigger", "index",
// "virtual table", or "" when nothing has the name. A query names a view
// as it names a table, and a view (a recursive one) may run for ever: a
// copy's check reads only what is a table.
func (s *Store) SchemaKinds(ctx context.Context, names ...string) (map[string]string, error) {
	kinds := make(map[string]string, len(names))
	for _, name := range names {
		// Names are case-insensitive in SQL, so LEDGER is ledger.
		rows, err := s.db.Query(ctx, `SELECT type, sql LIKE 'CREATE VIRTUAL TABLE%' FROM sqlite_schema WHERE name = ? COLLATE NOCASE`, name)
		if err != nil {
			return nil, fmt.Errorf("store: schema of %s: %w", name, err)
		}
		for rows.Next() {
			var kind string
			var virtual bool
			if err := rows.Scan(&kind, &virtual); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: schema of %s: %w", name, err)
			}
			if kind == "table" && virtual {
				kind = "virtual table"
			}
			if kinds[name] != "table" {
				kinds[name] = kind
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("store: schema of %s: %w", name, err)
		}
	}
	return kinds, nil
}

// AccountCharges is one account's ledger in one currency: how many charges
// and their exact sum.
type AccountCharges struct {
	AccountID int64
	Name      string // "" when the account row is missing
	Currency  string
	Charges   int64
	Total     money.Micros
}

// ChargesByAccount sums the ledger per account and currency, in account id
// order. The sum is the database's integer sum: exact, or an error on
// overflow, never rounded.
func (s *Store) ChargesByAccount(ctx context.Context) ([]AccountCharges, error) {
	rows, err := s.db.Query(ctx, `SELECT l.account_id, COALESCE(a.name, ''), l.currency, COUNT(*), SUM(l.amount)
		FROM ledger l LEFT JOIN accounts a ON a.id = l.account_id
		GROUP BY l.account_id, a.name, l.currency ORDER BY l.account_id, l.currency`)
	if err != nil {
		return nil, fmt.Errorf("store: charges by account: %w", err)
	}
	defer rows.Close()
	var out []AccountCharges
	for rows.Next() {
		var c AccountCharges
		var total int64
		if err := rows.Scan(&c.AccountID, &c.Name, &c.Currency, &c.Charges, &total); err != nil {
			return nil, fmt.Errorf("store: charges by account: %w", err)
		}
		c.Total = money.Micros(total)
		out = append(out, c)
	}
	return out, rows.Err()
}

// LedgerCheck is one rule the ledger and the messages must agree on, and
// the rows that break it.
type LedgerCheck struct {
	Name     string  // what the rule says, e.g. "every charge's message exists"
	Kind     string  // what Examples are ids of: "ledger" or "message"
	Count    int     // rows that break it; 0 when it holds
	Examples []int64 // the first few of those rows' ids
}

// ledgerRules are the agreements between ledger and messages that hold in a
// sound database: a message is charged exactly when the carrier accepted it
// (status sent, written in the same transaction as its one ledger row:
// markSent), to its own account, at the price it was sent at. Each query
// returns the ids of the rows that break its rule.
var ledgerRules = []struct{ name, kind, query string }{
	{"every charge's message exists", "ledger",
		`SELECT l.id FROM ledger l WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = l.message_id)`},
	{"every charged message is an outbound text the carrier accepted (status sent)", "ledger",
		`SELECT l.id FROM ledger l JOIN messages m ON m.id = l.message_id WHERE m.direction <> 'out' OR m.status <> '` + domain.StatusSent + `'`},
	{"every charge is in its message's account", "ledger",
		`SELECT l.id FROM ledger l JOIN messages m ON m.id = l.message_id WHERE l.account_id <> m.account_id`},
	{"every charge is its message's price", "ledger",
		`SELECT l.id FROM ledger l JOIN messages m ON m.id = l.message_id WHERE l.amount <> m.price`},
	{"every message the carrier accepted is charged", "message",
		`SELECT m.id FROM messages m WHERE m.direction = 'out' AND m.status = '` + domain.StatusSent + `'
			AND NOT EXISTS (SELECT 1 FROM ledger l WHERE l.message_id = m.id)`},
}

// LedgerAgreement checks every rule of ledgerRules and returns each with
// the rows that break it.
func (s *Store) LedgerAgreement(ctx context.Context) ([]LedgerCheck, error) {
	const examples = 5
	out := make([]LedgerCheck, 0, len(ledgerRules))
	for _, r := range ledgerRules {
		c := LedgerCheck{Name: r.name, Kind: r.kind, Examples: []int64{}}
		// The count is a window over every row: SQLite finds them all
		// before the first row comes back, within the statement's first
		// step, which is the one a cancelled ctx interrupts (the driver
		// does not interrupt later steps).
		rows, err := s.db.Query(ctx, `SELECT id, COUNT(*) OVER () FROM (`+r.query+`) ORDER BY id LIMIT `+fmt.Sprint(examples))
		if err != nil {
			return nil, fmt.Errorf("store: ledger check %q: %w", r.name, err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id, &c.Count); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: ledger check %q: %w", r.name, err)
			}
			c.Examples = append(c.Examples, id)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("store: ledger check %q: %w", r.name, err)
		}
		out = append(out, c)
	}
	return out, nil
}
