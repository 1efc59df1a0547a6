package calls_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"switchboard/internal/auth"
	"switchboard/internal/calls"
	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestAsteriskRepeatedRow: a row repeated in Master.csv (the same CDR
// written twice) is one leg, with the call's talk time counted once; rows
// of one channel that differ (two dial attempts) stay two legs.
func TestAsteriskRepeatedRow(t *testing.T) {
	rows := func(file string) []string {
		b, err := os.ReadFile(file)
		must(t, err)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	plain, linked := rows("testdata/Master.csv"), rows("testdata/Master-linkedid.csv")
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		for _, tc := range []struct {
			name string
			csv  []string
			want map[string]string // id → legs and talk time
		}{
			{"plain, repeated at once", []string{plain[0], plain[0], plain[3], plain[4], plain[3]},
				map[string]string{"1772442000.1": "legs=[1772442000.1] talk=300", "1772445600.7": "legs=[1772445600.7-1 1772445600.7-2] talk=240"}},
			{"linkedid, repeated later", []string{linked[0], linked[1], linked[2], linked[0], linked[1]},
				map[string]string{"1772445600.7": "legs=[1772445600.7-1 1772445650.9 1772445600.7-2] talk=255"}},
		} {
			a := domain.Account{Name: tc.name}
			must(t, st.CreateAccount(ctx, &a))
			svc := calls.New(calls.Config{Store: st})
			b := svc.NewBatch(ctx, a.ID, 2, nil)
			must(t, calls.ReadAsteriskCSV(strings.NewReader(strings.Join(tc.csv, "\n")+"\n"), calls.AsteriskOptions{}, b))
			if sum := b.Wait(); sum.Skipped != 0 || sum.Imported != len(tc.want) {
				t.Errorf("%s: %+v", tc.name, sum)
			}
			for id, want := range tc.want {
				d, err := svc.Call(ctx, auth.Principal{AccountID: a.ID}, id)
				if err != nil {
					t.Errorf("%s: %s: %v", tc.name, id, err)
					continue
				}
				var legs []string
				for _, l := range d.Legs {
					legs = append(legs, l.UniqueID)
				}
				if got := fmt.Sprintf("legs=%s talk=%d", fmtList(legs), d.Call.TalkTimeSeconds); got != want {
					t.Errorf("%s: %s: %s, want %s", tc.name, id, got, want)
				}
			}
		}
	})
}
