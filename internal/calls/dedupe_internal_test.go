package calls

import (
	"slices"
	"strconv"
	"testing"
)

// dedupe keeps each value's first occurrence, in order. (It uses a set: the
// scan per value it replaced took 15 s of a core for the audit's 100,000
// values; the search and ingest limits now refuse such lists before any
// per-entry work, see TestCallSearchFilterLimits.)
func TestDedupeKeepsFirstOccurrences(t *testing.T) {
	in := make([]string, 1000)
	for i := range in {
		in[i] = strconv.Itoa(i % 700)
	}
	out := dedupe(in)
	if len(out) != 700 || !slices.Equal(out, in[:700]) {
		t.Errorf("dedupe kept %d values, want the first 700 in order", len(out))
	}
	if got := dedupe([]string{"b", "a", "b", "a", "c"}); !slices.Equal(got, []string{"b", "a", "c"}) {
		t.Errorf("dedupe = %v, want [b a c]", got)
	}
}
