package search

import (
	"strings"
	"unicode/utf8"

	"switchboard/internal/search/words"
	"switchboard/internal/store"
)

// query is a search's q, read: the words every message found must have,
// and the digits a conversation's number must contain ("" when q is not a
// number, or too short a part of one).
type query struct {
	terms  []store.SearchTerm
	digits string
}

// parseQuery reads q. Its words (package words: letters and digits, without
// case or diacritics) must all be in a message found, each as a whole word
// or as the beginning of one; a one-character word only as a whole word (as
// a beginning it is in nearly every text, and costs the index a walk of
// all of them). q is a number when it has nothing but digits, spaces and
// + - ( ) . and at least words.MinNumberDigits digits: those digits, in
// order, are then found anywhere in a conversation's numbers.
func parseQuery(q string) (query, error) {
	if !utf8.ValidString(q) {
		return query{}, invalid("q is not valid UTF-8")
	}
	q = strings.TrimSpace(q)
	if q == "" {
		return query{}, invalid("q is required: the words or digits to search for")
	}
	if n := utf8.RuneCountInString(q); n > MaxQueryRunes {
		return query{}, invalid("q has %d characters; at most %d", n, MaxQueryRunes)
	}
	var out query
	for _, w := range words.Split(q) {
		t := store.SearchTerm{Word: w.Folded, Prefix: utf8.RuneCountInString(w.Folded) > 1}
		dup := false
		for i, have := range out.terms {
			if have.Word == t.Word {
				out.terms[i].Prefix = have.Prefix && t.Prefix
				dup = true
			}
		}
		if !dup {
			out.terms = append(out.terms, t)
		}
	}
	if len(out.terms) == 0 {
		return query{}, invalid("q has no word or digit to search for")
	}
	if len(out.terms) > MaxTerms {
		return query{}, invalid("q has %d words; at most %d", len(out.terms), MaxTerms)
	}
	if strings.Trim(q, "0123456789 +-().") == "" {
		if d := words.Digits(q); len(d) >= words.MinNumberDigits {
			out.digits = d
		}
	}
	return out, nil
}
