package team

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"switchboard/internal/domain"
)

// The mention grammar (docs/decisions.md, "The team: mentions"): an `@`
// that starts the note or follows a character that is not a letter, digit
// or underscore (so an e-mail address mentions nobody), followed by a
// teammate's name, compared case-insensitively, that ends the note or is
// followed by a character that is not a letter, digit or underscore ("@ana,"
// and "@ana's" mention ana; "@anab" does not). A name is a person's
// username, their full name ("Ada Lovelace") or their first name ("Ada");
// a full or first name that two of the line's people share names neither of
// them (the username still does). Where several names fit at one `@`, the
// longest wins ("@Ada Lovelace" over "@Ada"). Anything else after an `@` is
// text: a note is never refused for what it mentions.

// MaxMentions bounds the people one note notifies.
const MaxMentions = 20

// name is one way of naming a person in a mention.
type name struct {
	text string
	id   int64
	rank int // 0 username, 1 full name, 2 first name: a lower rank wins a tie
}

// names lists how people may be named, longest first, without the
// ambiguous ones.
func names(people []domain.User) []name {
	var all []name
	for _, u := range people {
		add := func(text string, rank int) {
			if text = strings.TrimSpace(text); text != "" {
				all = append(all, name{text: text, id: u.ID, rank: rank})
			}
		}
		add(u.Username, 0)
		if u.FirstName != "" && u.LastName != "" {
			add(u.FirstName+" "+u.LastName, 1)
		}
		add(u.FirstName, 2)
	}
	// The same text (case-insensitively) for two people: the best rank keeps
	// it if it is one person's, else nobody does.
	out := all[:0:0]
	for _, n := range all {
		keep := true
		for _, o := range all {
			if o.id != n.id && strings.EqualFold(o.text, n.text) && o.rank <= n.rank {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, n)
		}
	}
	slices.SortStableFunc(out, func(a, b name) int { return len(b.text) - len(a.text) })
	return out
}

// Mentions returns the ids of the people text mentions, in the order first
// mentioned, each once, at most MaxMentions. people are those who may be
// mentioned (the line's, LineTeam).
func Mentions(text string, people []domain.User) []int64 {
	var out []int64
	var ns []name
	for i := 0; i < len(text); i++ {
		if text[i] != '@' || (i > 0 && isNameRune(lastRune(text[:i]))) {
			continue
		}
		if ns == nil {
			ns = names(people)
		}
		rest := text[i+1:]
		for _, n := range ns {
			if len(rest) < len(n.text) || !strings.EqualFold(rest[:len(n.text)], n.text) {
				continue
			}
			if after := rest[len(n.text):]; after != "" && isNameRune(firstRune(after)) {
				continue
			}
			if !slices.Contains(out, n.id) {
				out = append(out, n.id)
			}
			i += len(n.text)
			break
		}
		if len(out) == MaxMentions {
			break
		}
	}
	return out
}

func isNameRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

func lastRune(s string) rune {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r
}

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}
