package search

import (
	"strings"
	"unicode/utf8"

	"switchboard/internal/inbox"
	"switchboard/internal/search/words"
	"switchboard/internal/store"
)

// Snippet is the part of a message's text around its first match, plain
// text (never HTML: the client escapes it as any text), with every match in
// it. Offsets count UTF-16 code units, as a JavaScript string indexes its
// text: text.slice(start, end) is the match. A text longer than
// SnippetRunes is cut to that many characters around the first match, an
// ellipsis (…) marking each cut.
type Snippet struct {
	Text    string
	Matches []Span
}

// Span is a match in a snippet: [Start, End) in UTF-16 code units.
type Span struct{ Start, End int }

// SnippetRunes is how much of a long text a snippet shows, and
// snippetLead how much of it comes before the first match.
const (
	SnippetRunes = 160
	snippetLead  = 40
)

// snippet finds terms' words in text and returns the snippet around the
// first. A match is a whole word (the word a prefix begins included), found
// by the rule that found the message (package words).
func snippet(text string, terms []store.SearchTerm) Snippet {
	var spans [][2]int // byte offsets in text
	for _, w := range words.Split(text) {
		for _, t := range terms {
			if w.Folded == t.Word || (t.Prefix && strings.HasPrefix(w.Folded, t.Word)) {
				spans = append(spans, [2]int{w.Start, w.End})
				break
			}
		}
	}
	from, to := 0, len(text)
	if utf8.RuneCountInString(text) > SnippetRunes {
		first := 0
		if len(spans) > 0 {
			first = spans[0][0]
		}
		// Start snippetLead characters before the first match (at a word's
		// start when one is near), end SnippetRunes characters later.
		from = first
		for n := 0; n < snippetLead && from > 0; n++ {
			_, size := utf8.DecodeLastRuneInString(text[:from])
			from -= size
		}
		if from > 0 {
			if i := strings.IndexByte(text[from:first], ' '); i >= 0 {
				from += i + 1
			}
		}
		to = from
		for n := 0; n < SnippetRunes && to < len(text); n++ {
			_, size := utf8.DecodeRuneInString(text[to:])
			to += size
		}
	}
	var b strings.Builder
	shift := 0 // UTF-16 units before text[from] in the snippet
	if from > 0 {
		b.WriteString("…")
		shift = 1
	}
	b.WriteString(strings.ToValidUTF8(text[from:to], "\uFFFD"))
	if to < len(text) {
		b.WriteString("…")
	}
	s := Snippet{Text: b.String(), Matches: []Span{}}
	for _, sp := range spans {
		if sp[0] < from || sp[1] > to {
			continue
		}
		start := shift + utf16Len(text[from:sp[0]])
		s.Matches = append(s.Matches, Span{Start: start, End: start + utf16Len(text[sp[0]:sp[1]])})
	}
	return s
}

// utf16Len is how many UTF-16 code units s is once JSON carries it (an
// invalid byte becomes U+FFFD, one unit).
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// numberMatch finds digits in the first participant whose digits contain
// them, with offsets in that participant as shown.
func numberMatch(participants []string, digits string) NumberMatch {
	for _, p := range participants {
		d := words.Digits(p)
		i := strings.Index(d, digits)
		if i < 0 {
			continue
		}
		// Map the digits' positions back to p (equal for a plain number).
		start, end, k := -1, -1, 0
		for j := 0; j < len(p); j++ {
			if p[j] < '0' || p[j] > '9' {
				continue
			}
			if k == i {
				start = j
			}
			k++
			if k == i+len(digits) {
				end = j + 1
				break
			}
		}
		return NumberMatch{Number: p, Start: utf16Len(p[:start]), End: utf16Len(p[:end])}
	}
	return NumberMatch{}
}

// preview cuts a conversation's last message as the list does.
func preview(text string) string { return inbox.Preview(text) }
