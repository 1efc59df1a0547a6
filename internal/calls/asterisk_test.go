package calls_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"switchboard/internal/auth"
	"switchboard/internal/calls"
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
			a := storetest.Account(t, st, &storetest.AccountOpts{Name: tc.name})
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

// TestAsteriskMergesGroups: a row whose channels join two calls being
// gathered makes them one call, whichever of the two is larger.
func TestAsteriskMergesGroups(t *testing.T) {
	row := func(ch, dst, uid, start, end string) string {
		return `"","14155550130","14155550100","from-pstn","","` + ch + `","` + dst + `","Dial","x","2026-03-04 10:` + start + `",,"2026-03-04 10:` + end + `",10,0,"NO ANSWER","DOCUMENTATION","` + uid + `",""`
	}
	csv := strings.Join([]string{
		row("SIP/trunk-01", "SIP/101-02", "1772618400.1", "00:00", "00:10"),
		row("SIP/trunk-03", "SIP/102-04", "1772618401.2", "00:01", "00:11"),
		row("SIP/trunk-03", "SIP/103-05", "1772618401.2", "00:02", "00:12"),
		row("SIP/101-02", "SIP/trunk-03", "1772618402.3", "00:03", "00:13"),
		row("SIP/trunk-06", "SIP/104-07", "1772618403.4", "00:04", "00:14"),
	}, "\n") + "\n"
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		a := storetest.Account(t, st, &storetest.AccountOpts{Name: "merge"})
		svc := calls.New(calls.Config{Store: st})
		b := svc.NewBatch(ctx, a.ID, 2, nil)
		must(t, calls.ReadAsteriskCSV(strings.NewReader(csv), calls.AsteriskOptions{}, b))
		if sum := b.Wait(); sum.Imported != 2 || sum.Skipped != 0 {
			t.Fatalf("%+v", sum)
		}
		for id, legs := range map[string]int{"1772618400.1": 4, "1772618403.4": 1} {
			d, err := svc.Call(ctx, auth.Principal{AccountID: a.ID}, id)
			must(t, err)
			if len(d.Legs) != legs {
				t.Errorf("%s: %d legs, want %d", id, len(d.Legs), legs)
			}
		}
	})
}

// TestAsteriskRowWithNUL: a CDR row holding the NUL character in a column
// that is stored is skipped naming the field, and the rows around it are
// imported, the same on both engines (PostgreSQL stores no NUL in text).
func TestAsteriskRowWithNUL(t *testing.T) {
	b, err := os.ReadFile("testdata/Master.csv")
	must(t, err)
	rows := strings.Split(strings.TrimSpace(string(b)), "\n")
	rows[1] = strings.Replace(rows[1], "Sam Roe", "Sam\x00Roe", 1)
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		a := storetest.Account(t, st, nil)
		batch := calls.New(calls.Config{Store: st}).NewBatch(ctx, a.ID, 2, nil)
		must(t, calls.ReadAsteriskCSV(strings.NewReader(strings.Join(rows[:3], "\n")+"\n"), calls.AsteriskOptions{}, batch))
		sum := batch.Wait()
		if sum.Imported != 2 || sum.Skipped != 1 || len(sum.Problems) != 1 || sum.Problems[0].Line != 2 ||
			sum.Problems[0].Reason != "callerName has a control character" {
			t.Errorf("got %+v, want rows 1 and 3 imported and row 2 skipped: callerName has a control character", sum)
		}
	})
}
