package calls_test

import (
	"context"
	"fmt"
	"math/rand/v2"
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
			a := domain.Account{Name: fmt.Sprint("round ", round)}
			must(t, st.CreateAccount(ctx, &a))
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
