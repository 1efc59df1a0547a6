package calls_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/calls"
	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

var ctx = context.Background()

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// call is a minimal ingest record.
func call(id, direction, caller, called, start string, abandoned bool) string {
	status := "answered"
	if abandoned {
		status = "missed"
	}
	return fmt.Sprintf(`{"id":%q,"direction":%q,"status":%q,"callerNumber":%q,"calledNumber":%q,"startTime":%q,"abandoned":%t}`,
		id, direction, status, caller, called, start, abandoned)
}

// TestDerivedFieldsIgnoreImportOrder ingests the same calls in several
// orders, with a replacement that moves a call out of the window, and checks
// repeated and calledBack come out the same every time.
func TestDerivedFieldsIgnoreImportOrder(t *testing.T) {
	records := []string{
		call("1000.1", "inbound", "15550001", "100", "2026-01-01T09:00:00Z", true),
		call("1000.2", "inbound", "15550001", "100", "2026-01-01T12:00:00Z", true),
		call("1000.3", "outbound", "101", "15550001", "2026-01-01T13:00:00Z", false),
		call("1000.4", "inbound", "15550001", "100", "2026-01-02T08:59:59Z", false),
		call("1000.5", "inbound", "15550001", "100", "2026-01-02T09:00:00Z", false),  // exactly 24 h after 1000.1
		call("1000.6", "outbound", "101", "15550001", "2026-01-03T12:00:01Z", false), // more than 24 h after 1000.2
		call("1000.7", "inbound", "15550002", "100", "2026-01-01T12:00:00Z", true),
		call("1000.8", "inbound", "15550002", "100", "2026-01-01T12:00:00Z", false), // same start: ordered by id
	}
	want := map[string]string{
		"1000.1": "repeated=0 calledBack=1000.3",
		"1000.2": "repeated=1 calledBack=1000.3",
		"1000.3": "repeated=0 calledBack=",
		"1000.4": "repeated=2 calledBack=",
		"1000.5": "repeated=3 calledBack=",
		"1000.6": "repeated=0 calledBack=",
		"1000.7": "repeated=0 calledBack=",
		"1000.8": "repeated=1 calledBack=",
	}
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		rng := rand.New(rand.NewPCG(1, 2))
		for round := range 4 {
			a := storetest.Account(t, st, &storetest.AccountOpts{Name: fmt.Sprint("round ", round)})
			svc := calls.New(calls.Config{Store: st})
			order := rng.Perm(len(records))
			// A decoy first: 1000.3 placed far away, then replaced by the real one.
			ingest(t, svc, a.ID, call("1000.3", "outbound", "101", "15550001", "2025-06-01T00:00:00Z", false))
			for _, i := range order {
				ingest(t, svc, a.ID, records[i])
			}
			p := auth.Principal{AccountID: a.ID, Scopes: []auth.Scope{auth.ReportsRead}}
			for id, w := range want {
				d, err := svc.Call(ctx, p, id)
				must(t, err)
				if got := fmt.Sprintf("repeated=%d calledBack=%s", d.Call.Repeated, d.Call.CalledBack); got != w {
					t.Errorf("round %d (order %v): %s: %s, want %s", round, order, id, got, w)
				}
			}
		}
	})
}

func ingest(t *testing.T, svc *calls.Service, account int64, raw string) calls.Outcome {
	t.Helper()
	it, err := calls.Parse(account, []byte(raw))
	must(t, err)
	out, err := svc.Ingest(ctx, account, it)
	must(t, err)
	return out
}

func TestParseNamesTheField(t *testing.T) {
	ok := `"id":"1700000000.1","direction":"inbound","status":"answered","startTime":"2026-01-01T00:00:00Z"`
	for _, tc := range []struct{ raw, mention string }{
		{`{"direction":"inbound","status":"answered","startTime":"2026-01-01T00:00:00Z"}`, "id is required"},
		{`{"id":"1700000000","direction":"inbound","status":"answered","startTime":"2026-01-01T00:00:00Z"}`, "unixtime.sequence"},
		{`{"id":"1700000000.01","direction":"inbound","status":"answered","startTime":"2026-01-01T00:00:00Z"}`, "leading zeros"},
		{`{"id":"1700000000.1","status":"answered","startTime":"2026-01-01T00:00:00Z"}`, "direction"},
		{`{"id":"1700000000.1","direction":"inbound","startTime":"2026-01-01T00:00:00Z"}`, "status"},
		{`{"id":"1700000000.1","direction":"inbound","status":"answered"}`, "startTime"},
		{`{` + ok + `,"statusCode":-1}`, "statusCode"},
		{`{` + ok + `,"durationSeconds":-3}`, "durationSeconds"},
		{`{` + ok + `,"durationSeconds":"3"}`, "durationSeconds"},
		{`{` + ok + `,"endTime":"2025-12-31T00:00:00Z"}`, "endTime"},
		{`{` + ok + `,"callerType":"robot"}`, "callerType"},
		{`{` + ok + `,"numbers":["x"]}`, "numbers[0]"},
		{`{` + ok + `,"users":["01"]}`, "users[0]"},
		{`{` + ok + `,"colour":"red"}`, "colour"},
		{`{` + ok + `,"legs":[{"callId":"1","startTime":"2026-01-01T00:00:00Z"}]}`, "legs[0].uniqueId"},
		{`{` + ok + `,"legs":[{"uniqueId":"a","startTime":"2026-01-01T00:00:00Z"}]}`, "legs[0].callId"},
		{`{` + ok + `,"legs":[{"uniqueId":"a","callId":"1"}]}`, "legs[0].startTime"},
		{`{` + ok + `,"legs":[{"uniqueId":"a","callId":"1","startTime":"2026-01-01T00:00:00Z"},{"uniqueId":"a","callId":"2","startTime":"2026-01-01T00:00:00Z"}]}`, "legs[1].uniqueId"},
		{`{` + ok + `,"legs":[{"uniqueId":"a","callId":"1","startTime":"2026-01-01T00:00:00Z","recording":{"contentType":"video/mp4","content":"AAAA"}}]}`, "legs[0].recording.contentType"},
		{`{` + ok + `,"legs":[{"uniqueId":"a","callId":"1","startTime":"2026-01-01T00:00:00Z","recording":{"contentType":"audio/wav","content":"%%%"}}]}`, "legs[0].recording.content"},
		{`{` + ok + `,"transcripts":[{"uniqueId":"zz","language":"en","segments":[]}]}`, "transcripts[0].uniqueId"},
		{`{` + ok + `,"legs":[{"uniqueId":"a","callId":"1","startTime":"2026-01-01T00:00:00Z"}],"transcripts":[{"uniqueId":"a","language":"english!","segments":[]}]}`, "transcripts[0].language"},
		{`{` + ok + `,"legs":[{"uniqueId":"a","callId":"1","startTime":"2026-01-01T00:00:00Z"}],"transcripts":[{"uniqueId":"a","language":"en","segments":[{"startMs":5,"endMs":1}]}]}`, "transcripts[0].segments[0].endMs"},
		{`{"event":"hangup","id":"1700000000.1","direction":"inbound","startTime":"2026-01-01T00:00:00Z"}`, "event"},
		{`[1,2]`, "object"},
	} {
		_, err := calls.Parse(1, []byte(tc.raw))
		if err == nil || domain.ErrorCode(err) != domain.Invalid || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%s: %v, want invalid_request naming %q", tc.raw, err, tc.mention)
		}
	}
	it, err := calls.Parse(1, []byte(`{`+ok+`,"statusCode":3,"numbers":["(415) 555-0100"]}`))
	must(t, err)
	if c := it.Call.Call; c.StatusCode != 3 || c.Numbers[0] != "14155550100" || !c.StartTime.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("parsed = %+v", c)
	}
}

func TestAsteriskImport(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		for _, tc := range []struct {
			file     string
			summary  string
			problems []string
			calls    map[string]string // id → what the call must look like
		}{
			{"testdata/Master.csv", "imported=6 replaced=0 skipped=2",
				[]string{"line 7: row 3 columns", "line 8 (1772452800.12): row start \"yesterday\""},
				map[string]string{
					"1772442000.1":  "inbound answered code=1 Jane Doe 14155550123→14155550100 legs=1 talk=300 wait=12 transferred=0 abandoned=false calledBack= users=[U101]",
					"1772442600.3":  "inbound missed code=-1 Sam Roe 14155550124→14155550100 legs=1 talk=0 wait=25 transferred=0 abandoned=true calledBack=1772443200.5 users=[U101]",
					"1772443200.5":  "outbound answered code=1 Alice 101→14155550124 legs=1 talk=120 wait=8 transferred=0 abandoned=false calledBack= users=[U101]",
					"1772445600.7":  "inbound answered code=2 Max 14155550125→14155550100 legs=2 talk=240 wait=5 transferred=1 abandoned=false calledBack= users=[U101 U102]",
					"1772449200.10": "inbound voicemail code=0 Vi 14155550126→14155550100 legs=1 talk=0 wait=20 transferred=0 abandoned=false calledBack= users=[]",
					"1772539200.11": "inbound answered code=1  14155550127→14155550100 legs=1 talk=30 wait=3 transferred=0 abandoned=false calledBack= users=[U101]",
				}},
			{"testdata/Master-linkedid.csv", "imported=2 replaced=0 skipped=1",
				[]string{"line 5 (1772456400.17): row sequence \"1772456400.17\" is not a number"},
				map[string]string{
					"1772445600.7": "inbound answered code=2 Max 14155550125→14155550100 legs=3 talk=255 wait=5 transferred=1 abandoned=false calledBack= users=[U101 U102]",
					"1772442600.3": "inbound missed code=-1 Sam Roe 14155550124→14155550100 legs=1 talk=0 wait=25 transferred=0 abandoned=true calledBack= users=[U101]",
				}},
		} {
			a := storetest.Account(t, st, &storetest.AccountOpts{Name: tc.file})
			users := map[string]string{}
			for _, ext := range []string{"101", "102"} {
				u := storetest.User(t, st, a.ID, &storetest.UserOpts{FirstName: "U" + ext, Extensions: []string{ext}})
				users[ext] = fmt.Sprint(u.ID)
			}
			svc := calls.New(calls.Config{Store: st})
			f, err := os.Open(tc.file)
			must(t, err)
			b := svc.NewBatch(ctx, a.ID, 4, nil)
			must(t, calls.ReadAsteriskCSV(f, calls.AsteriskOptions{Users: users}, b))
			f.Close()
			sum := b.Wait()
			if got := fmt.Sprintf("imported=%d replaced=%d skipped=%d", sum.Imported, sum.Replaced, sum.Skipped); got != tc.summary {
				t.Errorf("%s: %s, want %s (%+v)", tc.file, got, tc.summary, sum.Problems)
			}
			for i, p := range sum.Problems {
				id := ""
				if p.ID != "" {
					id = " (" + p.ID + ")"
				}
				if got := fmt.Sprintf("line %d%s: %s", p.Line, id, p.Reason); i >= len(tc.problems) || !strings.HasPrefix(got, tc.problems[i]) {
					t.Errorf("%s: problem %q, want %q", tc.file, got, tc.problems)
				}
			}
			p := auth.Principal{AccountID: a.ID}
			names := map[string]string{users["101"]: "U101", users["102"]: "U102"}
			for id, want := range tc.calls {
				d, err := svc.Call(ctx, p, id)
				if err != nil {
					t.Errorf("%s: call %s: %v", tc.file, id, err)
					continue
				}
				c := d.Call
				var us []string
				for _, uid := range userIDs(t, st, a.ID, id) {
					us = append(us, names[uid])
				}
				slices.Sort(us) // user ids need not follow creation order
				got := fmt.Sprintf("%s %s code=%d %s %s→%s legs=%d talk=%d wait=%d transferred=%d abandoned=%t calledBack=%s users=%v",
					c.Direction, c.Status, c.StatusCode, c.CallerName, c.CallerNumber, c.CalledNumber, len(d.Legs), c.TalkTimeSeconds,
					waitOf(t, svc, p, id), c.Transferred, c.Abandoned, c.CalledBack, fmtList(us))
				if got != want {
					t.Errorf("%s: %s:\n got %s\nwant %s", tc.file, id, got, want)
				}
			}
		}
	})
}

func fmtList(s []string) string { return "[" + strings.Join(s, " ") + "]" }

// userIDs finds the users filter values of a call through search.
func userIDs(t *testing.T, st *store.Store, account int64, id string) []string {
	var out []string
	users, err := st.Users(ctx, account)
	must(t, err)
	svc := calls.New(calls.Config{Store: st})
	for _, u := range users {
		uid := fmt.Sprint(u.ID)
		start, end := int64(1772323200), int64(1775001600)
		res, err := svc.Search(ctx, auth.Principal{AccountID: account}, calls.SearchParams{Start: &start, End: &end, Filters: calls.Filters{Users: []string{uid}}})
		must(t, err)
		for _, c := range res.Calls {
			if c.ID == id {
				out = append(out, uid)
			}
		}
	}
	return out
}

// waitOf reads a call's wait time through the waitTime filter.
func waitOf(t *testing.T, svc *calls.Service, p auth.Principal, id string) int64 {
	start, end := int64(1772323200), int64(1775001600)
	for w := int64(0); w < 400; w++ {
		s := fmt.Sprint(w)
		res, err := svc.Search(ctx, p, calls.SearchParams{Start: &start, End: &end, Filters: calls.Filters{WaitTime: &calls.Bounds{Start: s, End: s}}})
		must(t, err)
		for _, c := range res.Calls {
			if c.ID == id {
				return w
			}
		}
	}
	return -1
}
