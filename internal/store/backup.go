package store

import (
	"context"
	"fmt"

	"switchboard/internal/domain"
	"switchboard/internal/money"
	"switchboard/internal/store/sqldb"
)

// EngineOf is the engine dsn selects, without connecting ("" for a scheme
// Open refuses).
func EngineOf(dsn string) Engine { return sqldb.EngineOf(dsn) }

// SQLitePath is the file a SQLite dsn names; false for PostgreSQL.
func SQLitePath(dsn string) (string, bool) { return sqldb.SQLitePath(dsn) }

// OpenCopy opens the SQLite database file at path read-only and without
// migrating it or writing anything beside it (sqldb.OpenReadOnly): for
// checking a backup. Only reads work on it.
func OpenCopy(ctx context.Context, path string) (*Store, error) {
	db, err := sqldb.OpenReadOnly(ctx, path)
	if err != nil {
		return nil, err
	}
	return &Store{db: db}, nil
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
		`SELECT l.id FROM ledger l WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = l.message_id) ORDER BY l.id`},
	{"every charged message is an outbound text the carrier accepted (status sent)", "ledger",
		`SELECT l.id FROM ledger l JOIN messages m ON m.id = l.message_id WHERE m.direction <> 'out' OR m.status <> '` + domain.StatusSent + `' ORDER BY l.id`},
	{"every charge is in its message's account", "ledger",
		`SELECT l.id FROM ledger l JOIN messages m ON m.id = l.message_id WHERE l.account_id <> m.account_id ORDER BY l.id`},
	{"every charge is its message's price", "ledger",
		`SELECT l.id FROM ledger l JOIN messages m ON m.id = l.message_id WHERE l.amount <> m.price ORDER BY l.id`},
	{"every message the carrier accepted is charged", "message",
		`SELECT m.id FROM messages m WHERE m.direction = 'out' AND m.status = '` + domain.StatusSent + `'
			AND NOT EXISTS (SELECT 1 FROM ledger l WHERE l.message_id = m.id) ORDER BY m.id`},
}

// LedgerAgreement checks every rule of ledgerRules and returns each with
// the rows that break it.
func (s *Store) LedgerAgreement(ctx context.Context) ([]LedgerCheck, error) {
	const examples = 5
	out := make([]LedgerCheck, 0, len(ledgerRules))
	for _, r := range ledgerRules {
		c := LedgerCheck{Name: r.name, Kind: r.kind, Examples: []int64{}}
		rows, err := s.db.Query(ctx, r.query)
		if err != nil {
			return nil, fmt.Errorf("store: ledger check %q: %w", r.name, err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: ledger check %q: %w", r.name, err)
			}
			if c.Count < examples {
				c.Examples = append(c.Examples, id)
			}
			c.Count++
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
