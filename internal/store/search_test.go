package store_test

import (
	"slices"
	"testing"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestSearchMessagesEveryPath pages through a search on each engine. On
// PostgreSQL the search window is 3 messages and the GIN index's limit 2
// matches, so that the pages are found by each of its ways: the walk of the
// newest messages, the GIN index's few matches below it, and the walk below
// it when they are more. Every page holds the matches, newest first, each
// once, and another account's never.
func TestSearchMessagesEveryPath(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		st.SetSearchWindows(3, 2)
		acct := storetest.Account(t, st, nil)
		other := storetest.Account(t, st, nil)
		line := storetest.Line(t, st, acct.ID, nil)
		otherLine := storetest.Line(t, st, other.ID, nil)
		var common, rare []int64
		for i := range 24 {
			body := "filler text"
			switch {
			case i%2 == 0:
				body = "your invoice is ready"
			case i == 3 || i == 7:
				body = "the café opens"
			}
			m := storetest.Message(t, st, line, &storetest.MessageOpts{Body: body, Outbound: i%3 == 0})
			if body != "the café opens" { // so that its matches are 2: the GIN index's way
				storetest.Message(t, st, otherLine, &storetest.MessageOpts{Body: body})
			}
			switch body {
			case "your invoice is ready":
				common = append([]int64{m.ID}, common...)
			case "the café opens":
				rare = append([]int64{m.ID}, rare...)
			}
		}
		for _, tc := range []struct {
			word string
			want []int64
		}{{"invoice", common}, {"cafe", rare}, {"nothing", nil}} {
			for _, limit := range []int{1, 2, 5, 20} {
				var got []int64
				f := store.MessageSearch{AccountID: acct.ID, Terms: []store.SearchTerm{{Word: tc.word, Prefix: true}}, Limit: limit}
				for range 30 {
					hits, err := st.SearchMessages(ctx, f)
					if err != nil {
						t.Fatal(err)
					}
					for _, h := range hits {
						got = append(got, h.ID)
					}
					if len(hits) < limit {
						break
					}
					f.Before = hits[len(hits)-1].ID
				}
				if !slices.Equal(got, tc.want) {
					t.Errorf("%s by %d: %v, want %v", tc.word, limit, got, tc.want)
				}
			}
		}
	})
}
