package contacts

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"

	"switchboard/internal/domain"
)

// An import row: where it starts in the file (1-based line), the contact
// it describes (numbers as written) or why it cannot be read.
type row struct {
	line    int
	contact domain.Contact
	problem string
}

// The columns of a CSV header, by what they hold. A header is read by
// name, case and spacing ignored, so the plain columns (Name, Phone,
// Company, Email, Notes, Tags), Google Contacts' (Name or Given/Family
// Name, Phone N - Type/Label and - Value with " ::: " between numbers,
// Organization N - Name, E-mail N - Value, Notes, Group Membership or
// Labels) and Outlook's (First/Middle/Last Name, Company, Mobile/Business/
// Home/Other Phone, E-mail Address, Notes, Categories) all map onto them.
type columnKind int

const (
	colIgnored columnKind = iota
	colName
	colGiven
	colMiddle
	colFamily
	colCompany
	colEmail
	colNotes
	colTags      // separated by ";" (Outlook's Categories, the plain Tags)
	colGroups    // Google's: " ::: " between groups, system ones starred
	colPhone     // a number (or several, " ::: " between them), label fixed
	colPhoneType // the label of the numbers of the value column of its index
)

type column struct {
	kind  columnKind
	label string // colPhone: the label its numbers get
	index int    // Google's "Phone N": N, pairing a value with its type
}

var (
	googlePhone = regexp.MustCompile(`^phone (\d+) - (value|type|label)$`)
	googleOrg   = regexp.MustCompile(`^organization (\d+) - name$`)
	googleEmail = regexp.MustCompile(`^e-?mail (\d+) - value$`)
	// Outlook's phone columns and the label each gives its number.
	outlookPhones = map[string]string{
		"mobile phone": "mobile", "business phone": "work", "business phone 2": "work", "home phone": "home",
		"home phone 2": "home", "other phone": "other", "primary phone": "main", "company main phone": "main",
		"car phone": "car", "assistant's phone": "assistant", "pager": "pager", "business fax": "work fax", "home fax": "home fax",
	}
)

func classify(header string) column {
	h := strings.Join(strings.Fields(strings.ToLower(header)), " ")
	switch h {
	case "name", "full name", "display name":
		return column{kind: colName}
	case "given name", "first name":
		return column{kind: colGiven}
	case "additional name", "middle name":
		return column{kind: colMiddle}
	case "family name", "last name", "surname":
		return column{kind: colFamily}
	case "company", "organization", "organization name", "organisation":
		return column{kind: colCompany}
	case "email", "e-mail", "email address", "e-mail address":
		return column{kind: colEmail}
	case "notes", "note":
		return column{kind: colNotes}
	case "tags", "categories":
		return column{kind: colTags}
	case "group membership", "labels":
		return column{kind: colGroups}
	case "phone", "phone number", "number", "telephone", "mobile":
		label := ""
		if h == "mobile" {
			label = "mobile"
		}
		return column{kind: colPhone, label: label}
	}
	if label, ok := outlookPhones[h]; ok {
		return column{kind: colPhone, label: label}
	}
	if m := googlePhone.FindStringSubmatch(h); m != nil {
		n, _ := strconv.Atoi(m[1])
		if m[2] == "value" {
			return column{kind: colPhone, index: n}
		}
		return column{kind: colPhoneType, index: n}
	}
	if m := googleOrg.FindStringSubmatch(h); m != nil && m[1] == "1" {
		return column{kind: colCompany}
	}
	if m := googleEmail.FindStringSubmatch(h); m != nil && m[1] == "1" {
		return column{kind: colEmail}
	}
	return column{kind: colIgnored}
}

// errNoPhoneColumn refuses a CSV file none of whose columns holds numbers:
// the wrong file, or a header this importer does not know.
var errNoPhoneColumn = errors.New("the header row names no phone column (Phone, Mobile Phone, Phone 1 - Value, …)")

// parseCSV reads a CSV file with a header row into rows.
func parseCSV(data []byte) ([]row, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a spreadsheet's byte order mark
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	r.ReuseRecord = false
	header, err := r.Read()
	if err != nil {
		if err == io.EOF {
			return nil, errors.New("the file is empty: a header row is needed")
		}
		return nil, err
	}
	cols := make([]column, len(header))
	phones := false
	for i, h := range header {
		cols[i] = classify(h)
		phones = phones || cols[i].kind == colPhone
	}
	if !phones {
		return nil, errNoPhoneColumn
	}
	var rows []row
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return rows, nil
		}
		line, _ := r.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) && pe.Err != csv.ErrFieldCount {
				// A broken quote ends what can be read: the rest of the
				// file has no reliable rows.
				return append(rows, row{line: pe.StartLine, problem: "unreadable CSV: " + pe.Err.Error()}), nil
			}
			return nil, err
		}
		if len(rows) >= MaxImportRows {
			return nil, errTooManyRows
		}
		rows = append(rows, csvRow(line, cols, rec))
	}
}

// csvRow reads one record.
func csvRow(line int, cols []column, rec []string) row {
	var c domain.Contact
	var name, given, middle, family []string
	types := map[int]string{}
	for i, v := range rec {
		if i < len(cols) && cols[i].kind == colPhoneType {
			types[cols[i].index] = v
		}
	}
	blank := true
	for i, v := range rec {
		v = unescapeCell(strings.TrimSpace(v))
		if v == "" || i >= len(cols) {
			continue
		}
		blank = false
		col := cols[i]
		switch col.kind {
		case colName:
			name = append(name, v)
		case colGiven:
			given = append(given, v)
		case colMiddle:
			middle = append(middle, v)
		case colFamily:
			family = append(family, v)
		case colCompany:
			if c.Company == "" {
				c.Company = v
			}
		case colEmail:
			if c.Email == "" {
				c.Email = v
			}
		case colNotes:
			c.Notes = v
		case colTags:
			for _, t := range strings.Split(v, ";") {
				if t = strings.TrimSpace(t); t != "" {
					c.Tags = append(c.Tags, t)
				}
			}
		case colGroups:
			for _, g := range strings.Split(v, ":::") {
				g = strings.TrimSpace(g)
				// "* myContacts", "* starred": Google's own, not the person's.
				if g != "" && !strings.HasPrefix(g, "*") && g != "myContacts" {
					c.Tags = append(c.Tags, g)
				}
			}
		case colPhone:
			label := col.label
			if col.index > 0 {
				label = googleLabel(types[col.index])
			}
			for _, n := range strings.Split(v, ":::") {
				if n = strings.TrimSpace(n); n != "" {
					c.Numbers = append(c.Numbers, domain.ContactNumber{Number: n, Label: label})
				}
			}
		}
	}
	if blank {
		return row{line: line, problem: "empty row"}
	}
	c.Name = strings.Join(name, " ")
	if c.Name == "" {
		c.Name = strings.Join(append(append(given, middle...), family...), " ")
	}
	return row{line: line, contact: c}
}

// googleLabel is a Google "Phone N - Type" (or "- Label") as a label:
// Google's own types lower-cased ("* Mobile", the star marking the primary
// number, is "mobile"), a label the person wrote as written.
func googleLabel(t string) string {
	t = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(t), "*"))
	switch l := strings.ToLower(t); l {
	case "mobile", "home", "work", "main", "other", "pager", "home fax", "work fax", "google voice":
		return l
	}
	return t // the person's own label, as written
}

// formulaStart are the first characters a spreadsheet reads as a formula:
// exported text starting with one is written after an apostrophe (the
// spreadsheets' own escape), which an import takes off again.
const formulaStart = "=+-@\t\r"

func escapeCell(s string) string {
	if s != "" && strings.ContainsRune(formulaStart, rune(s[0])) {
		return "'" + s
	}
	return s
}

func unescapeCell(s string) string {
	if len(s) > 1 && s[0] == '\'' && strings.ContainsRune(formulaStart, rune(s[1])) {
		return s[1:]
	}
	return s
}
