package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/search/words"
	"switchboard/internal/store/sqldb"
)

// The team address book's SQL (issue 33). The rules (validation, what a
// number is, who holds it, what an import row does) are package contacts';
// a write runs its decisions in one transaction through a ContactTx. No read
// cache holds contacts, so their writes keep it (sqldb.KeepCache); the
// inbox's kept first pages, which show contacts' names, are stale after any
// commit (sqldb.Pages) and need nothing more.

const contactColumns = `id, account_id, name, company, email, notes, tags, created_at, updated_at`

func scanContact(sc interface{ Scan(...any) error }) (domain.Contact, error) {
	var c domain.Contact
	var tags string
	var created, updated int64
	if err := sc.Scan(&c.ID, &c.AccountID, &c.Name, &c.Company, &c.Email, &c.Notes, &tags, &created, &updated); err != nil {
		return c, err
	}
	if err := json.Unmarshal([]byte(tags), &c.Tags); err != nil {
		return c, fmt.Errorf("store: contact %d tags: %w", c.ID, err)
	}
	if c.Tags == nil {
		c.Tags = []string{}
	}
	c.CreatedAt, c.UpdatedAt = fromMicros(created), fromMicros(updated)
	return c, nil
}

func encodeTags(tags []string) string {
	if len(tags) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(tags) // strings: never fails
	return string(b)
}

// ContactTx is a contact write's view of its transaction: the reads its
// decisions need (who holds a number, a contact as it stands) see the
// transaction's own earlier writes, so an import's later row sees what an
// earlier one created.
type ContactTx struct {
	ctx     context.Context
	tx      *Tx
	account int64
}

// WriteContacts runs fn in one write transaction of account's address book:
// everything fn does commits together, or nothing does when it returns an
// error. fn may run more than once (see sqldb.DB.Write), each time from the
// start, so it must reset what it collects.
func (s *Store) WriteContacts(ctx context.Context, accountID int64, fn func(ct *ContactTx) error) error {
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.Touches(accountID) // the names beside a first page's numbers
		return fn(&ContactTx{ctx: ctx, tx: tx, account: accountID})
	})
}

// Now is the transaction's time, the one its rows are stamped with.
func (ct *ContactTx) Now() time.Time { return fromMicros(ct.tx.Now()) }

// Holders returns, for each of numbers that a contact of the account holds,
// that contact.
func (ct *ContactTx) Holders(numbers []string) (map[string]domain.ContactRef, error) {
	out := map[string]domain.ContactRef{}
	if len(numbers) == 0 {
		return out, nil
	}
	args := make([]any, 0, len(numbers)+1)
	args = append(args, ct.account)
	for _, n := range numbers {
		args = append(args, n)
	}
	err := ct.tx.Query(ct.ctx, `SELECT n.number, c.id, c.name FROM contact_numbers n JOIN contacts c ON c.id = n.contact_id
		WHERE n.account_id = ? AND n.number IN (`+placeholders(len(numbers))+`)`, args, func(r sqldb.Row) error {
		var n string
		var ref domain.ContactRef
		if err := r.Scan(&n, &ref.ID, &ref.Name); err != nil {
			return err
		}
		out[n] = ref
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: contact holders: %w", err)
	}
	return out, nil
}

// Get returns the account's contact id with its numbers; not_found for
// another account's or none.
func (ct *ContactTx) Get(id int64) (domain.Contact, error) {
	c, err := scanContact(ct.tx.QueryRow(ct.ctx, `SELECT `+contactColumns+` FROM contacts WHERE id = ? AND account_id = ?`, id, ct.account))
	if err != nil {
		return c, notFound(err, "contact")
	}
	c.Numbers = []domain.ContactNumber{}
	err = ct.tx.Query(ct.ctx, `SELECT number, label FROM contact_numbers WHERE contact_id = ? ORDER BY position`, []any{id}, func(r sqldb.Row) error {
		var n domain.ContactNumber
		if err := r.Scan(&n.Number, &n.Label); err != nil {
			return err
		}
		c.Numbers = append(c.Numbers, n)
		return nil
	})
	if err != nil {
		return c, fmt.Errorf("store: contact numbers: %w", err)
	}
	return c, nil
}

// Count returns how many contacts the account has.
func (ct *ContactTx) Count() (int, error) {
	var n int
	if err := ct.tx.QueryRow(ct.ctx, `SELECT COUNT(*) FROM contacts WHERE account_id = ?`, ct.account).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count contacts: %w", err)
	}
	return n, nil
}

// Create stores c (its numbers free: see Holders) as a new contact of the
// account, setting its id and times.
func (ct *ContactTx) Create(c *domain.Contact) error {
	now := ct.tx.Now()
	id, err := ct.tx.Insert(ct.ctx, `INSERT INTO contacts (account_id, name, company, email, notes, tags, search, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, ct.account, c.Name, c.Company, c.Email, c.Notes, encodeTags(c.Tags), c.Search, now, now)
	if err != nil {
		return fmt.Errorf("store: create contact: %w", err)
	}
	c.ID, c.AccountID, c.CreatedAt, c.UpdatedAt = id, ct.account, fromMicros(now), fromMicros(now)
	if err := ct.insertNumbers(c); err != nil {
		return err
	}
	return ct.indexTerms(c)
}

// Update replaces the stored fields and numbers of the account's contact
// c.ID with c's (its numbers free or its own), setting its updated time.
func (ct *ContactTx) Update(c *domain.Contact) error {
	now := ct.tx.Now()
	res, err := ct.tx.Exec(ct.ctx, `UPDATE contacts SET name = ?, company = ?, email = ?, notes = ?, tags = ?, search = ?, updated_at = ?
		WHERE id = ? AND account_id = ?`, c.Name, c.Company, c.Email, c.Notes, encodeTags(c.Tags), c.Search, now, c.ID, ct.account)
	if err != nil {
		return fmt.Errorf("store: update contact: %w", err)
	}
	if err := oneRow(res, "contact"); err != nil {
		return err
	}
	c.AccountID, c.UpdatedAt = ct.account, fromMicros(now)
	if _, err := ct.tx.Exec(ct.ctx, `DELETE FROM contact_numbers WHERE contact_id = ?`, c.ID); err != nil {
		return fmt.Errorf("store: update contact numbers: %w", err)
	}
	if err := ct.insertNumbers(c); err != nil {
		return err
	}
	return ct.indexTerms(c)
}

func (ct *ContactTx) insertNumbers(c *domain.Contact) error {
	for i, n := range c.Numbers {
		if _, err := ct.tx.Exec(ct.ctx, `INSERT INTO contact_numbers (account_id, number, contact_id, label, position) VALUES (?, ?, ?, ?, ?)`,
			ct.account, n.Number, c.ID, n.Label, i); err != nil {
			return fmt.Errorf("store: contact number: %w", err)
		}
	}
	return nil
}

// Delete removes the account's contact id and its numbers; not_found when
// it has none.
func (ct *ContactTx) Delete(id int64) error {
	if _, err := ct.tx.Exec(ct.ctx, `DELETE FROM contact_numbers WHERE contact_id = ? AND account_id = ?`, id, ct.account); err != nil {
		return fmt.Errorf("store: delete contact numbers: %w", err)
	}
	if _, err := ct.tx.Exec(ct.ctx, `DELETE FROM contact_terms WHERE contact_id = ? AND account_id = ?`, id, ct.account); err != nil {
		return fmt.Errorf("store: delete contact terms: %w", err)
	}
	res, err := ct.tx.Exec(ct.ctx, `DELETE FROM contacts WHERE id = ? AND account_id = ?`, id, ct.account)
	return deleted(res, err, "contact")
}

// Event writes the capability's event in the transaction, so that it is
// delivered exactly when the change commits.
func (ct *ContactTx) Event(e domain.Event) error { return addEvents(ct.ctx, ct.tx, ct.account, e) }

// Contact returns the account's contact id with its numbers; not_found for
// another account's or none.
func (s *Store) Contact(ctx context.Context, accountID, id int64) (domain.Contact, error) {
	c, err := scanContact(s.db.QueryRow(ctx, `SELECT `+contactColumns+` FROM contacts WHERE id = ? AND account_id = ?`, id, accountID))
	if err != nil {
		return c, notFound(err, "contact")
	}
	list := []domain.Contact{c}
	if err := s.contactNumbers(ctx, list); err != nil {
		return c, err
	}
	return list[0], nil
}

// ContactSearch selects a page of an account's contacts, newest first. With
// neither Words nor Digits, every contact; otherwise those whose name or
// company has, for every one of Words, a word that starts with it (Words
// folded as contacts.SearchText folds: lower case, no diacritics, letters
// and digits only), or, when Digits is set, one of whose numbers has Digits
// anywhere in it.
type ContactSearch struct {
	AccountID int64
	Words     []string
	Digits    string
	// Before, when not 0, keeps only contacts with a smaller id (the
	// cursor of the next page).
	Before int64
	Limit  int
}

// SearchContacts returns the page of contacts cs selects, with their
// numbers. It is the address book's one search, for its list's q= and for
// any other search that shows contacts.
func (s *Store) SearchContacts(ctx context.Context, cs ContactSearch) ([]domain.Contact, error) {
	var b strings.Builder
	b.WriteString(`SELECT ` + contactColumns + ` FROM contacts c WHERE account_id = ?`)
	args := []any{cs.AccountID}
	if cs.Before > 0 {
		b.WriteString(` AND id < ?`)
		args = append(args, cs.Before)
	}
	var alts []string
	if len(cs.Words) > 0 {
		all := make([]string, len(cs.Words))
		for i, w := range cs.Words {
			cond, a := s.contactTermMatch(cs.AccountID, "w"+w)
			all[i] = cond
			args = append(args, a...)
		}
		alts = append(alts, `(`+strings.Join(all, ` AND `)+`)`)
	}
	switch {
	case len(cs.Digits) >= words.MinNumberDigits:
		cond, a := s.contactTermMatch(cs.AccountID, "n"+cs.Digits)
		alts = append(alts, cond)
		args = append(args, a...)
	case cs.Digits != "":
		// Fewer digits than the index keeps: in nearly every number, so
		// the account's contacts are read in order until the page is full.
		alts = append(alts, `EXISTS (SELECT 1 FROM contact_numbers n WHERE n.contact_id = c.id AND n.number LIKE ?)`)
		args = append(args, "%"+likeSafe(cs.Digits)+"%")
	}
	if len(alts) > 0 {
		b.WriteString(` AND (` + strings.Join(alts, ` OR `) + `)`)
	}
	b.WriteString(` ORDER BY id DESC LIMIT ?`)
	args = append(args, cs.Limit)
	rows, err := s.db.QueryPlanned(ctx, b.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("store: contacts: %w", err)
	}
	defer rows.Close()
	out := []domain.Contact{}
	for rows.Next() {
		c, err := scanContact(rows)
		if err != nil {
			return nil, fmt.Errorf("store: contacts: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: contacts: %w", err)
	}
	return out, s.contactNumbers(ctx, out)
}

// likeSafe drops LIKE's wildcards and escape from a search term (the
// capability's terms are letters and digits; this keeps the store exact
// whatever it is handed).
func likeSafe(s string) string {
	return strings.NewReplacer("%", "", "_", "", `\`, "").Replace(s)
}

// contactNumbers loads the numbers of list's contacts, in one query.
func (s *Store) contactNumbers(ctx context.Context, list []domain.Contact) error {
	if len(list) == 0 {
		return nil
	}
	byID := make(map[int64]*domain.Contact, len(list))
	args := make([]any, len(list))
	for i := range list {
		list[i].Numbers = []domain.ContactNumber{}
		byID[list[i].ID] = &list[i]
		args[i] = list[i].ID
	}
	rows, err := s.db.Query(ctx, `SELECT contact_id, number, label FROM contact_numbers WHERE contact_id IN (`+placeholders(len(args))+`) ORDER BY contact_id, position`, args...)
	if err != nil {
		return fmt.Errorf("store: contact numbers: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var n domain.ContactNumber
		if err := rows.Scan(&id, &n.Number, &n.Label); err != nil {
			return fmt.Errorf("store: contact numbers: %w", err)
		}
		if c := byID[id]; c != nil {
			c.Numbers = append(c.Numbers, n)
		}
	}
	return rows.Err()
}

// ContactRefs returns, for each of numbers that a contact of the account
// holds, that contact's id and name: the names the inbox and the call
// history show beside numbers. One indexed read whatever the count.
func (s *Store) ContactRefs(ctx context.Context, accountID int64, numbers []string) (map[string]domain.ContactRef, error) {
	if len(numbers) == 0 {
		return nil, nil
	}
	args := make([]any, 0, len(numbers)+1)
	args = append(args, accountID)
	for _, n := range numbers {
		args = append(args, n)
	}
	rows, err := s.db.Query(ctx, `SELECT n.number, c.id, c.name FROM contact_numbers n JOIN contacts c ON c.id = n.contact_id
		WHERE n.account_id = ? AND n.number IN (`+placeholders(len(numbers))+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: contact names: %w", err)
	}
	defer rows.Close()
	out := map[string]domain.ContactRef{}
	for rows.Next() {
		var n string
		var ref domain.ContactRef
		if err := rows.Scan(&n, &ref.ID, &ref.Name); err != nil {
			return nil, fmt.Errorf("store: contact names: %w", err)
		}
		out[n] = ref
	}
	return out, rows.Err()
}
