package contacts

import (
	"bufio"
	"bytes"
	"strings"

	"github.com/emersion/go-vcard"

	"switchboard/internal/domain"
)

// parseVCard reads a file of vCards (3.0 or 4.0; github.com/emersion/go-vcard
// decodes each). The file is first cut at its BEGIN:VCARD and END:VCARD
// lines, so that each card has the line it starts on for the report and a
// broken card costs only itself.
func parseVCard(data []byte) ([]row, error) {
	var rows []row
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), len(data)+1)
	var card bytes.Buffer
	start, line := 0, 0
	for sc.Scan() {
		line++
		text := sc.Text()
		key := strings.ToUpper(strings.TrimSpace(text))
		switch {
		case key == "BEGIN:VCARD":
			if start != 0 {
				rows = append(rows, row{line: start, problem: "a vCard without END:VCARD"})
			}
			if len(rows) >= MaxImportRows {
				return nil, errTooManyRows
			}
			start = line
			card.Reset()
			card.WriteString(text + "\r\n")
		case start == 0:
			if key != "" {
				rows = append(rows, row{line: line, problem: "text outside a vCard (BEGIN:VCARD … END:VCARD)"})
				// One report line for the stray text, not one per line.
				for sc.Scan() {
					line++
					if strings.ToUpper(strings.TrimSpace(sc.Text())) == "BEGIN:VCARD" {
						start = line
						card.Reset()
						card.WriteString(sc.Text() + "\r\n")
						break
					}
				}
			}
		case key == "END:VCARD":
			card.WriteString(text + "\r\n")
			rows = append(rows, vcardRow(start, card.Bytes()))
			start = 0
		default:
			card.WriteString(text + "\r\n")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if start != 0 {
		rows = append(rows, row{line: start, problem: "a vCard without END:VCARD"})
	}
	return rows, nil
}

func vcardRow(line int, data []byte) row {
	card, err := vcard.NewDecoder(bytes.NewReader(data)).Decode()
	if err != nil {
		return row{line: line, problem: "unreadable vCard: " + strings.TrimPrefix(err.Error(), "vcard: ")}
	}
	switch v := card.Value(vcard.FieldVersion); v {
	case "3.0", "4.0":
	default:
		return row{line: line, problem: "vCard version " + quoteOrNone(v) + " is not supported (3.0 and 4.0 are)"}
	}
	var c domain.Contact
	c.Name = strings.TrimSpace(card.PreferredValue(vcard.FieldFormattedName))
	if n := card.Name(); c.Name == "" && n != nil {
		c.Name = strings.Join(strings.Fields(strings.Join([]string{n.HonorificPrefix, n.GivenName, n.AdditionalName, n.FamilyName, n.HonorificSuffix}, " ")), " ")
	}
	if org := card.PreferredValue(vcard.FieldOrganization); org != "" {
		c.Company = strings.TrimSpace(strings.Split(org, ";")[0]) // ORG's first component is the organization
	}
	c.Email = strings.TrimSpace(card.PreferredValue(vcard.FieldEmail))
	c.Notes = card.Value(vcard.FieldNote)
	for _, t := range card.Categories() {
		if t = strings.TrimSpace(t); t != "" {
			c.Tags = append(c.Tags, t)
		}
	}
	for _, f := range card[vcard.FieldTelephone] {
		n := strings.TrimSpace(f.Value)
		// vCard 4.0 writes a number as a tel: URI (RFC 3966), with any
		// parameters after a ';'.
		if len(n) > 4 && strings.EqualFold(n[:4], "tel:") {
			n, _, _ = strings.Cut(n[4:], ";")
		}
		if n != "" {
			c.Numbers = append(c.Numbers, domain.ContactNumber{Number: n, Label: vcardLabel(f.Params.Types())})
		}
	}
	return row{line: line, contact: c}
}

func quoteOrNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return `"` + v + `"`
}

// vcardLabel is a TEL's TYPE parameters as a label: the first that says
// what the number is ("cell" is "mobile"), not how it is used ("voice",
// "pref").
func vcardLabel(types []string) string {
	for _, t := range types {
		switch t = strings.ToLower(strings.TrimSpace(t)); t {
		case "", "voice", "pref", "internet", "text":
		case "cell":
			return "mobile"
		default:
			return t
		}
	}
	return ""
}

// vcardType is a label as a TEL's TYPE: "mobile" is "cell"; a label that is
// no single word is left out (the number is kept).
func vcardType(label string) string {
	l := strings.ToLower(label)
	if l == "mobile" {
		return "cell"
	}
	for _, r := range l {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return ""
		}
	}
	return l
}
