package contacts

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"slices"
	"strings"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// Import limits (docs/decisions.md, "Contacts"): a body of 16 MiB holds
// 10,000 contacts of Google's widest CSV export with room to spare, and
// 20,000 rows bound the one transaction an import is.
const (
	MaxImportBytes = 16 << 20
	MaxImportRows  = 20_000
)

var errTooManyRows = fmt.Errorf("the file has more than %d contacts; split it", MaxImportRows)

// Format is a file format of import and export.
type Format string

// The formats.
const (
	CSV   Format = "csv"
	VCard Format = "vcard"
)

// FormatOf is the format a Content-Type names: text/csv (or a
// spreadsheet's application/vnd.ms-excel, as Windows labels .csv files),
// text/vcard (or text/x-vcard, text/directory).
func FormatOf(contentType string) (Format, error) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err == nil {
		switch mt {
		case "text/csv", "application/csv", "application/vnd.ms-excel":
			return CSV, nil
		case "text/vcard", "text/x-vcard", "text/directory":
			return VCard, nil
		}
	}
	return "", invalid("Content-Type must be text/csv or text/vcard (got %q)", contentType)
}

// Report is what an import did: the contacts it created, those it updated
// (a row whose numbers a contact already held) and the rows it skipped.
type Report struct {
	Created int       `json:"created"`
	Updated int       `json:"updated"`
	Skipped []Skipped `json:"skipped"`
}

// Skipped is a row an import left out, and why.
type Skipped struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// Progress hears how many of an import's rows are done, out of how many.
type Progress func(done, total int)

// Import reads data (format f) and applies it to p's account in one
// transaction: each row creates a contact, updates the one contact that
// already holds its numbers (the row's fields replace those it gives, its
// tags and numbers are added), or is skipped with the reason. A row is
// decided in full before anything of it is written, so none is half
// applied; a failure of the database applies nothing at all.
func (s *Service) Import(ctx context.Context, p auth.Principal, f Format, data []byte, progress Progress) (Report, error) {
	if len(data) > MaxImportBytes {
		return Report{}, &domain.Error{Code: domain.Invalid, Kind: domain.TooLarge, Message: fmt.Sprintf("the file is over %d bytes; split it", MaxImportBytes)}
	}
	var rows []row
	var err error
	switch f {
	case CSV:
		rows, err = parseCSV(data)
	case VCard:
		rows, err = parseVCard(data)
	default:
		return Report{}, invalid("unknown format %q", f)
	}
	if err != nil {
		return Report{}, invalid("%s: %v", f, err)
	}
	var rep Report
	err = s.store.WriteContacts(ctx, p.AccountID, func(ct *store.ContactTx) error {
		rep = Report{Skipped: []Skipped{}}
		count, err := ct.Count()
		if err != nil {
			return err
		}
		for i, r := range rows {
			if progress != nil && i%500 == 0 {
				progress(i, len(rows))
			}
			reason, err := s.importRow(ct, p, r, &count, &rep)
			if err != nil {
				return err
			}
			if reason != "" {
				rep.Skipped = append(rep.Skipped, Skipped{Line: r.line, Reason: reason})
			}
		}
		return nil
	})
	if err == nil && progress != nil {
		progress(len(rows), len(rows))
	}
	return rep, err
}

// importRow applies r, or returns why it is skipped; an error is the
// database's, and ends the import.
func (s *Service) importRow(ct *store.ContactTx, p auth.Principal, r row, count *int, rep *Report) (string, error) {
	if r.problem != "" {
		return r.problem, nil
	}
	c := r.contact
	named := c.Name != ""
	if !named {
		// A company's entry: named by the company if it creates a contact;
		// an update keeps the contact's name.
		c.Name = c.Company
	}
	if len(c.Numbers) == 0 {
		return "no phone number", nil
	}
	if err := validate(&c); err != nil {
		return reason(err), nil
	}
	numbers := make([]string, len(c.Numbers))
	for i, n := range c.Numbers {
		numbers[i] = n.Number
	}
	held, err := ct.Holders(numbers)
	if err != nil {
		return "", err
	}
	var holders []domain.ContactRef
	for _, n := range numbers {
		if h, ok := held[n]; ok && !slices.Contains(holders, h) {
			holders = append(holders, h)
		}
	}
	switch len(holders) {
	case 0:
		if *count >= MaxPerAccount {
			return fmt.Sprintf("the account has %d contacts, the most allowed", MaxPerAccount), nil
		}
		if err := ct.Create(&c); err != nil {
			return "", err
		}
		*count++
		rep.Created++
		return "", emit(ct, p, domain.ContactCreated, c)
	case 1:
		cur, err := ct.Get(holders[0].ID)
		if err != nil {
			return "", err
		}
		in := c
		if !named {
			in.Name = ""
		}
		merged := merge(cur, in)
		if err := validate(&merged); err != nil {
			return fmt.Sprintf("would update contact %d (%s): %s", cur.ID, cur.Name, reason(err)), nil
		}
		if err := ct.Update(&merged); err != nil {
			return "", err
		}
		rep.Updated++
		return "", emit(ct, p, domain.ContactUpdated, merged)
	}
	names := make([]string, len(holders))
	for i, h := range holders {
		names[i] = fmt.Sprintf("%d (%s)", h.ID, h.Name)
	}
	return "its numbers belong to different contacts: " + strings.Join(names, ", "), nil
}

// merge is cur updated by an imported row: the row's fields replace those
// it gives, its tags and numbers are added (a label it gives replaces the
// number's).
func merge(cur, in domain.Contact) domain.Contact {
	out := cur
	out.Tags = slices.Clone(cur.Tags)
	out.Numbers = slices.Clone(cur.Numbers)
	for _, f := range []struct{ dst, src *string }{{&out.Name, &in.Name}, {&out.Company, &in.Company}, {&out.Email, &in.Email}, {&out.Notes, &in.Notes}} {
		if *f.src != "" {
			*f.dst = *f.src
		}
	}
	for _, t := range in.Tags {
		if !slices.Contains(out.Tags, t) {
			out.Tags = append(out.Tags, t)
		}
	}
	for _, n := range in.Numbers {
		i := slices.IndexFunc(out.Numbers, func(o domain.ContactNumber) bool { return o.Number == n.Number })
		switch {
		case i < 0:
			out.Numbers = append(out.Numbers, n)
		case n.Label != "":
			out.Numbers[i].Label = n.Label
		}
	}
	return out
}

// reason is a validation error's message, for a report line.
func reason(err error) string {
	var e *domain.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}
