package contacts

import (
	"context"
	"encoding/csv"
	"io"
	"strconv"
	"strings"

	"github.com/emersion/go-vcard"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
)

// ContentType is the media type an export of f is written as.
func ContentType(f Format) string {
	if f == VCard {
		return "text/vcard; charset=utf-8"
	}
	return "text/csv; charset=utf-8"
}

// ParseFormat reads export's format parameter ("" is CSV).
func ParseFormat(s string) (Format, error) {
	switch Format(s) {
	case "", CSV:
		return CSV, nil
	case VCard:
		return VCard, nil
	}
	return "", invalid("format must be csv or vcard")
}

// Export writes every contact of p's account to w as f, newest first, page
// by page: a CSV file with a header row that Import reads back (Name,
// Company, Email, Notes, Tags, then Phone N - Label and Phone N - Value
// pairs), or vCard 4.0. Text a spreadsheet would run as a formula is
// written after an apostrophe.
func (s *Service) Export(ctx context.Context, p auth.Principal, f Format, w io.Writer) error {
	var cw *csv.Writer
	if f == CSV {
		cw = csv.NewWriter(w)
		header := []string{"Name", "Company", "Email", "Notes", "Tags"}
		for i := 1; i <= MaxNumbers; i++ {
			n := strconv.Itoa(i)
			header = append(header, "Phone "+n+" - Label", "Phone "+n+" - Value")
		}
		if err := cw.Write(header); err != nil {
			return err
		}
	}
	var before int64
	for {
		page, err := s.store.SearchContacts(ctx, searchAll(p.AccountID, before))
		if err != nil {
			return err
		}
		for _, c := range page {
			if f == CSV {
				err = cw.Write(csvRecord(c))
			} else {
				err = vcard.NewEncoder(w).Encode(vcardOf(c))
			}
			if err != nil {
				return err
			}
		}
		if cw != nil {
			cw.Flush()
			if err := cw.Error(); err != nil {
				return err
			}
		}
		if len(page) < ExportPageLength {
			return nil
		}
		before = page[len(page)-1].ID
	}
}

func csvRecord(c domain.Contact) []string {
	tags := make([]string, len(c.Tags))
	for i, t := range c.Tags {
		tags[i] = strings.ReplaceAll(t, ";", ",")
	}
	rec := []string{escapeCell(c.Name), escapeCell(c.Company), escapeCell(c.Email), escapeCell(c.Notes), escapeCell(strings.Join(tags, ";"))}
	for i := range MaxNumbers {
		if i < len(c.Numbers) {
			rec = append(rec, escapeCell(c.Numbers[i].Label), "+"+c.Numbers[i].Number)
		} else {
			rec = append(rec, "", "")
		}
	}
	return rec
}

func vcardOf(c domain.Contact) vcard.Card {
	card := vcard.Card{}
	card.SetValue(vcard.FieldVersion, "4.0")
	card.SetValue(vcard.FieldFormattedName, c.Name)
	if c.Company != "" {
		card.SetValue(vcard.FieldOrganization, c.Company)
	}
	if c.Email != "" {
		card.SetValue(vcard.FieldEmail, c.Email)
	}
	if c.Notes != "" {
		card.SetValue(vcard.FieldNote, c.Notes)
	}
	if len(c.Tags) > 0 {
		card.SetCategories(c.Tags)
	}
	for _, n := range c.Numbers {
		f := &vcard.Field{Value: "tel:+" + n.Number, Params: vcard.Params{"VALUE": {"uri"}}}
		if t := vcardType(n.Label); t != "" {
			f.Params.Add(vcard.ParamType, t)
		}
		card.Add(vcard.FieldTelephone, f)
	}
	return card
}
