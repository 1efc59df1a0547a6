// Package words is how search sees text: words are runs of letters and
// digits, compared without case or diacritics ("Café" and "cafe" are one
// word). The store indexes the folded words of each message (Index) and the
// search package folds a query's words and finds them again in a message for
// its snippet (Split) with the same rule, so that what matches and what is
// highlighted never disagree. It imports nothing of the project: the store
// and the search capability both use it.
package words

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Word is one word of a text: its bytes text[Start:End] and its folded form.
type Word struct {
	Start, End int
	Folded     string
}

// Split returns the words of text in order. Invalid UTF-8 separates words.
func Split(text string) []Word {
	var out []Word
	start := -1
	for i, r := range text {
		if isWordRune(r) && !(r == utf8.RuneError && isInvalidAt(text, i)) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, Word{Start: start, End: i, Folded: Fold(text[start:i])})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, Word{Start: start, End: len(text), Folded: Fold(text[start:])})
	}
	return out
}

func isInvalidAt(s string, i int) bool {
	_, size := utf8.DecodeRuneInString(s[i:])
	return size <= 1
}

// isWordRune: letters, digits, and the marks that decorate them (a
// decomposed "é" is "e" and a combining accent).
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Mn, r)
}

// Fold returns word in lower case without diacritics: decomposed (NFD),
// combining marks dropped, lowered.
func Fold(word string) string {
	ascii := true
	for i := 0; i < len(word); i++ {
		if word[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(word)
	}
	var b strings.Builder
	b.Grow(len(word))
	for _, r := range norm.NFD.String(word) {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// Index is what the store indexes for text: its folded words, separated by
// single spaces ("" for a text without words). Each engine's tokenizer then
// splits it on the spaces and nothing else changes it.
func Index(text string) string {
	ws := Split(text)
	switch len(ws) {
	case 0:
		return ""
	case 1:
		return ws[0].Folded
	}
	var b strings.Builder
	b.Grow(len(text))
	for i, w := range ws {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w.Folded)
	}
	return b.String()
}

// Digits returns the digits of a phone number as search sees them: the
// ASCII digits only, in order ("+1 (555) 010-2030" is "15550102030").
func Digits(number string) string {
	var b strings.Builder
	for i := 0; i < len(number); i++ {
		if c := number[i]; c >= '0' && c <= '9' {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// MinNumberDigits is the fewest digits a search of numbers takes: shorter
// ones are in nearly every number.
const MinNumberDigits = 3

// Suffixes returns the digit strings a conversation number is found by:
// every suffix of its digits at least MinNumberDigits long. A search for
// any part of the digits is then a prefix search of these (an index range),
// on both engines, without a trigram index.
func Suffixes(number string) []string {
	d := Digits(number)
	if len(d) < MinNumberDigits {
		return nil
	}
	out := make([]string, 0, len(d)-MinNumberDigits+1)
	for i := 0; i+MinNumberDigits <= len(d); i++ {
		out = append(out, d[i:])
	}
	return out
}
