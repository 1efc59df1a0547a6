package phone

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
		ok   bool
	}{
		// US formatting variants all collapse to the same 11 digits, which
		// is what makes de-duplication after normalization work.
		{"bare 10 digits", "4155550123", "14155550123", true},
		{"parens and dash", "(415) 555-0123", "14155550123", true},
		{"dots", "415.555.0123", "14155550123", true},
		{"spaces", "415 555 0123", "14155550123", true},
		{"slash", "415/555-0123", "14155550123", true},
		{"leading 1 with dashes", "1-415-555-0123", "14155550123", true},
		{"plus 1", "+1 415 555 0123", "14155550123", true},
		{"plus 1 packed", "+14155550123", "14155550123", true},
		{"plus inside parens", "(+1) 415-555-0123", "14155550123", true},
		{"surrounding spaces", "  4155550123  ", "14155550123", true},
		{"no-break space", "415\u00a0555\u00a00123", "14155550123", true},
		{"narrow no-break space", "415\u202f555\u202f0123", "14155550123", true},
		{"ideographic space", "415\u3000555\u30000123", "14155550123", true},

		// Other lengths are taken to carry their country code already.
		{"UK", "+44 20 7946 0958", "442079460958", true},
		{"UK no plus", "44 20 7946 0958", "442079460958", true},
		{"UK trunk zero kept as given", "+44 (0)20 7946 0958", "4402079460958", true},
		{"Germany", "+49 30 12345678", "493012345678", true},
		{"India mobile", "+91 98765 43210", "919876543210", true},
		{"00 prefix kept as given", "0044 20 7946 0958", "00442079460958", true},
		{"11 digits", "14155550123", "14155550123", true},
		{"7 digits", "555-0123", "5550123", true},
		{"one digit", "5", "5", true},
		{"very long", "1234567890123456789", "1234567890123456789", true},
		// The 10-digit rule is applied to the digits regardless of a '+'.
		{"plus with 10 digits is international, as given", "+4930123456", "4930123456", true},

		// Not phone numbers.
		{"empty", "", "", false},
		{"only spaces", "   ", "", false},
		{"only plus", "+", "", false},
		{"only punctuation", "()-./", "", false},
		{"vanity letters", "1-800-FLOWERS", "", false},
		{"trailing letters", "415-555-CALL", "", false},
		{"extension", "415-555-0123 x12", "", false},
		{"ext word", "415-555-0123 ext. 12", "", false},
		{"hash", "#4155550123", "", false},
		{"star code", "*67 415 555 0123", "", false},
		{"comma", "415,555,0123", "", false},
		{"underscore", "415_555_0123", "", false},
		{"en dash not formatting", "415–555–0123", "", false},
		{"tab", "415\t555\t0123", "", false},
		{"newline", "4155550123\n", "", false},
		{"double plus", "++14155550123", "", false},
		{"plus after digits", "1+4155550123", "", false},
		{"plus twice", "+1 +415 555 0123", "", false},
		{"fullwidth digits", "４１５５５５０１２３", "", false},
		{"Arabic-Indic digits", "٤١٥٥٥٥٠١٢٣", "", false},
		{"invalid utf8", "415555\xff0123", "", false},
		{"NUL", "415555\x000123", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Normalize(tt.in)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Normalize(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestDialable pins what libphonenumber's metadata says about numbers people
// reach for as examples, so a metadata upgrade that changes them is noticed.
func TestDialable(t *testing.T) {
	tests := []struct {
		digits string
		want   bool
		why    string
	}{
		// NANP: the fictional 555-01xx block is valid in real area codes.
		{"14155550100", true, "San Francisco 555-0100"},
		{"14155550123", true, "San Francisco 555-0123"},
		{"14155550199", true, "San Francisco 555-0199"},
		{"14155551234", true, "San Francisco 555-1234"},
		{"12125550100", true, "New York 555-0100"},
		{"12125551212", true, "New York directory assistance"},
		{"12025550100", true, "Washington DC 555-0100"},
		{"12025550199", true, "Washington DC 555-0199"},
		{"16175550100", true, "Boston"},
		{"13105550100", true, "Los Angeles"},
		{"14165550100", true, "Toronto, Canada shares +1"},
		{"18005550100", true, "toll free"},
		{"15005550006", true, "area code 500 (personal communications)"},
		{"12345678901", true, "234 is a real Ohio area code"},
		{"15551234567", false, "555 is not an area code"},
		{"15555550100", false, "555 is not an area code"},
		{"12223334444", false, "222 is unassigned"},
		{"19995550100", false, "999 is unassigned"},
		{"11234567890", false, "area codes cannot start with 1"},
		{"14151234567", false, "exchanges cannot start with 1"},
		{"14150123456", false, "exchanges cannot start with 0"},
		{"18001234567", false, "exchanges cannot start with 1"},
		{"10000000000", false, "all zeros"},

		// International.
		{"442079460958", true, "UK London (Ofcom drama range 020 7946 0xxx)"},
		{"447911123456", true, "UK mobile"},
		{"447700900123", false, "UK Ofcom drama mobile range is not valid"},
		{"4402079460958", false, "UK with trunk zero left in (libphonenumber alone would accept it)"},
		{"390612345678", true, "Italy Rome keeps its leading zero"},
		{"393123456789", true, "Italy mobile"},
		{"4930123456", true, "Germany Berlin, short subscriber number"},
		{"493012345678", true, "Germany Berlin"},
		{"4915123456789", true, "Germany mobile"},
		{"919876543210", true, "India mobile"},
		{"917012345678", true, "India mobile"},
		{"91987654321", false, "India mobile one digit short"},
		{"61412345678", true, "Australia mobile"},
		{"33612345678", true, "France mobile"},
		{"5511987654321", true, "Brazil São Paulo mobile"},
		{"00442079460958", false, "00 international prefix is not a country code"},

		// Shape checks that never reach the library.
		{"", false, "empty"},
		{"5550123", false, "7 digits, not a number in +55"},
		{"6837012", true, "Niue landline: 7 digits"},
		{"6907290", true, "Tokelau mobile: 7 digits"},
		{"12345", false, "5 digits, shorter than any number"},
		{"1415555", false, "too short"},
		{"1415555010", false, "10 digits, too short for +1"},
		{"123456789012345", false, "15 digits but invalid"},
		{"1234567890123456", false, "16 digits, longer than E.164 allows"},
		{"+14155550123", false, "not normalized: plus"},
		{"1415555012a", false, "not normalized: letter"},
		{"1 4155550123", false, "not normalized: space"},
	}
	for _, tt := range tests {
		t.Run(tt.digits+" "+tt.why, func(t *testing.T) {
			if got := Dialable(tt.digits); got != tt.want {
				t.Errorf("Dialable(%q) = %v, want %v (%s)", tt.digits, got, tt.want, tt.why)
			}
		})
	}
}

func TestNormalizeThenDialable(t *testing.T) {
	tests := []struct {
		in       string
		dialable bool
	}{
		{"(415) 555-0123", true},
		{"+1 (212) 555-0100", true},
		{"202.555.0100", true},
		{"555-123-4567", false},
		{"+44 20 7946 0958", true},
		{"+44 (0)20 7946 0958", false},
		{"+49 151 23456789", true},
		{"+91 98765 43210", true},
		{"555-0123", false},
		{"+1 415 555 01234", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			n, ok := Normalize(tt.in)
			if !ok {
				t.Fatalf("Normalize(%q) rejected a formatted number", tt.in)
			}
			if got := Dialable(n); got != tt.dialable {
				t.Errorf("Dialable(%q) (from %q) = %v, want %v", n, tt.in, got, tt.dialable)
			}
		})
	}
}

// TestDialableConcurrent exercises the library's shared caches from many
// goroutines, since handlers call Dialable concurrently (run with -race).
func TestDialableConcurrent(t *testing.T) {
	nums := []string{"14155550123", "442079460958", "919876543210", "15551234567", "4915123456789"}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				n := nums[(g+i)%len(nums)]
				if got, want := Dialable(n), n != "15551234567"; got != want {
					t.Errorf("Dialable(%q) = %v, want %v", n, got, want)
				}
			}
		})
	}
	wg.Wait()
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"", "+1 (415) 555-0123", "4155550123", "+44 20 7946 0958", "1-800-FLOWERS", "++1", "\u00a0", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := Normalize(s)
		if !ok {
			if got != "" {
				t.Fatalf("Normalize(%q) = %q, false; want empty on failure", s, got)
			}
			return
		}
		if got == "" || strings.Trim(got, "0123456789") != "" {
			t.Fatalf("Normalize(%q) = %q: want non-empty ASCII digits", s, got)
		}
		if len(got) == 10 {
			t.Fatalf("Normalize(%q) = %q: 10-digit results must gain a country code", s, got)
		}
		// Normalizing twice must not change the number, or de-duplication
		// would depend on how often a caller normalized.
		if again, ok := Normalize(got); !ok || again != got {
			t.Fatalf("Normalize(%q) = %q, %v; want idempotent %q", got, again, ok, got)
		}
		_ = Dialable(got) // must not panic on anything Normalize produces
	})
}

func BenchmarkDialable(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Dialable("14155550123")
	}
}

func TestDigits(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"14155550100", "14155550100", true},
		{"+1 (415) 555-0100", "14155550100", true},
		{"1.415.555.0100", "14155550100", true},
		// Unlike Normalize, never a country code added: a sending number is
		// given in full.
		{"4155550100", "4155550100", true},
		{"(415) 555-0100", "4155550100", true},
		{"+44 20 7946 0123", "442079460123", true},
		{"", "", false},
		{"+", "", false},
		{"415 555 O1OO", "", false},
		{"1+4155550100", "", false},
		{"++14155550100", "", false},
		{"14155550100 ext 2", "", false},
	}
	for _, tt := range tests {
		got, ok := Digits(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Digits(%q) = %q, %t; want %q, %t", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr error
	}{
		{"+1 415 555 0100", "14155550100", nil},
		{"(415) 555-0100", "14155550100", nil},
		{"+44 20 7946 0958", "442079460958", nil},
		{"123", "", ErrNotDialable},
		{"+1 415 555 01000000", "", ErrNotDialable}, // too many digits for the US
		{"1234567890123456", "", ErrNotDialable},    // 16 digits: over E.164's 15
		{"+44 0 20 7946 0958", "", ErrNotDialable},  // valid only after dropping the trunk 0
		{"call me", "", ErrNotNumber},
		{"", "", ErrNotNumber},
		{"415-CALL-NOW", "", ErrNotNumber},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if got != tt.want || !errors.Is(err, tt.wantErr) {
			t.Errorf("Parse(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
