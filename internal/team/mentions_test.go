package team_test

import (
	"slices"
	"testing"

	"switchboard/internal/domain"
	"switchboard/internal/team"
)

func TestMentionsGrammar(t *testing.T) {
	people := []domain.User{
		{ID: 1, Username: "ada", FirstName: "Ada", LastName: "Lovelace"},
		{ID: 2, Username: "ben.c", FirstName: "Ben", LastName: "Carter"},
		{ID: 3, FirstName: "Ben", LastName: "Other"},
		{ID: 4, Username: "Zoë", FirstName: "Zoë"},
		{ID: 5, FirstName: "Ada Lovelace", LastName: "Jr"}, // a full name that starts like Ada's
	}
	for _, tc := range []struct {
		text string
		want []int64
	}{
		{"@ada", []int64{1}},
		{"hi @ADA, see this", []int64{1}},
		{"(@ada)", []int64{1}},
		{"@ada's call", []int64{1}},
		{"@adam", nil},
		{"@ada_b", nil},
		{"ada@example.com", nil},
		{"x@ada", nil},
		{"@ben.c then @ben.c again", []int64{2}},
		{"@ben.c.", []int64{2}},
		{"@ben", nil},                                 // two Bens
		{"@Ben Carter and @Ben Other", []int64{2, 3}}, // full names are unique
		{"@Ada Lovelace Jr", []int64{5}},              // the longest name wins
		{"@Ada Lovelace", []int64{1}},
		{"@zoë!", []int64{4}},
		{"@ @@ada", []int64{1}}, // an @ is no name character: the last one starts a mention
		{"", nil},
	} {
		got := team.Mentions(tc.text, people)
		if !slices.Equal(got, tc.want) {
			t.Errorf("Mentions(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

func TestMentionsAtMost(t *testing.T) {
	var people []domain.User
	text := ""
	for i := range team.MaxMentions + 5 {
		u := domain.User{ID: int64(i + 1), Username: "u" + string(rune('a'+i))}
		people = append(people, u)
		text += "@" + u.Username + " "
	}
	if got := team.Mentions(text, people); len(got) != team.MaxMentions {
		t.Errorf("%d mentions, want at most %d", len(got), team.MaxMentions)
	}
}
