package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"switchboard/internal/domain"
	"switchboard/internal/search/words"
)

// The address book's search index, contact_terms (migration 0037): each
// contact's words ('w' and a folded word of its name or company, as its
// search column holds them) and its numbers' digit suffixes ('n' and at
// least words.MinNumberDigits digits), so that a word's beginning and any
// part of a number are each a range of the key.

// contactTerms are c's terms, each once.
func contactTerms(search string, numbers []string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, w := range strings.Fields(search) {
		add("w" + w)
	}
	for _, n := range numbers {
		for _, s := range words.Suffixes(n) {
			add("n" + s)
		}
	}
	return out
}

// termRange is the key range of the terms that begin with prefix: strings
// compare byte by byte (SQLite's BINARY, the column's "C" collation on
// PostgreSQL), and no folded word holds U+10FFFF, UTF-8's largest.
func termRange(prefix string) (lo, hi string) { return prefix, prefix + "\U0010FFFF" }

// indexTerms replaces the terms of contact c (its Search and Numbers as
// stored) in the write's transaction.
func (ct *ContactTx) indexTerms(c *domain.Contact) error {
	if _, err := ct.tx.Exec(ct.ctx, `DELETE FROM contact_terms WHERE contact_id = ?`, c.ID); err != nil {
		return fmt.Errorf("store: contact terms: %w", err)
	}
	numbers := make([]string, len(c.Numbers))
	for i, n := range c.Numbers {
		numbers[i] = n.Number
	}
	terms := contactTerms(c.Search, numbers)
	if len(terms) == 0 {
		return nil
	}
	args := make([]any, 0, 3*len(terms))
	for _, t := range terms {
		args = append(args, ct.account, t, c.ID)
	}
	q := `INSERT INTO contact_terms (account_id, term, contact_id) VALUES (?, ?, ?)` + strings.Repeat(`, (?, ?, ?)`, len(terms)-1)
	if _, err := ct.tx.Exec(ct.ctx, q, args...); err != nil {
		return fmt.Errorf("store: contact terms: %w", err)
	}
	return nil
}

// contactTermMatch is the condition on contacts c that one of its terms
// begins with prefix, and its arguments. On PostgreSQL the matches are an
// array (an InitPlan): a generic plan of IN (subquery) knows no range's
// size and may read every contact.
func (s *Store) contactTermMatch(account int64, prefix string) (string, []any) {
	lo, hi := termRange(prefix)
	match := `SELECT t.contact_id FROM contact_terms t WHERE t.account_id = ? AND t.term >= ? AND t.term < ?`
	if s.db.Engine() == Postgres {
		return `c.id = ANY(ARRAY(` + match + `))`, []any{account, lo, hi}
	}
	return `c.id IN (` + match + `)`, []any{account, lo, hi}
}

// contactTermsBackfill is migration 0037's Go step: the terms of every
// existing contact.
func (s *Store) contactTermsBackfill(ctx context.Context, tx *sql.Tx) error {
	type contact struct {
		account int64
		search  string
		numbers []string
	}
	all := map[int64]*contact{}
	var ids []int64
	rows, err := tx.QueryContext(ctx, `SELECT id, account_id, search FROM contacts ORDER BY id`)
	if err != nil {
		return err
	}
	for rows.Next() {
		c := &contact{}
		var id int64
		if err := rows.Scan(&id, &c.account, &c.search); err != nil {
			rows.Close()
			return err
		}
		all[id] = c
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = tx.QueryContext(ctx, `SELECT contact_id, number FROM contact_numbers`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		var n string
		if err := rows.Scan(&id, &n); err != nil {
			rows.Close()
			return err
		}
		if c := all[id]; c != nil {
			c.numbers = append(c.numbers, n)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var args []any
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		q := `INSERT INTO contact_terms (account_id, term, contact_id) VALUES (?, ?, ?)` + strings.Repeat(`, (?, ?, ?)`, len(args)/3-1)
		_, err := tx.ExecContext(ctx, s.db.Rebind(q), args...)
		args = args[:0]
		return err
	}
	for i, id := range ids {
		c := all[id]
		for _, t := range contactTerms(c.search, c.numbers) {
			args = append(args, c.account, t, id)
		}
		if len(args) >= 3*2000 || i == len(ids)-1 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if len(ids) > 0 {
		s.log.Info("migration 0037: indexed the contacts for search", "contacts", len(ids))
	}
	return nil
}
