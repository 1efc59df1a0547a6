package contacts

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/phone"
	"switchboard/internal/store"
)

// Limits of a contact and of an address book (docs/decisions.md,
// "Contacts"): enough for any real person and team, and a bound on what one
// credential can make the database hold.
const (
	MaxNameRunes     = 200
	MaxCompanyRunes  = 200
	MaxEmailBytes    = 254 // RFC 5321's longest path
	MaxNotesBytes    = 4000
	MaxTags          = 20
	MaxTagRunes      = 50
	MaxNumbers       = 10
	MaxLabelRunes    = 50
	MaxPerAccount    = 100_000
	DefaultLimit     = 50
	MaxLimit         = 200
	ExportPageLength = 1000
)

// Service is the address book.
type Service struct {
	store *store.Store
}

// New returns the address book over st.
func New(st *store.Store) *Service { return &Service{store: st} }

// Who may (docs/decisions.md, "Contacts"). The route table checks the
// scopes (messages:read to read, sms:write to write) and these role rules.

// CanRead is the role rule of reading contacts and of writing them: a
// person's role must grant phone numbers (any lines), as for the inbox
// whose numbers the contacts name. An API key is the account.
func CanRead(p auth.Principal) error {
	if p.IsUser() && p.Permissions.Numbers == domain.NumbersNone {
		return domain.Errorf(domain.PermissionDenied, "your role does not grant access to phone numbers, which contacts need")
	}
	return nil
}

// CanDelete is the role rule of deleting a contact: every line (numbers:
// all), as the people who run the whole account have; a front desk that
// works assigned lines keeps the book but cannot empty it.
func CanDelete(p auth.Principal) error {
	if p.IsUser() && p.Permissions.Numbers != domain.NumbersAll {
		return domain.Errorf(domain.PermissionDenied, "deleting contacts needs a role with every phone number (numbers:all)")
	}
	return nil
}

// MayRead reports whether p may see contacts (scope and role), for the
// answers that show a contact's name beside a number.
func MayRead(p auth.Principal) bool { return p.Has(auth.MessagesRead) && CanRead(p) == nil }

// Input is a contact as a request gives it: nil leaves a field as it is
// (a PATCH); a create needs Name and Numbers.
type Input struct {
	Name    *string
	Company *string
	Email   *string
	Notes   *string
	Tags    *[]string
	Numbers *[]domain.ContactNumber
}

func invalid(format string, args ...any) error { return domain.Errorf(domain.Invalid, format, args...) }

// apply writes in's fields over c, normalized and checked.
func apply(c *domain.Contact, in Input) error {
	if in.Name != nil {
		c.Name = strings.TrimSpace(*in.Name)
	}
	if in.Company != nil {
		c.Company = strings.TrimSpace(*in.Company)
	}
	if in.Email != nil {
		c.Email = strings.TrimSpace(*in.Email)
	}
	if in.Notes != nil {
		c.Notes = *in.Notes
	}
	if in.Tags != nil {
		c.Tags = *in.Tags
	}
	if in.Numbers != nil {
		c.Numbers = *in.Numbers
	}
	return validate(c)
}

// validate checks c, trims and de-duplicates its tags, and normalizes its
// numbers as the send path does (phone.Normalize, then phone.Dialable).
func validate(c *domain.Contact) error {
	switch n := utf8.RuneCountInString(c.Name); {
	case n == 0:
		return invalid("name is required")
	case n > MaxNameRunes:
		return invalid("name is %d characters; at most %d are allowed", n, MaxNameRunes)
	}
	if err := text("name", c.Name); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(c.Company); n > MaxCompanyRunes {
		return invalid("company is %d characters; at most %d are allowed", n, MaxCompanyRunes)
	}
	if err := text("company", c.Company); err != nil {
		return err
	}
	if c.Email != "" {
		at := strings.LastIndexByte(c.Email, '@')
		if len(c.Email) > MaxEmailBytes || at < 1 || at == len(c.Email)-1 || strings.ContainsAny(c.Email, " \t\r\n<>,;\"") {
			return invalid("email %q is not an email address", c.Email)
		}
	}
	if len(c.Notes) > MaxNotesBytes {
		return invalid("notes are %d bytes; at most %d are allowed", len(c.Notes), MaxNotesBytes)
	}
	if !utf8.ValidString(c.Notes) || strings.ContainsRune(c.Notes, 0) {
		return invalid("notes must be UTF-8 text")
	}
	tags := make([]string, 0, len(c.Tags))
	for _, t := range c.Tags {
		t = strings.TrimSpace(t)
		switch n := utf8.RuneCountInString(t); {
		case n == 0:
			return invalid("tags: a tag is empty")
		case n > MaxTagRunes:
			return invalid("tags: %q is %d characters; at most %d are allowed", t, n, MaxTagRunes)
		}
		if err := text("tags", t); err != nil {
			return err
		}
		if !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	if len(tags) > MaxTags {
		return invalid("tags has %d tags; at most %d are allowed", len(tags), MaxTags)
	}
	c.Tags = tags
	switch n := len(c.Numbers); {
	case n == 0:
		return invalid("numbers: a contact needs at least one number")
	case n > MaxNumbers:
		return invalid("numbers has %d numbers; at most %d are allowed", n, MaxNumbers)
	}
	seen := map[string]bool{}
	numbers := make([]domain.ContactNumber, 0, len(c.Numbers))
	for i, n := range c.Numbers {
		digits, err := Normalize(n.Number)
		if err != nil {
			return invalid("numbers[%d].number %q: %v", i, n.Number, err)
		}
		label := strings.TrimSpace(n.Label)
		if l := utf8.RuneCountInString(label); l > MaxLabelRunes {
			return invalid("numbers[%d].label is %d characters; at most %d are allowed", i, l, MaxLabelRunes)
		}
		if err := text(fmt.Sprintf("numbers[%d].label", i), label); err != nil {
			return err
		}
		if seen[digits] {
			continue // the same number written twice is one number
		}
		seen[digits] = true
		numbers = append(numbers, domain.ContactNumber{Number: digits, Label: label})
	}
	c.Numbers = numbers
	c.Search = SearchText(c.Name, c.Company)
	return nil
}

// text refuses what no field of a contact may hold: invalid UTF-8 and
// control characters (a name is shown in terminals and lists).
func text(field, s string) error {
	if !utf8.ValidString(s) {
		return invalid("%s must be UTF-8 text", field)
	}
	for _, r := range s {
		if unicode.IsControl(r) { // C0, DEL and C1
			return invalid("%s must not hold control characters", field)
		}
	}
	return nil
}

// Normalize is a contact's number as the send path takes a recipient: the
// formatting stripped (a 10-digit number without + is North American) and
// dialable by libphonenumber's metadata.
func Normalize(number string) (string, error) {
	n, ok := phone.Normalize(number)
	if !ok {
		return "", phone.ErrNotNumber
	}
	if !phone.Dialable(n) {
		return "", phone.ErrNotDialable
	}
	return n, nil
}

// conflict is the 409 of a number another contact holds.
func conflict(number string, holder domain.ContactRef) error {
	return domain.Errorf(domain.Conflict, "number %s already belongs to contact %d (%s); one contact per number", number, holder.ID, holder.Name)
}

// free checks that no contact but self (0: none) holds c's numbers.
func free(ct *store.ContactTx, c *domain.Contact, self int64) error {
	numbers := make([]string, len(c.Numbers))
	for i, n := range c.Numbers {
		numbers[i] = n.Number
	}
	held, err := ct.Holders(numbers)
	if err != nil {
		return err
	}
	for _, n := range numbers {
		if h, ok := held[n]; ok && h.ID != self {
			return conflict(n, h)
		}
	}
	return nil
}

// event builds the AccountContacts event of what happened to c.
func event(p auth.Principal, what string, c domain.Contact) (domain.Event, error) {
	var by *int64
	if p.IsUser() {
		id := p.UserID
		by = &id
	}
	return domain.NewEvent(domain.EventAccountContacts, domain.ContactEvent{Event: what, By: by, Contact: c})
}

func emit(ct *store.ContactTx, p auth.Principal, what string, c domain.Contact) error {
	e, err := event(p, what, c)
	if err != nil {
		return err
	}
	return ct.Event(e)
}

// errFull is the refusal of a contact beyond MaxPerAccount.
var errFull = domain.Errorf(domain.Conflict, "the account has %d contacts, the most allowed; delete some first", MaxPerAccount)

// Create adds a contact to p's account.
func (s *Service) Create(ctx context.Context, p auth.Principal, in Input) (domain.Contact, error) {
	if in.Name == nil {
		return domain.Contact{}, invalid("name is required")
	}
	if in.Numbers == nil {
		return domain.Contact{}, invalid("numbers: a contact needs at least one number")
	}
	var c domain.Contact
	if err := apply(&c, in); err != nil {
		return c, err
	}
	valid := c
	err := s.store.WriteContacts(ctx, p.AccountID, func(ct *store.ContactTx) error {
		c = valid
		n, err := ct.Count()
		if err != nil {
			return err
		}
		if n >= MaxPerAccount {
			return errFull
		}
		if err := free(ct, &c, 0); err != nil {
			return err
		}
		if err := ct.Create(&c); err != nil {
			return err
		}
		return emit(ct, p, domain.ContactCreated, c)
	})
	return c, err
}

// Contact returns p's account's contact id.
func (s *Service) Contact(ctx context.Context, p auth.Principal, id int64) (domain.Contact, error) {
	return s.store.Contact(ctx, p.AccountID, id)
}

// Update changes the fields in gives of p's account's contact id.
func (s *Service) Update(ctx context.Context, p auth.Principal, id int64, in Input) (domain.Contact, error) {
	var c domain.Contact
	err := s.store.WriteContacts(ctx, p.AccountID, func(ct *store.ContactTx) error {
		var err error
		if c, err = ct.Get(id); err != nil {
			return err
		}
		if err := apply(&c, in); err != nil {
			return err
		}
		if err := free(ct, &c, c.ID); err != nil {
			return err
		}
		if err := ct.Update(&c); err != nil {
			return err
		}
		return emit(ct, p, domain.ContactUpdated, c)
	})
	return c, err
}

// Delete removes p's account's contact id.
func (s *Service) Delete(ctx context.Context, p auth.Principal, id int64) error {
	return s.store.WriteContacts(ctx, p.AccountID, func(ct *store.ContactTx) error {
		c, err := ct.Get(id)
		if err != nil {
			return err
		}
		if err := ct.Delete(id); err != nil {
			return err
		}
		return emit(ct, p, domain.ContactDeleted, c)
	})
}

// ListParams select a page of GET /contacts.
type ListParams struct {
	Q      string
	Before int64
	Limit  int
}

// List returns a page of p's account's contacts, newest first, matching
// lp.Q as Terms reads it, and the cursor of the next page (0: none).
func (s *Service) List(ctx context.Context, p auth.Principal, lp ListParams) ([]domain.Contact, int64, error) {
	if utf8.RuneCountInString(lp.Q) > MaxNameRunes {
		return nil, 0, invalid("q is longer than %d characters", MaxNameRunes)
	}
	page, err := s.Search(ctx, p.AccountID, lp.Q, lp.Before, lp.Limit+1)
	if err != nil {
		return nil, 0, err
	}
	if len(page) > lp.Limit {
		page = page[:lp.Limit]
		return page, page[len(page)-1].ID, nil
	}
	return page, 0, nil
}

// Search is the address book's one search: q as Terms reads it, over the
// account's contacts with an id below before (0: all), newest first, at
// most limit. Another capability that shows contacts (the messages search)
// uses it; the caller checks that its credential may read them (MayRead).
func (s *Service) Search(ctx context.Context, accountID int64, q string, before int64, limit int) ([]domain.Contact, error) {
	words, digits := Terms(q)
	if strings.TrimSpace(q) != "" && len(words) == 0 && digits == "" {
		return []domain.Contact{}, nil // only punctuation: nothing can match
	}
	return s.store.SearchContacts(ctx, store.ContactSearch{AccountID: accountID, Words: words, Digits: digits, Before: before, Limit: limit})
}

// Names returns the contacts that hold numbers in p's account, for the
// answers that show a name beside a number; none when p may not read
// contacts.
func (s *Service) Names(ctx context.Context, p auth.Principal, numbers []string) (map[string]domain.ContactRef, error) {
	return Names(ctx, s.store, p, numbers)
}

// Names is Service.Names for a capability that holds the store itself
// (the inbox, the call history).
func Names(ctx context.Context, st *store.Store, p auth.Principal, numbers []string) (map[string]domain.ContactRef, error) {
	if !MayRead(p) || len(numbers) == 0 {
		return nil, nil
	}
	return st.ContactRefs(ctx, p.AccountID, numbers)
}

// IsConflict reports whether err is a conflict of a held number.
func IsConflict(err error) bool {
	var e *domain.Error
	return errors.As(err, &e) && e.Code == domain.Conflict
}

func searchAll(accountID, before int64) store.ContactSearch {
	return store.ContactSearch{AccountID: accountID, Before: before, Limit: ExportPageLength}
}
