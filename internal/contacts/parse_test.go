package contacts

import (
	"os"
	"reflect"
	"testing"

	"switchboard/internal/domain"
)

// The parsers read each sample (testdata: a Google Contacts export, an
// Outlook export, the plain columns, vCard 3.0 and 4.0) into the rows the
// import applies, with the line each starts on.
func TestParseSamples(t *testing.T) {
	n := func(number, label string) domain.ContactNumber {
		return domain.ContactNumber{Number: number, Label: label}
	}
	for _, tc := range []struct {
		file string
		want []row
	}{
		{"google.csv", []row{
			{line: 2, contact: domain.Contact{Name: "María José Pérez", Company: "Sunrise Clinic", Email: "maria@example.com",
				Notes: "Allergic to latex\nprefers mornings", Tags: []string{"Patients"},
				Numbers: []domain.ContactNumber{n("+1 415-555-2001", "mobile"), n("+1 415-555-2002", "mobile"), n("(415) 555-2003", "work")}}},
			{line: 4, contact: domain.Contact{Name: "Tom Baker", Numbers: []domain.ContactNumber{n("+44 20 7946 0101", "home")}}},
			{line: 5, contact: domain.Contact{Name: "No Phone Person", Email: "nophone@example.com"}},
			{line: 6, contact: domain.Contact{Name: "Bad Number", Numbers: []domain.ContactNumber{n("555-01", "mobile")}}},
		}},
		{"outlook.csv", []row{
			{line: 2, contact: domain.Contact{Name: "Sam O'Neill", Company: "O'Neill Roofing", Email: "sam@oneill.example", Notes: "Call before 9",
				Tags: []string{"Suppliers", "Roofing"}, Numbers: []domain.ContactNumber{n("(415) 555-5001", "home"), n("415-555-5002", "mobile")}}},
			{line: 3, contact: domain.Contact{Name: "Lee Wong", Numbers: []domain.ContactNumber{n("+1 415 555 5003", "mobile")}}},
			{line: 4, contact: domain.Contact{Company: "Acme Widgets", Numbers: []domain.ContactNumber{n("(415) 555-5004", "work")}}},
		}},
		{"plain.csv", []row{
			{line: 2, contact: domain.Contact{Name: "Ana Ruiz", Company: "Ruiz & Co", Email: "ana@ruiz.example", Notes: "Prefers texts, never calls",
				Numbers: []domain.ContactNumber{n("(415) 555-6001", "")}}},
			{line: 3, contact: domain.Contact{Name: "Bo Chen", Numbers: []domain.ContactNumber{n("+44 20 7946 0102", "")}}},
			{line: 4, problem: "empty row"},
			{line: 5, contact: domain.Contact{Name: "Carla Diaz", Numbers: []domain.ContactNumber{n("not a number", "")}}},
		}},
		{"v3.vcf", []row{
			{line: 1, contact: domain.Contact{Name: "Kenji Nakamura", Company: "Nakamura Dental", Email: "kenji@example.jp",
				Notes: "Line one\nLine two and a long line that is folded because vCard lines are short", Tags: []string{"Patients", "VIP"},
				Numbers: []domain.ContactNumber{n("+1 (415) 555-3001", "mobile"), n("415-555-3002", "work")}}},
			{line: 13, contact: domain.Contact{Name: "No Number", Email: "nonumber@example.com"}},
			{line: 18, problem: `vCard version "2.1" is not supported (3.0 and 4.0 are)`},
		}},
		{"v4.vcf", []row{
			{line: 1, contact: domain.Contact{Name: "Zoë Ångström", Company: "Ångström AB", Email: "zoe@example.se",
				Numbers: []domain.ContactNumber{n("+1-415-555-4001", "mobile"), n("+44-20-7946-0103", "home")}}},
			{line: 10, contact: domain.Contact{Name: "Dr. Chidi Okafor", Numbers: []domain.ContactNumber{n("+14155554002", "")}}},
		}},
	} {
		data, err := os.ReadFile("testdata/" + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		parse := parseCSV
		if tc.file[len(tc.file)-3:] == "vcf" {
			parse = parseVCard
		}
		got, err := parse(data)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.file, got, tc.want)
		}
	}
}

func TestParseRefusals(t *testing.T) {
	for _, tc := range []struct {
		data string
		vcf  bool
	}{
		{"", false},
		{"Name,Company\nAna,Acme\n", false},
	} {
		parse := parseCSV
		if tc.vcf {
			parse = parseVCard
		}
		if _, err := parse([]byte(tc.data)); err == nil {
			t.Errorf("%q: no error", tc.data)
		}
	}
}

func TestTerms(t *testing.T) {
	for q, want := range map[string]struct {
		words  []string
		digits string
	}{
		"José García":      {[]string{"jose", "garcia"}, ""},
		"+1 (415) 555":     {[]string{"1", "415", "555"}, "1415555"},
		"ZOË":              {[]string{"zoe"}, ""},
		"o'neill":          {[]string{"o", "neill"}, ""},
		"%_":               {nil, ""},
		"Ångström 1002":    {[]string{"angstrom", "1002"}, ""},
		"straße":           {[]string{"straße"}, ""},
		"\u00a0415-555 \t": {[]string{"415", "555"}, ""},
	} {
		words, digits := Terms(q)
		if !reflect.DeepEqual(words, want.words) || digits != want.digits {
			t.Errorf("Terms(%q) = %q, %q; want %q, %q", q, words, digits, want.words, want.digits)
		}
	}
}
