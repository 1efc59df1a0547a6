package httpapi_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"switchboard/internal/auth"
	"switchboard/internal/calls"
	"switchboard/internal/httpapi"
)

// distinct returns n distinct valid values for a search filter list.
func distinct(list string, n int) []any {
	out := make([]any, n)
	for i := range out {
		switch list {
		case "numbers", "numbersExclude":
			out[i] = fmt.Sprintf("1415555%04d", i)
		case "users":
			out[i] = fmt.Sprint(1_000_000 + i)
		case "directions":
			out[i] = []string{"inbound", "outbound"}[i%2]
		case "statuses":
			out[i] = []string{"answered", "missed", "voicemail"}[i%3]
		case "daysOfWeek":
			out[i] = []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}[i%7]
		case "daysOfMonth":
			out[i] = 1 + i%31
		default: // free text: extensions, queues, huntgroups, callPurpose, callSentiment
			out[i] = fmt.Sprintf("%s-%d", list, i)
		}
	}
	return out
}

// searchLists are every list filters takes.
var searchLists = []string{
	"numbers", "numbersExclude", "extensions", "extensionsExclude", "queues", "queuesExclude",
	"huntgroups", "huntgroupsExclude", "users", "directions", "statuses", "callPurpose", "callSentiment",
	"daysOfWeek", "daysOfMonth",
}

func searchBody(t *testing.T, start, end int64, filters map[string]any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"start": start, "end": end, "filters": filters})
	must(t, err)
	return string(b)
}

// TestCallSearchFilterLimits: every filter list, entry and the search text
// is bounded (400 naming the field beyond), and a search with every list at
// its maximum is answered on both engines (its statement stays within what
// SQLite and PostgreSQL accept).
func TestCallSearchFilterLimits(t *testing.T) {
	forEachCallsEngine(t, func(t *testing.T, f *callsFixture) {
		search := func(body string) (int, []byte) {
			status, _, b := f.do(t, "POST", "/api/public/v1/calls/search", f.keys["acme"], body)
			return status, b
		}
		wantInvalid := func(what, body, mention string) {
			t.Helper()
			status, b := search(body)
			e := decodeInto[errorEnvelope](t, b)
			if status != 400 || e.Error.Type != "invalid_request" || !strings.Contains(e.Error.Message, mention) {
				t.Errorf("%s: %d %.300s, want 400 invalid_request naming %q", what, status, b, mention)
			}
		}
		for _, list := range searchLists {
			wantInvalid(list+" one over", searchBody(t, marchStart, marchEnd, map[string]any{list: distinct(list, calls.MaxFilterValues+1)}),
				"filters."+list+" has 101 entries; at most 100")
		}
		// The audit's body: 100,000 distinct numbers (under 1 MB) is refused
		// at once, not de-duplicated for seconds and then a 500.
		huge := make([]string, 100_000)
		for i := range huge {
			huge[i] = fmt.Sprint(i + 1)
		}
		wantInvalid("100,000 numbers", searchBody(t, marchStart, marchEnd, map[string]any{"numbers": huge}), "filters.numbers")

		long := strings.Repeat("9", calls.MaxTagLength+1)
		for _, list := range []string{"numbers", "numbersExclude", "extensions", "queuesExclude", "huntgroups", "users"} {
			wantInvalid(list+" entry too long", searchBody(t, marchStart, marchEnd, map[string]any{list: []string{"1", long}}), "filters."+list+"[1]")
		}
		longText := strings.Repeat("é", calls.MaxVocabularyLength+1)
		wantInvalid("callPurpose entry too long", searchBody(t, marchStart, marchEnd, map[string]any{"callPurpose": []string{"x", longText}}), "filters.callPurpose[1]")
		wantInvalid("callSentiment entry too long", searchBody(t, marchStart, marchEnd, map[string]any{"callSentiment": []string{longText}}), "filters.callSentiment[0]")
		wantInvalid("search too long", searchBody(t, marchStart, marchEnd, map[string]any{"search": longText}), "filters.search")
		// A NUL is text PostgreSQL refuses (it was a 500 there); no stored
		// value has a control character.
		wantInvalid("NUL in a queue", searchBody(t, marchStart, marchEnd, map[string]any{"queues": []string{"a\x00b"}}), "filters.queues[0]")
		wantInvalid("NUL in a purpose", searchBody(t, marchStart, marchEnd, map[string]any{"callPurpose": []string{"a\x00b"}}), "filters.callPurpose[0]")
		wantInvalid("NUL in search", searchBody(t, marchStart, marchEnd, map[string]any{"search": "a\x00b"}), "filters.search")
		// An echoed bad value is cut short.
		status, b := search(searchBody(t, marchStart, marchEnd, map[string]any{"statuses": []string{strings.Repeat("x", 100_000)}}))
		if status != 400 || len(b) > 1000 {
			t.Errorf("a long bad status: %d, %d bytes of answer", status, len(b))
		}

		// At their maxima (the longest entries, every list full, a year in
		// a zone with daylight saving, days of the month and a time of day
		// across midnight: the most ranges), a search is answered, and the
		// filters still select.
		full := map[string]any{"search": strings.Repeat("a", calls.MaxVocabularyLength)}
		for _, list := range searchLists {
			full[list] = distinct(list, calls.MaxFilterValues)
		}
		full["timeOfDay"] = map[string]string{"start": "23:00", "end": "01:00"}
		for _, what := range []struct {
			name    string
			filters map[string]any
		}{
			{"every list full", full},
			{"every list full, no search", func() map[string]any {
				m := map[string]any{}
				for k, v := range full {
					m[k] = v
				}
				delete(m, "search")
				return m
			}()},
		} {
			b := map[string]any{"start": marchStart - 200*86400, "end": marchStart - 200*86400 + 366*86400, "timeZone": "America/New_York", "filters": what.filters}
			raw, err := json.Marshal(b)
			must(t, err)
			if status, got := search(string(raw)); status != 200 {
				t.Errorf("%s: %d %.500s", what.name, status, got)
			}
		}
		// Full lists of values, one of which matches c5 (numbers 14155550100,
		// callPurpose support): the lists work at their size.
		numbers := distinct("numbers", calls.MaxFilterValues)
		numbers[99] = "14155550100"
		purposes := distinct("callPurpose", calls.MaxFilterValues)
		purposes[0] = "support"
		status, b = search(searchBody(t, marchStart, marchEnd, map[string]any{"numbers": numbers, "callPurpose": purposes}))
		if page := decodeInto[callPage](t, b); status != 200 || strings.Join(ids(page.Data.Calls), ",") != c5 {
			t.Errorf("full lists with one match: %d %s", status, b)
		}
	})
}

// TestIngestListLimits: a line with a list over its limit is reported with
// its line and the field, and the rest of the batch goes in; a single object
// over a limit is the request's 400.
func TestIngestListLimits(t *testing.T) {
	forEachCallsEngine(t, func(t *testing.T, f *callsFixture) {
		acme := f.users["Alice"].AccountID
		token, _, err := auth.NewIngestToken(ctx, f.st, acme, "pbx")
		must(t, err)
		quoted := func(prefix string, n int) string {
			v := make([]string, n)
			for i := range v {
				v[i] = fmt.Sprintf(`"%s%d"`, prefix, i)
			}
			return "[" + strings.Join(v, ",") + "]"
		}
		legs := func(n int) string {
			v := make([]string, n)
			for i := range v {
				v[i] = fmt.Sprintf(`{"uniqueId":"u%d","callId":"c","startTime":"2026-03-09T00:00:00Z"}`, i)
			}
			return "[" + strings.Join(v, ",") + "]"
		}
		base := func(id string) string {
			return `"id":"` + id + `","direction":"inbound","status":"answered","startTime":"2026-03-09T00:00:00Z"`
		}
		lines := []string{
			`{` + base("1773014400.1") + `,"users":` + quoted("", 0) + `}`,
			`{` + base("1773014400.2") + `,"users":` + quoted("1", calls.MaxTagValues+1) + `}`,
			`{` + base("1773014400.3") + `,"numbers":` + quoted("1415555", calls.MaxTagValues+1) + `}`,
			`{` + base("1773014400.4") + `,"extensions":` + quoted("e", calls.MaxTagValues+1) + `}`,
			`{` + base("1773014400.5") + `,"queues":` + quoted("q", calls.MaxTagValues+1) + `}`,
			`{` + base("1773014400.6") + `,"huntgroups":` + quoted("h", calls.MaxTagValues+1) + `}`,
			`{` + base("1773014400.7") + `,"legs":` + legs(calls.MaxLegs+1) + `}`,
			`{` + base("1773014400.8") + `,"numbers":["` + strings.Repeat("5", 129) + `"]}`,
			`{"event":"ringing","id":"1773014400.9","direction":"inbound","startTime":"2026-03-09T00:00:00Z","users":` + quoted("1", calls.MaxTagValues+1) + `}`,
			`{` + base("1773014400.11") + `,"queues":["a\u0000b"]}`,
			// At the limits: accepted.
			`{` + base("1773014400.10") + `,"numbers":` + quoted("1415555", calls.MaxTagValues) + `,"extensions":` + quoted("e", calls.MaxTagValues) +
				`,"queues":` + quoted("q", calls.MaxTagValues) + `,"huntgroups":` + quoted("h", calls.MaxTagValues) + `,"users":` + quoted("1", calls.MaxTagValues) +
				`,"legs":` + legs(calls.MaxLegs) + `}`,
		}
		status, _, b := f.do(t, "POST", httpapi.IngestPath, token, strings.Join(lines, "\n"))
		s := decodeInto[struct{ Data calls.Summary }](t, b).Data
		want := map[int]string{
			2: "users has 101 entries; at most 100", 3: "numbers has 101 entries", 4: "extensions has 101 entries",
			5: "queues has 101 entries", 6: "huntgroups has 101 entries", 7: "legs has 1001 entries; at most 1000",
			8: "numbers[0]", 9: "users has 101 entries", 10: "queues[0]: has a control character",
		}
		if status != 200 || s.Imported != 2 || s.Skipped != len(want) || len(s.Problems) != len(want) {
			t.Fatalf("batch: %d %.2000s", status, b)
		}
		for _, p := range s.Problems {
			if !strings.Contains(p.Reason, want[p.Line]) || want[p.Line] == "" {
				t.Errorf("line %d: %q, want it to mention %q", p.Line, p.Reason, want[p.Line])
			}
		}
		// One object over a limit: 400 naming the field.
		status, _, b = f.do(t, "POST", httpapi.IngestPath, token, lines[1])
		if e := decodeInto[errorEnvelope](t, b); status != 400 || e.Error.Type != "invalid_request" || !strings.Contains(e.Error.Message, "users has 101 entries") {
			t.Errorf("one object with 101 users: %d %s", status, b)
		}
	})
}

// TestIngestDropsUnknownUsers: users that are not the account's (invented
// ids, another account's user) are dropped from the call and its events;
// the call and its known users are kept. The events of a line are bounded by
// the users cap.
func TestIngestDropsUnknownUsers(t *testing.T) {
	forEachCallsEngine(t, func(t *testing.T, f *callsFixture) {
		acme := f.users["Alice"].AccountID
		alice, dave := fmt.Sprint(f.users["Alice"].ID), fmt.Sprint(f.users["Dave"].ID)
		token, _, err := auth.NewIngestToken(ctx, f.st, acme, "pbx")
		must(t, err)
		before, err := f.st.Events(ctx, acme, 0, 1000)
		must(t, err)
		last := before[len(before)-1].ID

		users := []string{"999999", alice, dave, "999998"}
		for i := range 90 {
			users = append(users, fmt.Sprint(5_000_000+i))
		}
		usersJSON, _ := json.Marshal(users)
		lines := strings.Join([]string{
			`{"id":"1773014400.1","direction":"inbound","status":"answered","callerNumber":"14155550009","startTime":"2026-03-09T00:00:00Z","users":` + string(usersJSON) + `}`,
			`{"event":"ringing","id":"1773014400.2","direction":"inbound","startTime":"2026-03-09T00:00:00Z","users":` + string(usersJSON) + `}`,
		}, "\n")
		status, _, b := f.do(t, "POST", httpapi.IngestPath, token, lines)
		if s := decodeInto[struct{ Data calls.Summary }](t, b).Data; status != 200 || s.Imported != 1 || s.Events != 1 || s.Skipped != 0 {
			t.Fatalf("ingest: %d %s", status, b)
		}
		after, err := f.st.Events(ctx, acme, last, 1000)
		must(t, err)
		var types []string
		for _, e := range after {
			types = append(types, e.Type)
			var p struct {
				UserID string   `json:"userId"`
				Users  []string `json:"users"`
			}
			must(t, json.Unmarshal(e.Payload, &p))
			if strings.Join(p.Users, ",") != alice || (p.UserID != "" && p.UserID != alice) {
				t.Errorf("%s event payload %s: want users [%s] only", e.Type, e.Payload, alice)
			}
		}
		slices.Sort(types) // the batch stores its lines concurrently
		if strings.Join(types, " ") != "AccountEndedCalls AccountRealTimeCalls UserEndedCalls" {
			t.Errorf("events = %v", types)
		}
		// The users filter finds the call under Alice only.
		for _, tc := range []struct {
			user string
			want string
		}{{alice, "1773014400.1"}, {dave, ""}, {"999999", ""}} {
			body := fmt.Sprintf(`{"start":1773014400,"end":1773014401,"filters":{"users":["%s"]}}`, tc.user)
			_, _, b := f.do(t, "POST", "/api/public/v1/calls/search", f.keys["acme"], body)
			if got := strings.Join(ids(decodeInto[callPage](t, b).Data.Calls), ","); got != tc.want {
				t.Errorf("users filter %s: %q, want %q", tc.user, got, tc.want)
			}
		}
	})
}
