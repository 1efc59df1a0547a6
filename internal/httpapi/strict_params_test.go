package httpapi_test

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"switchboard/internal/auth"
	"switchboard/internal/blob"
	"switchboard/internal/calls"
	"switchboard/internal/carrier"
	"switchboard/internal/httpapi"
	"switchboard/internal/inbox"
	"switchboard/internal/search"
	"switchboard/internal/sms"
	"switchboard/internal/store/storetest"
	"switchboard/internal/team"
	"switchboard/internal/users"
	"switchboard/internal/webhooks"
)

// The conventions every operation shares, checked on every route of the
// table: the query string is strict (query.go), and an integer path id that
// is not one gets one answer (pathid.go).

const (
	strictLine = "14155550100" // acme's Main line
	strictPeer = "14155550199" // who texted it
)

// strictFixture is the api_test fixture served by a server with every
// capability, so that its route table is the whole public API, with a
// conversation and a webhook for the paths to name.
type strictFixture struct {
	*fixture
	routes  []httpapi.Route
	webhook string // acme's webhook id
	ingest  string // an ingest token of acme
}

func setupStrict(t *testing.T, f *fixture) *strictFixture {
	t.Helper()
	blobs, err := blob.Open(ctx, "mem://")
	must(t, err)
	t.Cleanup(func() { blobs.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	smsSvc := sms.New(sms.Config{Store: f.st, Log: log})
	srv := httpapi.New(httpapi.Config{
		Store: f.st, Auth: &auth.Authenticator{Store: f.st}, Log: log, SMS: smsSvc,
		Users: users.New(users.Config{Store: f.st}), Webhooks: webhooks.New(webhooks.Config{Store: f.st}),
		Inbox: inbox.New(inbox.Config{Store: f.st, Log: log}), Team: team.New(team.Config{Store: f.st}), Search: search.New(search.Config{Store: f.st}),
		Calls: calls.New(calls.Config{Store: f.st, Blobs: blobs, PublicURL: "https://switchboard.test"}),
	})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	f.url = ts.URL
	sf := &strictFixture{fixture: f, routes: httpapi.APIRoutes(srv)}

	must(t, smsSvc.Inbound(ctx, carrier.Inbound{From: strictPeer, To: strictLine, Text: "hi"}))
	status, _, b := f.do(t, "POST", httpapi.Prefix+"/webhooks", f.keys["acme"], `{"url":"https://hooks.example.com/h","type":"AccountSMS"}`)
	if status != 201 {
		t.Fatalf("create a webhook: %d %s", status, b)
	}
	sf.webhook = strconv.FormatInt(decodeInto[struct{ Data struct{ ID int64 } }](t, b).Data.ID, 10)
	sf.ingest, _, err = auth.NewIngestToken(ctx, f.st, f.users["Alice"].AccountID, "pbx")
	must(t, err)
	return sf
}

func forEachStrict(t *testing.T, fn func(t *testing.T, f *strictFixture)) {
	t.Parallel()
	for _, e := range storetest.Engines(t) {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			fn(t, setupStrict(t, setup(t, e)))
		})
	}
}

var pathParam = regexp.MustCompile(`\{(\w+)\}`)

// Path parameters by kind: integer ids go through the one path-id parser;
// the others have shapes of their own.
var (
	integerIDParams = []string{"id", "deliveryId", "recoverId"}
	otherPathParams = []string{"line", "number", "draftId", "callid", "uniqueid"}
)

// fill puts a valid value in each of path's parameters, values first.
func (f *strictFixture) fill(path string, values map[string]string) string {
	return httpapi.Prefix + pathParam.ReplaceAllStringFunc(path, func(m string) string {
		name := m[1 : len(m)-1]
		if v, ok := values[name]; ok {
			return v
		}
		switch name {
		case "line":
			return strictLine
		case "number":
			return strictPeer
		case "draftId":
			return "d1"
		case "callid":
			return "1772323200.1"
		case "uniqueid":
			return "u1"
		case "id":
			if strings.HasPrefix(path, "/webhooks/") {
				return f.webhook
			}
		}
		return "1"
	})
}

// wantError checks a response is status with type typ and a message holding want.
func wantError(t *testing.T, what string, status int, b []byte, wantStatus int, typ, want string) {
	t.Helper()
	e := decodeInto[errorEnvelope](t, b).Error
	if status != wantStatus || e.Type != typ || !strings.Contains(e.Message, want) {
		t.Errorf("%s: %d %s, want %d %s naming %s", what, status, b, wantStatus, typ, want)
	}
}

// TestListEndpointsRefuseUnknownQuery: every list endpoint answers its
// documented parameters, and refuses one it does not take, or one of its own
// given twice, with 400 naming it (before, the lists outside the inbox
// ignored both).
func TestListEndpointsRefuseUnknownQuery(t *testing.T) {
	forEachStrict(t, func(t *testing.T, f *strictFixture) {
		thread := "/sms/conversations/" + strictLine + "/" + strictPeer
		for _, c := range []struct {
			path string
			// params are the documented parameters, each with a valid value.
			params map[string]string
		}{
			{"/users", nil},
			{"/sms/lines", nil},
			{"/sms/lines/" + strictLine + "/blocked", nil},
			{"/sms/lines/" + strictLine + "/scheduled", nil},
			{"/sms/templates", nil},
			{"/webhooks", map[string]string{"type": "AccountSMS", "enabled": "true"}},
			{"/webhooks/types", nil},
			{"/webhooks/" + f.webhook + "/deliveries", map[string]string{"limit": "10", "before": "5"}},
			{"/webhooks/" + f.webhook + "/deliveries/1/attempts", map[string]string{"limit": "10", "before": "5"}},
			{"/sms/unread", map[string]string{"lines": strictLine, "since": "2020-01-01T00:00:00Z"}},
			{"/sms/conversations", map[string]string{"lines": strictLine, "unread": "true", "unresolved": "true",
				"assignedToMe": "false", "unassigned": "true", "limit": "10", "offset": "0"}},
			{thread, map[string]string{"markRead": "false", "groupParticipants": strictPeer, "limit": "10", "offset": "0"}},
			{thread + "/comments", map[string]string{"groupParticipants": strictPeer}},
		} {
			path := httpapi.Prefix + c.path
			key := f.keys["acme"]
			// The documented parameters are taken (the delivery of the
			// attempts list does not exist: 404, not 400).
			all := url.Values{}
			for name, v := range c.params {
				all.Set(name, v)
			}
			if status, _, b := f.do(t, "GET", path+"?"+all.Encode(), key, ""); status != 200 && !(status == 404 && strings.Contains(c.path, "/attempts")) {
				t.Errorf("GET %s?%s: %d %s, want its documented parameters taken", c.path, all.Encode(), status, b)
			}
			status, _, b := f.do(t, "GET", path+"?bogus=1", key, "")
			wantError(t, "GET "+c.path+"?bogus=1", status, b, 400, "invalid_request", `"bogus"`)
			status, _, b = f.do(t, "GET", path+"?"+all.Encode()+"&Limit=1", key, "")
			wantError(t, "GET "+c.path+" with Limit", status, b, 400, "invalid_request", `"Limit"`)
			for name, v := range c.params {
				q := url.Values{name: {v, v}}.Encode()
				status, _, b := f.do(t, "GET", path+"?"+q, key, "")
				wantError(t, "GET "+c.path+"?"+q, status, b, 400, "invalid_request", name+" is given 2 times")
			}
		}
	})
}

// TestEveryOperationRefusesUnknownQuery walks the route table: every
// operation, whatever its method, refuses a query parameter it does not take
// before anything else about the request is looked at, and so do the
// OpenAPI document and the ingest endpoint outside the table.
func TestEveryOperationRefusesUnknownQuery(t *testing.T) {
	forEachStrict(t, func(t *testing.T, f *strictFixture) {
		if len(f.routes) < 50 {
			t.Fatalf("%d routes in the table; want the whole public API", len(f.routes))
		}
		for _, r := range f.routes {
			what := r.Method + " " + r.Path
			status, _, b := f.do(t, r.Method, f.fill(r.Path, nil)+"?bogus=1", f.keys["acme"], "")
			wantError(t, what+"?bogus=1", status, b, 400, "invalid_request", `"bogus"`)
			for _, name := range r.Query {
				status, _, b := f.do(t, r.Method, f.fill(r.Path, nil)+"?"+name+"=1&"+name+"=1", f.keys["acme"], "")
				wantError(t, what+" with "+name+" twice", status, b, 400, "invalid_request", name+" is given 2 times")
			}
		}
		status, _, b := f.do(t, "GET", httpapi.Prefix+"/openapi.json?bogus=1", "", "")
		wantError(t, "GET /openapi.json?bogus=1", status, b, 400, "invalid_request", `"bogus"`)
		if status, _, b := f.do(t, "GET", httpapi.Prefix+"/openapi.json", "", ""); status != 200 {
			t.Errorf("GET /openapi.json: %d %.200s", status, b)
		}
		status, _, b = f.do(t, "POST", httpapi.IngestPath+"?bogus=1", f.ingest, `{"id":"1773000000.1","direction":"inbound","status":"answered","startTime":"2026-03-08T20:00:00Z"}`)
		wantError(t, "POST ingest?bogus=1", status, b, 400, "invalid_request", `"bogus"`)
	})
}

// TestMalformedPathIDsAreNotFound walks the route table: an integer id in a
// path that is not a positive integer gets the one answer, 404 not_found
// naming the shape, on every route and in every position (the other
// segments valid, with a valid body where the operation takes one).
func TestMalformedPathIDsAreNotFound(t *testing.T) {
	// The operations with an id that take a body; the others take none.
	bodies := map[string]string{
		"PUT /sms/templates/{id}":     `{"title":"t","body":"x"}`,
		"PUT /webhooks/{id}":          `{"name":"n"}`,
		"PATCH /webhooks/{id}":        `{"name":"n"}`,
		"POST /webhooks/{id}/recover": `{"since":"2026-01-01T00:00:00Z"}`,
	}
	forEachStrict(t, func(t *testing.T, f *strictFixture) {
		checked := 0
		for _, r := range f.routes {
			what := r.Method + " " + r.Path
			for _, m := range pathParam.FindAllStringSubmatch(r.Path, -1) {
				name := m[1]
				if !slices.Contains(integerIDParams, name) {
					if !slices.Contains(otherPathParams, name) {
						t.Errorf("%s: path parameter {%s} is neither an integer id nor a known shape; classify it here", what, name)
					}
					continue
				}
				for _, bad := range []string{"abc", "0", "-1", "1.5", "99999999999999999999"} {
					path := f.fill(r.Path, map[string]string{name: bad})
					status, _, b := f.do(t, r.Method, path, f.keys["acme"], bodies[what])
					wantError(t, what+" with {"+name+"} = "+bad, status, b, 404, "not_found", "ids are positive integers")
				}
				checked++
			}
		}
		if checked < 20 {
			t.Errorf("%d id segments checked; the table has more", checked)
		}
	})
}
