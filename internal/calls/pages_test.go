package calls_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"switchboard/internal/calls"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestDeepPagesMatchAFullSort pages through windows spanning several days
// (unaligned to hours at both ends, so the search combines partial hours,
// whole hours and whole days of call_counts) at every offset, both orders,
// with and without the filters the counts cover, and compares each page and
// total with the calls sorted in memory.
func TestDeepPagesMatchAFullSort(t *testing.T) {
	type row struct {
		id                string
		seq               int
		start             time.Time
		direction, status string
	}
	day0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(3, 4))
	var rows []row
	for i := range 400 {
		start := day0.Add(time.Duration(rng.Int64N(int64(6 * 24 * time.Hour))))
		if i%25 == 0 && len(rows) > 0 { // a few share a start: ordered by id (numerically)
			start = rows[len(rows)-1].start
		}
		rows = append(rows, row{
			id:        fmt.Sprintf("%d.%d", start.Unix(), i),
			seq:       i,
			start:     start,
			direction: []string{"inbound", "outbound"}[rng.IntN(2)],
			status:    []string{"answered", "missed", "voicemail"}[rng.IntN(3)],
		})
	}
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		a := storetest.Account(t, st, &storetest.AccountOpts{Name: "pages"})
		svc := calls.New(calls.Config{Store: st})
		for _, r := range rows {
			ingest(t, svc, a.ID, fmt.Sprintf(`{"id":%q,"direction":%q,"status":%q,"callerNumber":"15550001","calledNumber":"100","startTime":%q}`,
				r.id, r.direction, r.status, r.start.Format(time.RFC3339Nano)))
		}
		from, to := day0.Add(37*time.Minute+11*time.Second), day0.Add(4*24*time.Hour+5*time.Hour+13*time.Minute)
		filters := []struct {
			name               string
			directions, status []string
		}{
			{"all", nil, nil},
			{"missed", nil, []string{"missed"}},
			{"inbound answered or voicemail", []string{"inbound"}, []string{"answered", "voicemail"}},
		}
		for _, f := range filters {
			var want []row
			for _, r := range rows {
				if !r.start.Before(from) && r.start.Before(to) &&
					(f.directions == nil || slices.Contains(f.directions, r.direction)) &&
					(f.status == nil || slices.Contains(f.status, r.status)) {
					want = append(want, r)
				}
			}
			for _, asc := range []bool{false, true} {
				sorted := slices.Clone(want)
				slices.SortFunc(sorted, func(x, y row) int {
					c := cmp.Or(x.start.Compare(y.start), cmp.Compare(x.seq, y.seq)) // same start: same id_sec
					if asc {
						return c
					}
					return -c
				})
				for offset := 0; offset <= len(sorted); offset += 3 {
					q := store.CallQuery{AccountID: a.ID, Start: from.UnixMicro(), End: to.UnixMicro(),
						Directions: f.directions, Statuses: f.status, Asc: asc, Limit: 4, Offset: offset}
					total, page, err := st.SearchCalls(ctx, q)
					must(t, err)
					var got, exp []string
					for _, c := range page {
						got = append(got, c.ID)
					}
					for _, r := range sorted[offset:min(offset+4, len(sorted))] {
						exp = append(exp, r.id)
					}
					if total != int64(len(sorted)) || !slices.Equal(got, exp) {
						t.Fatalf("%s, asc %v, offset %d: total %d page %v; want total %d page %v", f.name, asc, offset, total, got, len(sorted), exp)
					}
				}
			}
		}
	})
}
