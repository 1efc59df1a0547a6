package httpapi_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"switchboard/internal/auth"
	"switchboard/internal/blob"
	"switchboard/internal/calls"
	"switchboard/internal/domain"
	"switchboard/internal/httpapi"
	"switchboard/internal/sms"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/users"
	"switchboard/internal/webhooks"
)

// callsFixture is the common fixture with the call history served, and a
// known set of calls ingested.
type callsFixture struct {
	*fixture
	svc   *calls.Service
	audio []byte
}

// The known calls (acme), all in March 2026. Times are UTC.
var testCalls = []string{
	// c1: Saturday evening in New York, Sunday in UTC.
	`{"id":"1772323200.1","direction":"inbound","status":"answered","callerType":"external","calledType":"queue",
	  "callerName":"Alice Cooper","callerNumber":"14155550001","calledName":"Sales","calledNumber":"14155550100","dialledNumber":"14155550100",
	  "startTime":"2026-03-01T00:00:00Z","endTime":"2026-03-01T00:02:00Z","durationSeconds":120,"talkTimeSeconds":100,"waitTimeSeconds":20,
	  "numbers":["14155550100"],"queues":["sales"],"users":["{USER}"],"callPurpose":"sales","callSentiment":"positive",
	  "legs":[{"uniqueId":"1772323200.1","callId":"1772323200.1","startTime":"2026-03-01T00:00:00Z","durationSeconds":120,"talkTimeSeconds":100,"from":"14155550001","to":"101",
	           "recording":{"contentType":"audio/wav","content":"{AUDIO}"}}],
	  "transcripts":[{"uniqueId":"1772323200.1","language":"en-US","segments":[{"speaker":"caller","channel":0,"startMs":0,"endMs":1500,"text":"Hello, I'd like a quote."},{"speaker":"agent","channel":1,"startMs":1600,"endMs":2500,"text":"Sure."}]}]}`,
	// c2: abandoned, called back by c3.
	`{"id":"1772361000.2","direction":"inbound","status":"missed","callerName":"Bob Caller","callerNumber":"14155550002","calledNumber":"14155550100","dialledNumber":"14155550100",
	  "startTime":"2026-03-01T10:30:00Z","durationSeconds":30,"waitTimeSeconds":30,"abandoned":true,"numbers":["14155550100"],"queues":["support"]}`,
	// c3: outbound from extension 101, transferred across two legs.
	`{"id":"1772362800.3","direction":"outbound","status":"answered","statusCode":2,"callerType":"user","callerName":"Alice Smith","callerNumber":"101","calledNumber":"14155550002","dialledNumber":"14155550002",
	  "startTime":"2026-03-01T11:00:00Z","endTime":"2026-03-01T11:05:00Z","durationSeconds":300,"talkTimeSeconds":280,"transferred":1,"extensions":["101","102"],
	  "legs":[{"uniqueId":"1772362800.3","callId":"1772362800.3","startTime":"2026-03-01T11:00:00Z","durationSeconds":120,"talkTimeSeconds":110,"from":"101","to":"14155550002"},
	          {"uniqueId":"1772362920.4","callId":"1772362920.4","bridgedFromCallId":"1772362800.3","startTime":"2026-03-01T11:02:00Z","durationSeconds":180,"talkTimeSeconds":170,"from":"102","to":"14155550002",
	           "recording":{"contentType":"audio/wav","content":"{AUDIO}"}}]}`,
	// c4: the same caller again within 24 hours: repeated 1.
	`{"id":"1772442000.5","direction":"inbound","status":"voicemail","callerName":"Bob Caller","callerNumber":"14155550002","calledNumber":"14155550101","dialledNumber":"14155550101",
	  "startTime":"2026-03-02T09:00:00Z","durationSeconds":45,"talkTimeSeconds":40,"numbers":["14155550101"]}`,
	// c5: after New York's switch to daylight time (10:00 EDT).
	`{"id":"1772978400.6","direction":"inbound","status":"answered","callerNumber":"14155550003","calledNumber":"14155550100","dialledNumber":"14155550100",
	  "startTime":"2026-03-08T14:00:00Z","durationSeconds":60,"talkTimeSeconds":50,"numbers":["14155550100"],"callPurpose":"support"}`,
}

const (
	c1 = "1772323200.1"
	c2 = "1772361000.2"
	c3 = "1772362800.3"
	c4 = "1772442000.5"
	c5 = "1772978400.6"
	// The window of March 2026.
	marchStart = 1772323200
	marchEnd   = 1775001600
)

func setupCalls(t *testing.T, engine store.Engine) *callsFixture {
	t.Helper()
	f := setup(t, engine)
	blobs, err := blob.Open(ctx, "mem://")
	must(t, err)
	t.Cleanup(func() { blobs.Close() })
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	svc := calls.New(calls.Config{Store: f.st, Blobs: blobs, PublicURL: srv.URL})
	h = httpapi.New(httpapi.Config{
		Store: f.st, Auth: &auth.Authenticator{Store: f.st}, Calls: svc,
		SMS: sms.New(sms.Config{Store: f.st}), Users: users.New(users.Config{Store: f.st}), Webhooks: webhooks.New(webhooks.Config{Store: f.st}),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	f.url = srv.URL
	cf := &callsFixture{fixture: f, svc: svc, audio: []byte("RIFF\x24\x00\x00\x00WAVEfmt fake audio for the test")}
	b64 := base64.StdEncoding.EncodeToString(cf.audio)
	acme := f.users["Alice"].AccountID
	for _, raw := range testCalls {
		cf.ingest(t, acme, strings.NewReplacer("{USER}", fmt.Sprint(f.users["Alice"].ID), "{AUDIO}", b64).Replace(raw))
	}
	// The other account has a call with c1's id: ids are per account.
	cf.ingest(t, f.users["Dave"].AccountID, `{"id":"1772323200.1","direction":"inbound","status":"answered","callerNumber":"12125550000","startTime":"2026-03-01T00:00:00Z"}`)
	return cf
}

func (f *callsFixture) ingest(t *testing.T, account int64, raw string) {
	t.Helper()
	it, err := calls.Parse(account, []byte(raw))
	must(t, err)
	_, err = f.svc.Ingest(ctx, account, it)
	must(t, err)
}

func forEachCallsEngine(t *testing.T, fn func(t *testing.T, f *callsFixture)) {
	for _, e := range storetest.Engines(t) {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			fn(t, setupCalls(t, e))
		})
	}
}

type callPage struct {
	Data struct {
		Total  int64            `json:"total"`
		Limit  int              `json:"limit"`
		Offset int              `json:"offset"`
		Calls  []map[string]any `json:"calls"`
	} `json:"data"`
}

func ids(calls []map[string]any) []string {
	out := []string{}
	for _, c := range calls {
		out = append(out, c["id"].(string))
	}
	return out
}

func TestCallSearch(t *testing.T) {
	window := fmt.Sprintf(`"start":%d,"end":%d`, marchStart, marchEnd)
	cases := []struct {
		name   string
		body   string
		want   []string
		total  int64 // -1: len(want)
		limit  int
		offset int
	}{
		{"newest first by default", `{` + window + `}`, []string{c5, c4, c3, c2, c1}, -1, 50, 0},
		{"limit and exact total", `{` + window + `,"limit":2}`, []string{c5, c4}, 5, 2, 0},
		{"limit capped at 500", `{` + window + `,"limit":100000}`, []string{c5, c4, c3, c2, c1}, -1, 500, 0},
		{"offset", `{` + window + `,"limit":2,"offset":3}`, []string{c2, c1}, 5, 2, 3},
		{"deep page of a filtered, unaligned window", `{"start":1772323260,"end":1772445600,"limit":1,"offset":1,"filters":{"statuses":["missed","voicemail"]}}`, []string{c2}, 2, 1, 1},
		{"deep page, oldest first", `{"start":1772323260,"end":1772445600,"limit":1,"offset":1,"sort":{"field":"startTime","direction":"asc"}}`, []string{c3}, 3, 1, 1},
		{"offset past the end", `{` + window + `,"offset":9}`, []string{}, 5, 50, 9},
		{"window end is exclusive", fmt.Sprintf(`{"start":%d,"end":%d}`, marchStart, 1772361000), []string{c1}, -1, 50, 0},
		{"direction", `{` + window + `,"direction":"inbound"}`, []string{c5, c4, c2, c1}, -1, 50, 0},
		{"direction and directions intersect", `{` + window + `,"direction":"inbound","filters":{"directions":["outbound"]}}`, []string{}, -1, 50, 0},
		{"statuses", `{` + window + `,"filters":{"statuses":["missed","voicemail"]}}`, []string{c4, c2}, -1, 50, 0},
		{"status and direction", `{` + window + `,"direction":"outbound","filters":{"statuses":["answered"]}}`, []string{c3}, -1, 50, 0},
		{"search names, case-insensitive", `{` + window + `,"filters":{"search":"BOB"}}`, []string{c4, c2}, -1, 50, 0},
		{"search numbers", `{` + window + `,"filters":{"search":"5550002"}}`, []string{c4, c3, c2}, -1, 50, 0},
		{"search dialled number", `{` + window + `,"filters":{"search":"14155550101"}}`, []string{c4}, -1, 50, 0},
		{"numbers normalized", `{` + window + `,"filters":{"numbers":["(415) 555-0100"]}}`, []string{c5, c2, c1}, -1, 50, 0},
		{"numbersExclude", `{` + window + `,"filters":{"numbersExclude":["14155550100"]}}`, []string{c4, c3}, -1, 50, 0},
		{"include then exclude", `{` + window + `,"filters":{"numbers":["14155550100"],"queuesExclude":["support"]}}`, []string{c5, c1}, -1, 50, 0},
		{"extensions", `{` + window + `,"filters":{"extensions":["102"]}}`, []string{c3}, -1, 50, 0},
		{"queues", `{` + window + `,"filters":{"queues":["sales","support"]}}`, []string{c2, c1}, -1, 50, 0},
		{"huntgroups none", `{` + window + `,"filters":{"huntgroups":["hg1"]}}`, []string{}, -1, 50, 0},
		{"duration from", `{` + window + `,"filters":{"duration":{"start":"100"}}}`, []string{c3, c1}, -1, 50, 0},
		{"duration inclusive range", `{` + window + `,"filters":{"duration":{"start":"45","end":"120"}}}`, []string{c5, c4, c1}, -1, 50, 0},
		{"talkTime to", `{` + window + `,"filters":{"talkTime":{"end":"0"}}}`, []string{c2}, -1, 50, 0},
		{"waitTime", `{` + window + `,"filters":{"waitTime":{"start":"1"}}}`, []string{c2, c1}, -1, 50, 0},
		{"timeOfDay UTC", `{` + window + `,"filters":{"timeOfDay":{"start":"10:00","end":"11:00"}}}`, []string{c2}, -1, 50, 0},
		{"timeOfDay end exclusive", `{` + window + `,"filters":{"timeOfDay":{"start":"10:31","end":"11:00"}}}`, []string{}, -1, 50, 0},
		{"timeOfDay across DST in New York", `{` + window + `,"timeZone":"America/New_York","filters":{"timeOfDay":{"start":"10:00","end":"10:01"}}}`, []string{c5}, -1, 50, 0},
		{"timeOfDay across midnight", `{` + window + `,"filters":{"timeOfDay":{"start":"23:00","end":"09:01"}}}`, []string{c4, c1}, -1, 50, 0},
		{"daysOfWeek in time zone", `{` + window + `,"timeZone":"America/New_York","filters":{"daysOfWeek":["sat"]}}`, []string{c1}, -1, 50, 0},
		{"daysOfWeek UTC", `{` + window + `,"filters":{"daysOfWeek":["sun"]}}`, []string{c5, c3, c2, c1}, -1, 50, 0},
		{"daysOfMonth", `{` + window + `,"filters":{"daysOfMonth":[2,8]}}`, []string{c5, c4}, -1, 50, 0},
		{"daysOfMonth in time zone", `{` + window + `,"timeZone":"America/New_York","filters":{"daysOfMonth":[28]}}`, []string{c1}, -1, 50, 0},
		{"users", fmt.Sprintf(`{%s,"filters":{"users":["%d"]}}`, window, 0), nil, -2, 50, 0},
		{"callPurpose", `{` + window + `,"filters":{"callPurpose":["sales"]}}`, []string{c1}, -1, 50, 0},
		{"callPurpose unused value", `{` + window + `,"filters":{"callPurpose":["never-used"]}}`, []string{}, -1, 50, 0},
		{"callSentiment", `{` + window + `,"filters":{"callSentiment":["positive"]}}`, []string{c1}, -1, 50, 0},
		{"sort by duration asc", `{` + window + `,"sort":{"field":"durationSeconds","direction":"asc"}}`, []string{c2, c4, c5, c1, c3}, -1, 50, 0},
		{"sort by callerNumber, ties by id", `{` + window + `,"sort":{"field":"callerNumber"}}`, []string{c5, c4, c2, c1, c3}, -1, 50, 0},
		{"sort by id asc", `{` + window + `,"sort":{"field":"id","direction":"asc"}}`, []string{c1, c2, c3, c4, c5}, -1, 50, 0},
		{"sort by endTime: absent lowest", `{` + window + `,"sort":{"field":"endTime","direction":"asc"}}`, []string{c2, c4, c5, c1, c3}, -1, 50, 0},
		{"oldest first", `{` + window + `,"sort":{"direction":"asc"},"limit":2,"offset":1}`, []string{c2, c3}, 5, 2, 1},
	}
	forEachCallsEngine(t, func(t *testing.T, f *callsFixture) {
		for _, tc := range cases {
			body := tc.body
			want := tc.want
			if tc.total == -2 { // users: Alice's id, known only now
				body = fmt.Sprintf(`{%s,"filters":{"users":["%d"]}}`, window, f.users["Alice"].ID)
				want = []string{c1}
			}
			status, _, b := f.do(t, "POST", "/api/public/v1/calls/search", f.keys["acme"], body)
			if status != 200 {
				t.Errorf("%s: status %d: %s", tc.name, status, b)
				continue
			}
			page := decodeInto[callPage](t, b)
			total := tc.total
			if total < 0 {
				total = int64(len(want))
			}
			if got := ids(page.Data.Calls); !slices.Equal(got, want) || page.Data.Total != total || page.Data.Limit != tc.limit || page.Data.Offset != tc.offset {
				t.Errorf("%s: got %v total %d limit %d offset %d, want %v total %d limit %d offset %d",
					tc.name, got, page.Data.Total, page.Data.Limit, page.Data.Offset, want, total, tc.limit, tc.offset)
			}
		}
		// The other account sees only its own call, under the same id.
		_, _, b := f.do(t, "POST", "/api/public/v1/calls/search", f.keys["beta"], `{`+window+`}`)
		if got := decodeInto[callPage](t, b).Data.Calls; len(got) != 1 || got[0]["callerNumber"] != "12125550000" {
			t.Errorf("beta's search = %v", got)
		}
	})
}

func TestCallSearchInvalid(t *testing.T) {
	window := fmt.Sprintf(`"start":%d,"end":%d`, marchStart, marchEnd)
	cases := []struct{ body, mention string }{
		{`{}`, "start"},
		{fmt.Sprintf(`{"start":%d}`, marchStart), "end"},
		{fmt.Sprintf(`{"start":%d,"end":%d}`, marchStart, marchStart), "end must be after start"},
		{fmt.Sprintf(`{"start":%d,"end":%d}`, marchStart, marchStart+367*86400), "366 days"},
		{`{"start":"1772323200","end":1775001600}`, "start"},
		{`{` + window + `,"limit":0}`, "limit"},
		{`{` + window + `,"offset":-1}`, "offset"},
		{`{` + window + `,"timeZone":"Mars/Olympus"}`, "timeZone"},
		{`{` + window + `,"direction":"sideways"}`, "direction"},
		{`{` + window + `,"filters":{"statuses":["unknown"]}}`, "filters.statuses[0]"},
		{`{` + window + `,"filters":{"statuses":[-1]}}`, "statuses"},
		{`{` + window + `,"filters":{"directions":["in"]}}`, "filters.directions[0]"},
		{`{` + window + `,"filters":{"duration":{"start":"ten"}}}`, "filters.duration.start"},
		{`{` + window + `,"filters":{"waitTime":{"start":"9","end":"3"}}}`, "filters.waitTime"},
		{`{` + window + `,"filters":{"timeOfDay":{"start":"24:00"}}}`, "filters.timeOfDay.start"},
		{`{` + window + `,"filters":{"timeOfDay":{"end":"9am"}}}`, "filters.timeOfDay.end"},
		{`{` + window + `,"filters":{"daysOfWeek":["monday"]}}`, "filters.daysOfWeek[0]"},
		{`{` + window + `,"filters":{"daysOfMonth":[32]}}`, "filters.daysOfMonth[0]"},
		{`{` + window + `,"filters":{"numbers":["not a number"]}}`, "filters.numbers[0]"},
		{`{` + window + `,"filters":{"users":["alice"]}}`, "filters.users[0]"},
		{`{` + window + `,"filters":{"colour":"red"}}`, "filters.colour"},
		{`{` + window + `,"sort":{"field":"price"}}`, "sort.field"},
		{`{` + window + `,"sort":{"direction":"up"}}`, "sort.direction"},
		{`{` + window + `,"extra":1}`, "extra"},
		{`not json`, ""},
	}
	forEachCallsEngine(t, func(t *testing.T, f *callsFixture) {
		for _, tc := range cases {
			status, _, b := f.do(t, "POST", "/api/public/v1/calls/search", f.keys["acme"], tc.body)
			e := decodeInto[errorEnvelope](t, b)
			if status != 400 || e.Error.Type != "invalid_request" || !strings.Contains(e.Error.Message, tc.mention) {
				t.Errorf("%s: %d %s, want 400 invalid_request naming %q", tc.body, status, b, tc.mention)
			}
		}
	})
}

func TestCallDetail(t *testing.T) {
	forEachCallsEngine(t, func(t *testing.T, f *callsFixture) {
		status, _, b := f.do(t, "GET", "/api/public/v1/calls/"+c3, f.keys["acme"], "")
		if status != 200 {
			t.Fatalf("detail: %d %s", status, b)
		}
		var d struct {
			Data struct {
				ID          string           `json:"id"`
				StatusCode  int              `json:"statusCode"`
				Transferred int              `json:"transferred"`
				Legs        []map[string]any `json:"legs"`
			} `json:"data"`
		}
		must(t, json.Unmarshal(b, &d))
		if d.Data.ID != c3 || d.Data.StatusCode != 2 || d.Data.Transferred != 1 || len(d.Data.Legs) != 2 {
			t.Fatalf("detail = %s", b)
		}
		if l := d.Data.Legs[1]; l["bridgedFromCallId"] != c3 || l["uniqueId"] != "1772362920.4" || l["recorded"] != true || l["from"] != "102" {
			t.Errorf("second leg = %v", l)
		}
		if _, ok := d.Data.Legs[0]["bridgedFromCallId"]; ok || d.Data.Legs[0]["recorded"] != false {
			t.Errorf("first leg = %v", d.Data.Legs[0])
		}

		// Derived fields.
		_, _, b = f.do(t, "GET", "/api/public/v1/calls/"+c2, f.keys["acme"], "")
		if got := decodeInto[map[string]map[string]any](t, b)["data"]; got["calledBack"] != c3 || got["repeated"] != 0.0 || got["abandoned"] != true {
			t.Errorf("c2 = %v, want calledBack %s, repeated 0", got, c3)
		}
		_, _, b = f.do(t, "GET", "/api/public/v1/calls/"+c4, f.keys["acme"], "")
		if got := decodeInto[map[string]map[string]any](t, b)["data"]; got["repeated"] != 1.0 || got["calledBack"] != nil {
			t.Errorf("c4 = %v, want repeated 1 and no calledBack", got)
		}

		for _, tc := range []struct {
			key, id string
			status  int
			mention string
		}{
			{"acme", "abc", 400, "unixtime.sequence"},
			{"acme", "1772323200", 400, "unixtime.sequence"},
			{"acme", "1772323200.x", 400, "unixtime.sequence"},
			{"acme", "1.2", 404, ""},
			{"acme", "1772323200.01", 404, ""},
			{"beta", c3, 404, ""}, // another account's call
			{"acme-sms", c3, 403, "reports:read"},
		} {
			status, _, b := f.do(t, "GET", "/api/public/v1/calls/"+tc.id, f.keys[tc.key], "")
			if status != tc.status || !strings.Contains(string(b), tc.mention) {
				t.Errorf("GET %s with %s: %d %s, want %d mentioning %q", tc.id, tc.key, status, b, tc.status, tc.mention)
			}
		}
	})
}

func TestCallRecordingsAndLinks(t *testing.T) {
	forEachCallsEngine(t, func(t *testing.T, f *callsFixture) {
		status, _, b := f.do(t, "GET", "/api/public/v1/calls/"+c3+"/recordings", f.keys["acme"], "")
		if status != 200 {
			t.Fatalf("recordings: %d %s", status, b)
		}
		list := decodeInto[struct {
			Data []map[string]any `json:"data"`
		}](t, b).Data
		if len(list) != 1 || list[0]["uniqueId"] != "1772362920.4" || list[0]["callId"] != "1772362920.4" || list[0]["from"] != "102" {
			t.Fatalf("recordings = %v", list)
		}
		url := list[0]["url"].(string)
		if !strings.HasPrefix(url, f.url+"/recordings/") {
			t.Fatalf("url = %s", url)
		}

		// One leg, by its id; a leg without audio and an unknown leg are 404.
		status, _, b = f.do(t, "GET", "/api/public/v1/calls/"+c3+"/recordings/1772362920.4", f.keys["acme"], "")
		if one := decodeInto[map[string]map[string]any](t, b)["data"]; status != 200 || one["url"] != url {
			t.Errorf("one recording: %d %s", status, b)
		}
		for _, leg := range []string{"1772362800.3", "nope"} {
			if status, _, b := f.do(t, "GET", "/api/public/v1/calls/"+c3+"/recordings/"+leg, f.keys["acme"], ""); status != 404 {
				t.Errorf("leg %s: %d %s, want 404", leg, status, b)
			}
		}
		// A call without recordings: an empty array.
		if status, _, b := f.do(t, "GET", "/api/public/v1/calls/"+c2+"/recordings", f.keys["acme"], ""); status != 200 || !strings.Contains(string(b), `"data":[]`) {
			t.Errorf("no recordings: %d %s", status, b)
		}

		// The link plays without credentials, whole or by range.
		play := func(rng string) (*http.Response, []byte) {
			req, _ := http.NewRequest("GET", url, nil)
			if rng != "" {
				req.Header.Set("Range", rng)
			}
			resp, err := http.DefaultClient.Do(req)
			must(t, err)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp, body
		}
		resp, body := play("")
		if resp.StatusCode != 200 || string(body) != string(f.audio) || resp.Header.Get("Content-Type") != "audio/wav" ||
			resp.Header.Get("Content-Length") != fmt.Sprint(len(f.audio)) || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
			resp.Header.Get("Referrer-Policy") != "no-referrer" || resp.Header.Get("Accept-Ranges") != "bytes" {
			t.Errorf("play: %d %v %q", resp.StatusCode, resp.Header, body)
		}
		resp, body = play("bytes=4-7")
		if resp.StatusCode != 206 || string(body) != string(f.audio[4:8]) || resp.Header.Get("Content-Range") != fmt.Sprintf("bytes 4-7/%d", len(f.audio)) {
			t.Errorf("range: %d %v %q", resp.StatusCode, resp.Header, body)
		}
		// Tampering with any part breaks the signature.
		for _, bad := range []string{
			strings.Replace(url, "/recordings/"+fmt.Sprint(f.users["Alice"].AccountID)+"/", "/recordings/"+fmt.Sprint(f.users["Dave"].AccountID)+"/", 1),
			strings.Replace(url, "1772362920.4", "1772362800.3", 1),
			tamperTail(url),
			url + "/x",
		} {
			resp, err := http.Get(bad)
			must(t, err)
			resp.Body.Close()
			if resp.StatusCode != 404 {
				t.Errorf("tampered %s: %d, want 404", bad, resp.StatusCode)
			}
		}

		// Revoking the call's links: the old link stops, a new one works.
		acme := f.users["Alice"].AccountID
		must(t, f.svc.RevokeLinks(ctx, acme, c3))
		if resp, _ := play(""); resp.StatusCode != 404 {
			t.Errorf("revoked link: %d, want 404", resp.StatusCode)
		}
		_, _, b = f.do(t, "GET", "/api/public/v1/calls/"+c3+"/recordings", f.keys["acme"], "")
		url2 := decodeInto[struct {
			Data []map[string]any `json:"data"`
		}](t, b).Data[0]["url"].(string)
		if url2 == url {
			t.Fatal("the link did not change after revoking")
		}
		url = url2
		if resp, _ := play(""); resp.StatusCode != 200 {
			t.Errorf("new link after revoke: %d", resp.StatusCode)
		}
		// Re-ingesting the call keeps it revoked.

		// Sensitive-content re-verification: every credential refused, links too.
		a, err := f.st.Account(ctx, acme)
		must(t, err)
		a.SensitiveReverify = true
		must(t, f.st.UpdateAccountSettings(ctx, a))
		for _, path := range []string{"/calls/" + c3 + "/recordings", "/calls/" + c3 + "/recordings/1772362920.4", "/calls/" + c1 + "/transcripts"} {
			status, _, b := f.do(t, "GET", "/api/public/v1"+path, f.keys["acme"], "")
			if e := decodeInto[errorEnvelope](t, b); status != 403 || e.Error.Type != "permission_denied" || !strings.Contains(e.Error.Message, "sensitive-content re-verification") {
				t.Errorf("%s with re-verification on: %d %s", path, status, b)
			}
		}
		if resp, _ := play(""); resp.StatusCode != 403 {
			t.Errorf("link with re-verification on: %d, want 403", resp.StatusCode)
		}
		// Call detail is not a recording: still served.
		if status, _, _ := f.do(t, "GET", "/api/public/v1/calls/"+c3, f.keys["acme"], ""); status != 200 {
			t.Errorf("detail with re-verification on: %d", status)
		}
		a.SensitiveReverify = false
		must(t, f.st.UpdateAccountSettings(ctx, a))

		// Rotating the key: every link stops.
		must(t, f.svc.RotateKey(ctx))
		if resp, _ := play(""); resp.StatusCode != 404 {
			t.Errorf("link after rotation: %d, want 404", resp.StatusCode)
		}
	})
}

func TestCallTranscripts(t *testing.T) {
	forEachCallsEngine(t, func(t *testing.T, f *callsFixture) {
		status, _, b := f.do(t, "GET", "/api/public/v1/calls/"+c1+"/transcripts", f.keys["acme"], "")
		var got struct {
			Data []struct {
				UniqueID string                     `json:"uniqueId"`
				Language string                     `json:"language"`
				Segments []domain.TranscriptSegment `json:"segments"`
			} `json:"data"`
		}
		must(t, json.Unmarshal(b, &got))
		if status != 200 || len(got.Data) != 1 || got.Data[0].Language != "en-US" || len(got.Data[0].Segments) != 2 ||
			got.Data[0].Segments[1] != (domain.TranscriptSegment{Speaker: "agent", Channel: 1, StartMs: 1600, EndMs: 2500, Text: "Sure."}) {
			t.Errorf("transcripts: %d %s", status, b)
		}
		if status, _, b := f.do(t, "GET", "/api/public/v1/calls/"+c2+"/transcripts", f.keys["acme"], ""); status != 200 || !strings.Contains(string(b), `"data":[]`) {
			t.Errorf("no transcripts: %d %s", status, b)
		}
		if status, _, _ := f.do(t, "GET", "/api/public/v1/calls/"+c1+"/transcripts", f.keys["beta"], ""); status != 404 {
			// beta has its own c1 without transcripts: 200 and empty, not acme's.
			if status != 200 {
				t.Errorf("beta's c1 transcripts: %d", status)
			}
		}
	})
}

// TestCallPermissions checks both gates: scopes for every credential, and the
// person's role for OAuth tokens.
func TestCallPermissions(t *testing.T) {
	forEachCallsEngine(t, func(t *testing.T, f *callsFixture) {
		acme := f.users["Alice"].AccountID
		token := func(perms string, scopes ...auth.Scope) string {
			p, err := domain.ParsePermissions(perms)
			must(t, err)
			u := storetest.User(t, f.st, acme, &storetest.UserOpts{FirstName: "U", LastName: perms, Permissions: &p})
			tok, err := userAccessToken(ctx, f.st, u.ID, scopes...)
			must(t, err)
			return tok
		}
		noReports := token("users:all", auth.ReportsRead, auth.RecordingsRead)
		reportsOnly := token("reports", auth.ReportsRead, auth.RecordingsRead)
		everything := token("reports,recordings", auth.ReportsRead, auth.RecordingsRead)
		noRecordingScope := token("reports,recordings", auth.ReportsRead)
		search := fmt.Sprintf(`{"start":%d,"end":%d}`, marchStart, marchEnd)
		for _, tc := range []struct {
			name, cred, method, path, body string
			status                         int
			errType                        string
		}{
			{"search without call reports", noReports, "POST", "/calls/search", search, 403, "permission_denied"},
			{"detail without call reports", noReports, "GET", "/calls/" + c3, "", 403, "permission_denied"},
			{"search with call reports", reportsOnly, "POST", "/calls/search", search, 200, ""},
			{"detail with call reports", reportsOnly, "GET", "/calls/" + c3, "", 200, ""},
			{"recordings without allow recordings", reportsOnly, "GET", "/calls/" + c3 + "/recordings", "", 403, "permission_denied"},
			{"transcripts without allow recordings", reportsOnly, "GET", "/calls/" + c1 + "/transcripts", "", 403, "permission_denied"},
			{"recordings with allow recordings", everything, "GET", "/calls/" + c3 + "/recordings", "", 200, ""},
			{"transcripts with allow recordings", everything, "GET", "/calls/" + c1 + "/transcripts", "", 200, ""},
			{"recordings without the scope", noRecordingScope, "GET", "/calls/" + c3 + "/recordings", "", 403, "insufficient_scope"},
			{"key without reports:read", f.keys["acme-sms"], "POST", "/calls/search", search, 403, "insufficient_scope"},
			{"key without recordings:read", f.keys["acme-sms"], "GET", "/calls/" + c3 + "/recordings/1772362920.4", "", 403, "insufficient_scope"},
			{"no credential", "", "GET", "/calls/" + c3, "", 401, "unauthenticated"},
		} {
			status, _, b := f.do(t, tc.method, "/api/public/v1"+tc.path, tc.cred, tc.body)
			if status != tc.status || (tc.errType != "" && decodeInto[errorEnvelope](t, b).Error.Type != tc.errType) {
				t.Errorf("%s: %d %s, want %d %s", tc.name, status, b, tc.status, tc.errType)
			}
		}
	})
}

func TestIngestEndpoint(t *testing.T) {
	forEachCallsEngine(t, func(t *testing.T, f *callsFixture) {
		acme := f.users["Alice"].AccountID
		token, tok, err := auth.NewIngestToken(ctx, f.st, acme, "pbx")
		must(t, err)
		before, err := f.st.Events(ctx, acme, 0, 1000)
		must(t, err)
		last := before[len(before)-1].ID

		one := fmt.Sprintf(`{"id":"1773000000.1","direction":"inbound","status":"answered","callerNumber":"14155550009","startTime":"2026-03-08T20:00:00Z","users":["%d"],
			"legs":[{"uniqueId":"u1","callId":"1773000000.1","startTime":"2026-03-08T20:00:00Z"}],
			"transcripts":[{"uniqueId":"u1","language":"en","segments":[{"speaker":"caller","channel":0,"startMs":0,"endMs":10,"text":"hi"}]}]}`, f.users["Alice"].ID)
		summary := func(b []byte) calls.Summary { return decodeInto[struct{ Data calls.Summary }](t, b).Data }

		status, _, b := f.do(t, "POST", httpapi.IngestPath, token, one)
		if s := summary(b); status != 200 || s.Imported != 1 {
			t.Fatalf("one call: %d %s", status, b)
		}
		status, _, b = f.do(t, "POST", httpapi.IngestPath, token, one)
		if s := summary(b); status != 200 || s.Replaced != 1 {
			t.Errorf("the same call again: %d %s, want replaced", status, b)
		}
		// JSON Lines: a bad line is reported and the rest go in.
		lines := strings.Join([]string{
			`{"id":"1773000100.1","direction":"outbound","status":"missed","startTime":"2026-03-08T20:01:40Z"}`,
			`{"id":"1773000200.1","direction":"inbound","status":"answered","startTime":"not a time"}`,
			``,
			`{"event":"ringing","id":"1773000300.1","direction":"inbound","callerNumber":"14155550009","calledNumber":"14155550100","startTime":"2026-03-08T20:05:00Z"}`,
			`{"id":"1773000400.1","direction":"inbound","status":"voicemail","startTime":"2026-03-08T20:06:40Z"}`,
		}, "\n")
		status, _, b = f.do(t, "POST", httpapi.IngestPath, token, lines)
		s := summary(b)
		if status != 200 || s.Imported != 2 || s.Events != 1 || s.Skipped != 1 || len(s.Problems) != 1 ||
			s.Problems[0].Line != 2 || s.Problems[0].ID != "1773000200.1" || !strings.Contains(s.Problems[0].Reason, "startTime") {
			t.Errorf("JSON Lines: %d %s", status, b)
		}
		// One bad object is the request's error, naming the field.
		status, _, b = f.do(t, "POST", httpapi.IngestPath, token, `{"id":"1773000500.1","direction":"up"}`)
		if e := decodeInto[errorEnvelope](t, b); status != 400 || !strings.Contains(e.Error.Message, "direction") {
			t.Errorf("bad object: %d %s", status, b)
		}

		// Events, in the ingest transactions.
		after, err := f.st.Events(ctx, acme, last, 1000)
		must(t, err)
		var types []string
		for _, e := range after {
			types = append(types, e.Type)
		}
		want := []string{
			"AccountEndedCalls", "UserEndedCalls", "AccountAITranscription", // the call
			"AccountEndedCalls", "UserEndedCalls", "AccountAITranscription", // replaced
		}
		if !slices.Equal(types[:6], want) || !slices.Contains(types, "AccountRealTimeCalls") || len(types) != 9 {
			t.Errorf("event types = %v", types)
		}
		if p := string(after[1].Payload); !strings.Contains(p, `"callId":"1773000000.1"`) || !strings.Contains(p, fmt.Sprintf(`"userId":"%d"`, f.users["Alice"].ID)) {
			t.Errorf("UserEndedCalls payload = %s", p)
		}

		// Credentials: each side refuses the other's.
		for _, tc := range []struct{ name, method, path, cred string }{
			{"public key on ingest", "POST", httpapi.IngestPath, f.keys["acme"]},
			{"no credential on ingest", "POST", httpapi.IngestPath, ""},
			{"unknown ingest token", "POST", httpapi.IngestPath, auth.IngestTokenPrefix + "nope"},
			{"ingest token on the public API", "GET", "/api/public/v1/calls/" + c1, token},
		} {
			status, h, b := f.do(t, tc.method, tc.path, tc.cred, one)
			if status != 401 || decodeInto[errorEnvelope](t, b).Error.Type != "unauthenticated" || h.Get("WWW-Authenticate") == "" {
				t.Errorf("%s: %d %s, want 401", tc.name, status, b)
			}
		}
		must(t, f.st.RevokeIngestToken(ctx, acme, tok.ID))
		if status, _, b := f.do(t, "POST", httpapi.IngestPath, token, one); status != 401 {
			t.Errorf("revoked token: %d %s", status, b)
		}
	})
}

// tamperTail changes the last two characters of a link (its signature's
// end) to two others: a fixed "AA" was the link itself once in 4,096 runs.
func tamperTail(url string) string {
	other := func(c byte) string {
		if c == 'A' {
			return "B"
		}
		return "A"
	}
	n := len(url)
	return url[:n-2] + other(url[n-2]) + other(url[n-1])
}
