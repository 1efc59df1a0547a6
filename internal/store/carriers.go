package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// Carrier connections' SQL (issue 34, migration 0038). What a kind's
// settings mean, which are secret and what a state is are package
// carriers'.

// CarrierConnection is a stored carrier connection.
type CarrierConnection struct {
	ID       int64
	Name     string
	Kind     string
	Settings map[string]string
	Secrets  map[string]string
	Disabled bool
	// What the node running it last reported.
	State      string
	StateSince time.Time // zero: never reported
	LastError  string
	StateNode  string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

const carrierColumns = `id, name, kind, settings, secrets, disabled, state, state_since, last_error, state_node, created_at, updated_at`

func scanCarrier(sc interface{ Scan(...any) error }) (CarrierConnection, error) {
	var c CarrierConnection
	var settings, secrets string
	var since sql.NullInt64
	var created, updated int64
	if err := sc.Scan(&c.ID, &c.Name, &c.Kind, &settings, &secrets, &c.Disabled, &c.State, &since, &c.LastError, &c.StateNode, &created, &updated); err != nil {
		return c, err
	}
	if err := json.Unmarshal([]byte(settings), &c.Settings); err != nil {
		return c, fmt.Errorf("carrier %s: settings: %w", c.Name, err)
	}
	if err := json.Unmarshal([]byte(secrets), &c.Secrets); err != nil {
		return c, fmt.Errorf("carrier %s: secrets: %w", c.Name, err)
	}
	if since.Valid {
		c.StateSince = fromMicros(since.Int64)
	}
	c.CreatedAt, c.UpdatedAt = fromMicros(created), fromMicros(updated)
	return c, nil
}

func jsonMap(m map[string]string) string {
	if m == nil {
		m = map[string]string{}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// CreateCarrier stores a new connection; a name in use is a conflict.
func (s *Store) CreateCarrier(ctx context.Context, c *CarrierConnection) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		now := tx.Now()
		id, err := tx.Insert(ctx, `INSERT INTO carrier_connections (name, kind, settings, secrets, disabled, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			c.Name, c.Kind, jsonMap(c.Settings), jsonMap(c.Secrets), c.Disabled, now, now)
		if sqldb.IsUniqueViolation(err) {
			return domain.Errorf(domain.Conflict, "a carrier connection named %q exists already (switchboard carrier set %s changes it)", c.Name, c.Name)
		}
		if err != nil {
			return fmt.Errorf("store: create carrier: %w", err)
		}
		c.ID, c.CreatedAt, c.UpdatedAt = id, fromMicros(now), fromMicros(now)
		return nil
	})
}

// UpdateCarrier saves c's settings, secrets and disabled flag (by id).
func (s *Store) UpdateCarrier(ctx context.Context, c *CarrierConnection) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		now := tx.Now()
		res, err := tx.Exec(ctx, `UPDATE carrier_connections SET settings = ?, secrets = ?, disabled = ?, updated_at = ? WHERE id = ?`,
			jsonMap(c.Settings), jsonMap(c.Secrets), c.Disabled, now, c.ID)
		if err != nil {
			return fmt.Errorf("store: update carrier: %w", err)
		}
		c.UpdatedAt = fromMicros(now)
		return oneRow(res, "carrier connection")
	})
}

// Carriers lists every connection by name.
func (s *Store) Carriers(ctx context.Context) ([]CarrierConnection, error) {
	rows, err := s.db.Query(ctx, `SELECT `+carrierColumns+` FROM carrier_connections ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("store: carriers: %w", err)
	}
	defer rows.Close()
	out := []CarrierConnection{}
	for rows.Next() {
		c, err := scanCarrier(rows)
		if err != nil {
			return nil, fmt.Errorf("store: carriers: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// CarrierByName finds the connection called name; not_found when none is.
func (s *Store) CarrierByName(ctx context.Context, name string) (CarrierConnection, error) {
	c, err := scanCarrier(s.db.QueryRow(ctx, `SELECT `+carrierColumns+` FROM carrier_connections WHERE name = ?`, name))
	if err != nil {
		return c, fmt.Errorf("store: carrier: %w", notFoundf(err, "no carrier connection is named %q (switchboard carrier list)", name))
	}
	return c, nil
}

// DeleteCarrier removes the connection called name, refused (conflict,
// naming them) while lines use it.
func (s *Store) DeleteCarrier(ctx context.Context, name string) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		var id int64
		if err := tx.QueryRow(ctx, `SELECT id FROM carrier_connections WHERE name = ?`+tx.ForUpdate(), name).Scan(&id); err != nil {
			return fmt.Errorf("store: delete carrier: %w", notFoundf(err, "no carrier connection is named %q (switchboard carrier list)", name))
		}
		var lines []string
		err := tx.Query(ctx, `SELECT number FROM lines WHERE carrier_id = ? ORDER BY number`, []any{id}, func(r sqldb.Row) error {
			var n string
			if err := r.Scan(&n); err != nil {
				return err
			}
			lines = append(lines, n)
			return nil
		})
		if err != nil {
			return fmt.Errorf("store: carrier lines: %w", err)
		}
		if len(lines) > 0 {
			return domain.Errorf(domain.Conflict, "carrier connection %q is used by %d line(s): %s; give them another first (switchboard line set --carrier)",
				name, len(lines), strings.Join(lines, ", "))
		}
		_, err = tx.Exec(ctx, `DELETE FROM carrier_connections WHERE id = ?`, id)
		return err
	})
}

// SetCarrierState records what the node running connection id reports of
// it; a state unchanged keeps its since.
func (s *Store) SetCarrierState(ctx context.Context, id int64, state, lastError, node string) error {
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		_, err := tx.Exec(ctx, `UPDATE carrier_connections SET state_since = CASE WHEN state = ? THEN state_since ELSE ? END,
			state = ?, last_error = ?, state_node = ? WHERE id = ?`, state, tx.Now(), state, lastError, node, id)
		return err
	})
}

// SetLineCarrier makes the account's line with number use connection
// carrierID (0: the server's --carrier flags).
func (s *Store) SetLineCarrier(ctx context.Context, accountID int64, number string, carrierID int64) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		var id any
		if carrierID > 0 {
			id = carrierID
		}
		res, err := tx.Exec(ctx, `UPDATE lines SET carrier_id = ? WHERE account_id = ? AND number = ?`, id, accountID, number)
		if err != nil {
			return fmt.Errorf("store: line carrier: %w", err)
		}
		return oneRow(res, "line")
	})
}

// LineCarriers maps each line number that names a connection to the
// connection's id, from the read cache: the carrier router's table.
func (s *Store) LineCarriers(ctx context.Context) (map[string]int64, error) {
	return sqldb.Cached(ctx, s.db, "line_carriers", func() (map[string]int64, error) {
		rows, err := s.db.Query(ctx, `SELECT number, carrier_id FROM lines WHERE carrier_id IS NOT NULL`)
		if err != nil {
			return nil, fmt.Errorf("store: line carriers: %w", err)
		}
		defer rows.Close()
		out := map[string]int64{}
		for rows.Next() {
			var n string
			var id int64
			if err := rows.Scan(&n, &id); err != nil {
				return nil, fmt.Errorf("store: line carriers: %w", err)
			}
			out[n] = id
		}
		return out, rows.Err()
	})
}

// CarrierLines counts each connection's lines, by connection id.
func (s *Store) CarrierLines(ctx context.Context) (map[int64][]string, error) {
	rows, err := s.db.Query(ctx, `SELECT carrier_id, number FROM lines WHERE carrier_id IS NOT NULL ORDER BY number`)
	if err != nil {
		return nil, fmt.Errorf("store: carrier lines: %w", err)
	}
	defer rows.Close()
	out := map[int64][]string{}
	for rows.Next() {
		var id int64
		var n string
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("store: carrier lines: %w", err)
		}
		out[id] = append(out[id], n)
	}
	return out, rows.Err()
}

// AddCarrierRefs records the ids connection carrierID's carrier gave
// message messageID (one per part), for its receipts.
func (s *Store) AddCarrierRefs(ctx context.Context, carrierID, messageID int64, refs []string) error {
	if len(refs) == 0 {
		return nil
	}
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		args := make([]any, 0, 5*len(refs))
		for i, r := range refs {
			args = append(args, carrierID, r, messageID, i, tx.Now())
		}
		_, err := tx.Exec(ctx, `INSERT INTO carrier_refs (carrier_id, ref, message_id, part, created_at) VALUES (?, ?, ?, ?, ?)`+
			strings.Repeat(`, (?, ?, ?, ?, ?)`, len(refs)-1)+` ON CONFLICT DO NOTHING`, args...)
		return err
	})
}

// CarrierRefMessage finds the message connection carrierID's carrier gave
// ref; not_found when none.
func (s *Store) CarrierRefMessage(ctx context.Context, carrierID int64, ref string) (int64, error) {
	var id int64
	err := s.db.QueryRow(ctx, `SELECT message_id FROM carrier_refs WHERE carrier_id = ? AND ref = ?`, carrierID, ref).Scan(&id)
	return id, notFound(err, "carrier reference")
}

// CarrierPartReceipt records status as the last receipt's word of the
// part connection carrierID's carrier called ref, and returns its message
// and the words of all the message's parts, in order ("" for a part with no
// receipt yet); not_found when ref is not recorded. A message of one part
// keeps no word: its receipt's is the answer.
func (s *Store) CarrierPartReceipt(ctx context.Context, carrierID int64, ref, status string) (int64, []string, error) {
	var msg int64
	var parts []string
	// A text of one part (most) needs no word kept: its receipt is the
	// text's, and one read answers it without a write.
	var n int
	err := s.db.QueryRow(ctx, `SELECT r.message_id, (SELECT COUNT(*) FROM carrier_refs p WHERE p.carrier_id = r.carrier_id AND p.message_id = r.message_id)
		FROM carrier_refs r WHERE r.carrier_id = ? AND r.ref = ?`, carrierID, ref).Scan(&msg, &n)
	if err != nil {
		return 0, nil, notFound(err, "carrier reference")
	}
	if n == 1 {
		return msg, []string{status}, nil
	}
	err = s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		parts = parts[:0]
		if err := tx.QueryRow(ctx, `SELECT message_id FROM carrier_refs WHERE carrier_id = ? AND ref = ?`, carrierID, ref).Scan(&msg); err != nil {
			return notFound(err, "carrier reference")
		}
		// The parts' receipts may come at once (several binds, several
		// lanes): on PostgreSQL the message's parts are locked, in order,
		// so that the last part's receipt sees every other part's word.
		// (SQLite's writes run one at a time.)
		if lock := tx.ForUpdate(); lock != "" {
			if err := tx.Query(ctx, `SELECT part FROM carrier_refs WHERE carrier_id = ? AND message_id = ? ORDER BY part`+lock,
				[]any{carrierID, msg}, func(sqldb.Row) error { return nil }); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE carrier_refs SET status = ? WHERE carrier_id = ? AND ref = ?`, status, carrierID, ref); err != nil {
			return err
		}
		return tx.Query(ctx, `SELECT status FROM carrier_refs WHERE carrier_id = ? AND message_id = ? ORDER BY part`, []any{carrierID, msg}, func(r sqldb.Row) error {
			var st string
			if err := r.Scan(&st); err != nil {
				return err
			}
			parts = append(parts, st)
			return nil
		})
	})
	return msg, parts, err
}

// PruneCarrierRefs deletes the carrier ids recorded before cutoff (their
// receipts are long due) and says how many.
func (s *Store) PruneCarrierRefs(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `DELETE FROM carrier_refs WHERE created_at < ?`, micros(cutoff))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}
