package contacts

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// fold lowers s and drops its diacritics ("José" → "jose"): names match
// however they are typed. Anything but letters and digits separates words.
func fold(s string) []string {
	var words []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			words = append(words, b.String())
			b.Reset()
		}
	}
	for _, r := range norm.NFD.String(s) {
		switch {
		case unicode.Is(unicode.Mn, r):
			// a combining mark: the diacritic of the letter before it
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
		default:
			flush()
		}
	}
	flush()
	return words
}

// SearchText is what the store matches a query's words against: the
// folded words of the name and company, each after a space.
func SearchText(name, company string) string {
	var b strings.Builder
	for _, w := range append(fold(name), fold(company)...) {
		b.WriteByte(' ')
		b.WriteString(w)
	}
	return b.String()
}

// Terms turns a query as a person types it into the store's search: every
// word must start a word of the name or company (case and diacritics
// ignored), or, when the query is a number as typed ("+1 (415) 555",
// "0100"), its digits may appear anywhere in one of the contact's numbers.
func Terms(q string) (words []string, digits string) {
	words = fold(q)
	digits = numberDigits(q)
	return words, digits
}

// numberDigits is q's digits when q is written as a number is (digits and
// the formatting phone.Normalize strips), "" otherwise.
func numberDigits(q string) string {
	var b strings.Builder
	for _, r := range q {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '+' || r == '-' || r == '.' || r == '(' || r == ')' || r == '/' || unicode.Is(unicode.Zs, r):
		default:
			return ""
		}
	}
	return b.String()
}
