package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"switchboard/internal/apitest"
	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/httpapi"
	"switchboard/internal/sms"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/users"
	"switchboard/internal/webhooks"
)

var ctx = context.Background()

// fixture is a running server over a real store with two accounts.
type fixture struct {
	url    string
	client *http.Client
	st     *store.Store
	keys   map[string]string // name → secret
	users  map[string]domain.User
	// metrics is the server's registry, served only on the private listener.
	metrics *prometheus.Registry
}

// scrape returns the metrics as Prometheus would read them from the
// private listener.
func (f *fixture) scrape(t *testing.T) string {
	t.Helper()
	w := httptest.NewRecorder()
	promhttp.HandlerFor(f.metrics, promhttp.HandlerOpts{}).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return w.Body.String()
}

func setup(t *testing.T, engine store.Engine) *fixture {
	t.Helper()
	st := storetest.Open(t, engine)
	f := &fixture{st: st, keys: map[string]string{}, users: map[string]domain.User{}, metrics: prometheus.NewRegistry()}

	acme := storetest.Account(t, st, &storetest.AccountOpts{Name: "Acme Corp"})
	beta := storetest.Account(t, st, &storetest.AccountOpts{Name: "Beta LLC"})

	for _, u := range []struct {
		account int64
		opts    storetest.UserOpts
	}{
		{acme.ID, storetest.UserOpts{FirstName: "Alice", LastName: "Smith", Username: "alice", Extensions: []string{"101"}, Fill: func(u *domain.User) {
			u.Email, u.TimeZone, u.Extension = "alice@acme.test", "America/New_York", "101"
		}}},
		{acme.ID, storetest.UserOpts{FirstName: "Bob", LastName: "Jones", Fill: func(u *domain.User) {
			u.Company, u.Numbers = "Jones Consulting", []string{"14155550101"}
		}}},
		{acme.ID, storetest.UserOpts{FirstName: "Carol", LastName: "Adams"}},
		{beta.ID, storetest.UserOpts{FirstName: "Dave", LastName: "Other"}},
	} {
		f.users[u.opts.FirstName] = storetest.User(t, st, u.account, &u.opts)
	}
	storetest.Line(t, st, acme.ID, &storetest.LineOpts{Number: "14155550101", Name: "Bob's line", UserIDs: []int64{f.users["Bob"].ID}, Bulk: true})
	storetest.Line(t, st, acme.ID, &storetest.LineOpts{Number: "14155550100", Name: "Main"})
	storetest.Line(t, st, acme.ID, &storetest.LineOpts{Number: "14155550102", Name: "Fax", NoSMS: true})
	storetest.Line(t, st, beta.ID, &storetest.LineOpts{Number: "12125550100"})
	_, f.keys["acme"] = storetest.Key(t, st, acme.ID)
	_, f.keys["acme-sms"] = storetest.Key(t, st, acme.ID, auth.SMSRead)
	_, f.keys["beta"] = storetest.Key(t, st, beta.ID)
	var revoked int64
	revoked, f.keys["revoked"] = storetest.Key(t, st, acme.ID)
	must(t, st.RevokeAPIKey(ctx, acme.ID, revoked))

	srv := httptest.NewServer(httpapi.New(httpapi.Config{
		Store:    st,
		Auth:     &auth.Authenticator{Store: st},
		SMS:      sms.New(sms.Config{Store: st}),
		Users:    users.New(users.Config{Store: st}),
		Webhooks: webhooks.New(webhooks.Config{Store: st}),
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Registry: f.metrics,
	}))
	t.Cleanup(srv.Close)
	f.url = srv.URL
	f.client = apitest.Client(t)
	return f
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// do sends a request with an optional bearer key and returns status, headers and body.
func (f *fixture) do(t *testing.T, method, path, key, body string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.url+path, rd)
	must(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := f.client.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, resp.Header, b
}

type errorEnvelope struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Scope   string `json:"scope"`
	} `json:"error"`
}

func decodeInto[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

func forEachEngine(t *testing.T, fn func(t *testing.T, f *fixture)) {
	for _, e := range storetest.Engines(t) {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			fn(t, setup(t, e))
		})
	}
}

func TestListUsers(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		status, _, body := f.do(t, "GET", "/api/public/v1/users", f.keys["acme"], "")
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		got := decodeInto[struct {
			Data []map[string]any `json:"data"`
		}](t, body).Data
		var names, companies []string
		for _, u := range got {
			names = append(names, u["lastName"].(string))
			companies = append(companies, u["company"].(string))
		}
		if want := []string{"Adams", "Jones", "Smith"}; !slices.Equal(names, want) {
			t.Errorf("order = %v, want %v", names, want)
		}
		if want := []string{"Acme Corp", "Jones Consulting", "Acme Corp"}; !slices.Equal(companies, want) {
			t.Errorf("companies = %v, want %v", companies, want)
		}
		alice := got[2]
		if alice["username"] != "alice" || alice["email"] != "alice@acme.test" || alice["timeZone"] != "America/New_York" {
			t.Errorf("alice = %v", alice)
		}
		if exts, _ := alice["extensions"].([]any); len(exts) != 1 || exts[0] != "101" {
			t.Errorf("alice extensions = %v, want [101]", alice["extensions"])
		}
		// A user created without a zone still has an IANA zone name.
		if tz := got[0]["timeZone"]; tz != "UTC" {
			t.Errorf("timeZone of a user created without one = %v, want UTC", tz)
		}

		// The other account sees only its own user.
		_, _, body = f.do(t, "GET", "/api/public/v1/users", f.keys["beta"], "")
		beta := decodeInto[struct {
			Data []map[string]any `json:"data"`
		}](t, body).Data
		if len(beta) != 1 || beta[0]["firstName"] != "Dave" || beta[0]["company"] != "Beta LLC" {
			t.Errorf("beta users = %v", beta)
		}
	})
}

func TestListLines(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		status, _, body := f.do(t, "GET", "/api/public/v1/sms/lines", f.keys["acme-sms"], "")
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		type line struct {
			Number      string  `json:"number"`
			Name        string  `json:"name"`
			UserIDs     []int64 `json:"userIds"`
			BulkEnabled bool    `json:"bulkEnabled"`
		}
		got := decodeInto[struct{ Data []line }](t, body).Data
		want := []line{
			{Number: "14155550100", Name: "Main", UserIDs: []int64{}},
			{Number: "14155550101", Name: "Bob's line", UserIDs: []int64{f.users["Bob"].ID}, BulkEnabled: true},
		}
		if len(got) != len(want) {
			t.Fatalf("lines = %+v, want %+v", got, want)
		}
		for i := range want {
			if got[i].Number != want[i].Number || got[i].Name != want[i].Name || !slices.Equal(got[i].UserIDs, want[i].UserIDs) || got[i].BulkEnabled != want[i].BulkEnabled {
				t.Errorf("line %d = %+v, want %+v", i, got[i], want[i])
			}
		}
		if !strings.Contains(string(body), `"userIds":[]`) {
			t.Errorf("unassigned line must report userIds as [], body %s", body)
		}
	})
}

func TestAuthErrors(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		for _, tc := range []struct {
			name, path, header, wantType, wantScope string
			wantStatus                              int
		}{
			{"no credential", "/users", "", "unauthenticated", "", 401},
			{"basic scheme", "/users", "Basic YWxhZGRpbjpvcGVuc2VzYW1l", "unauthenticated", "", 401},
			{"empty bearer", "/users", "Bearer ", "unauthenticated", "", 401},
			{"unknown key", "/users", "Bearer sbk_nottherightkeyatall", "unauthenticated", "", 401},
			{"garbage token", "/sms/lines", "Bearer abc.def", "unauthenticated", "", 401},
			{"revoked key", "/users", "Bearer " + f.keys["revoked"], "unauthenticated", "", 401},
			{"lowercase scheme works", "/users", "bearer " + f.keys["acme"], "", "", 200},
			{"missing scope", "/users", "Bearer " + f.keys["acme-sms"], "insufficient_scope", "users:read", 403},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req, _ := http.NewRequest("GET", f.url+"/api/public/v1"+tc.path, nil)
				if tc.header != "" {
					req.Header.Set("Authorization", tc.header)
				}
				resp, err := f.client.Do(req)
				must(t, err)
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.wantStatus {
					t.Fatalf("status = %d, want %d (%s)", resp.StatusCode, tc.wantStatus, body)
				}
				if tc.wantStatus == 200 {
					return
				}
				e := decodeInto[errorEnvelope](t, body)
				if e.Error.Type != tc.wantType || e.Error.Message == "" || e.Error.Scope != tc.wantScope {
					t.Errorf("error = %+v, want type %s scope %q", e.Error, tc.wantType, tc.wantScope)
				}
				if tc.wantStatus == 401 {
					wantScope := "users:read"
					if tc.path == "/sms/lines" {
						wantScope = "sms:read"
					}
					ch := resp.Header.Get("WWW-Authenticate")
					for _, part := range []string{`Bearer realm="switchboard"`, `error="invalid_token"`, `scope="` + wantScope + `"`} {
						if !strings.Contains(ch, part) {
							t.Errorf("WWW-Authenticate = %q, missing %s", ch, part)
						}
					}
				}
			})
		}
	})
}

// Concurrent refusals on endpoints of different scopes each name their own
// endpoint's scope. The middleware once wrote the scope into a shared error
// value, so parallel 401s raced (go test -race catches the write; the check
// below catches a wrong challenge).
func TestChallengeScopeUnderConcurrency(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		paths := map[string]string{"/users": "users:read", "/sms/lines": "sms:read", "/webhooks": "webhooks:read", "/sms/unread": "messages:read"}
		bearers := []string{"sbk_unknownkey", "sbat_unknowntoken", "sbit_ingestonly", "garbage"}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var wrong []string
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range 25 {
					for path, scope := range paths {
						req, _ := http.NewRequest("GET", f.url+"/api/public/v1"+path, nil)
						req.Header.Set("Authorization", "Bearer "+bearers[(i+j)%len(bearers)])
						resp, err := f.client.Do(req)
						if err != nil {
							t.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || !strings.Contains(ch, `scope="`+scope+`"`) {
							mu.Lock()
							wrong = append(wrong, fmt.Sprintf("%s: %d %s", path, resp.StatusCode, ch))
							mu.Unlock()
						}
					}
				}
			}()
		}
		wg.Wait()
		if len(wrong) > 0 {
			t.Errorf("%d of %d refusals named the wrong scope, e.g. %s", len(wrong), 16*25*len(paths), wrong[0])
		}
	})
}

// Every response says its type is not to be guessed, and no API answer (some
// carry a webhook secret or signed links) may be kept by a cache.
func TestSecurityHeaders(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		for _, tc := range []struct {
			method, path, key, body string
			noStore                 bool
		}{
			{"GET", "/healthz", "", "", false},
			{"GET", "/api/public/v1/openapi.json", "", "", false},
			{"GET", "/api/public/v1/users", f.keys["acme"], "", true},
			{"GET", "/api/public/v1/users", "", "", true},
			{"POST", "/api/public/v1/webhooks", f.keys["acme"], `{"name":"n","url":"https://example.com/h","type":"AccountSMS"}`, true},
			{"GET", "/api/public/v1/nope", f.keys["acme"], "", true},
		} {
			_, h, _ := f.do(t, tc.method, tc.path, tc.key, tc.body)
			if got := h.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("%s %s: X-Content-Type-Options %q, want nosniff", tc.method, tc.path, got)
			}
			if got := h.Get("Cache-Control"); tc.noStore && got != "no-store" {
				t.Errorf("%s %s: Cache-Control %q, want no-store", tc.method, tc.path, got)
			}
		}
	})
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	f := setup(t, store.SQLite)
	status, h, body := f.do(t, "GET", "/api/public/v1/nope", f.keys["acme"], "")
	if e := decodeInto[errorEnvelope](t, body); status != 404 || e.Error.Type != "not_found" {
		t.Errorf("unknown route: %d %s", status, body)
	}
	status, h, body = f.do(t, "DELETE", "/api/public/v1/users", f.keys["acme"], "")
	if e := decodeInto[errorEnvelope](t, body); status != 405 || e.Error.Type != "invalid_request" || !strings.Contains(h.Get("Allow"), "GET") {
		t.Errorf("wrong method: %d %v %s", status, h.Get("Allow"), body)
	}
	status, _, body = f.do(t, "POST", "/api/public/v1/sms/lines", "", `{}`)
	if status != 405 {
		t.Errorf("wrong method without credential: %d %s", status, body)
	}
}

func TestRequestID(t *testing.T) {
	f := setup(t, store.SQLite)
	req, _ := http.NewRequest("GET", f.url+"/api/public/v1/users", nil)
	req.Header.Set("X-Request-Id", "trace-123")
	resp, err := f.client.Do(req)
	must(t, err)
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); got != "trace-123" {
		t.Errorf("request id = %q, want the caller's trace-123", got)
	}
	req.Header.Set("X-Request-Id", "bad id with spaces")
	resp, err = f.client.Do(req)
	must(t, err)
	resp.Body.Close()
	if got := resp.Header.Get("X-Request-Id"); got == "" || strings.Contains(got, " ") {
		t.Errorf("request id = %q, want a generated one", got)
	}
}

func TestOpenAPIServedAndOperations(t *testing.T) {
	f := setup(t, store.SQLite)
	status, _, body := f.do(t, "GET", "/api/public/v1/openapi.json", "", "")
	doc := decodeInto[map[string]any](t, body)
	if status != 200 || doc["openapi"] != "3.0.3" {
		t.Fatalf("openapi.json: %d %.200s", status, body)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(f.url + path)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s = %d", path, resp.StatusCode)
		}
	}
	if b := f.scrape(t); !strings.Contains(b, `switchboard_http_requests_total{route="GET /api/public/v1/openapi.json",status="200"} 1`) {
		t.Errorf("metrics missing request count:\n%s", b)
	}
	// The public listener does not serve metrics or profiles: 404 in the
	// error envelope, like any unknown path.
	for _, path := range []string{"/metrics", "/debug/pprof/"} {
		resp, err := http.Get(f.url + path)
		must(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), `"not_found"`) || strings.Contains(string(b), "switchboard_") {
			t.Errorf("GET %s on the public listener: %d %s, want 404 not_found", path, resp.StatusCode, b)
		}
	}
}

// lockedBuffer is a log destination safe to read while the server writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestAccessLogRedactsMediaNames(t *testing.T) {
	var logs lockedBuffer
	st := storetest.Open(t, store.SQLite)
	srv := httptest.NewServer(httpapi.New(httpapi.Config{
		Store:    st,
		Auth:     &auth.Authenticator{Store: st},
		SMS:      sms.New(sms.Config{Store: st}),
		Users:    users.New(users.Config{Store: st}),
		Webhooks: webhooks.New(webhooks.Config{Store: st}),
		Log:      slog.New(slog.NewTextHandler(&logs, nil)),
		Media:    http.NotFoundHandler(),
	}))
	defer srv.Close()
	const secret = "AAAAsecretsecretsecretsecretsecretsecretAAA.png"
	// The canonical path, and two that the router redirects there (the
	// access line for those is written for the path as sent).
	for i, p := range []string{"/media/" + secret + "?q=1", "//media/" + secret, "/x/../media/" + secret} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		must(t, err)
		// Raw, so that no client cleans the path first.
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", p)
		io.Copy(io.Discard, conn)
		conn.Close()
		// The access line is written once the handler returns, which may be
		// after the client has the response.
		apitest.Eventually(t, fmt.Sprintf("access line %d", i+1), func() bool { return strings.Count(logs.String(), "msg=http") > i })
	}
	if strings.Contains(logs.String(), "secretsecret") || strings.Count(logs.String(), "/media/[redacted]") != 3 {
		t.Errorf("access log must redact media names however the path is written; got:\n%s", logs.String())
	}
}

// TestOpenAPICredentialOptionalButChecked: the description needs no
// credential, but a credential that is sent is checked.
func TestOpenAPICredentialOptionalButChecked(t *testing.T) {
	t.Parallel()
	f := setup(t, store.SQLite)
	for _, tc := range []struct {
		name, key string
		want      int
	}{
		{"none", "", 200},
		{"valid key", f.keys["acme"], 200},
		{"key without the usual scopes", f.keys["acme-sms"], 200},
		{"revoked key", f.keys["revoked"], 401},
		{"unknown key", "sk_nope", 401},
	} {
		status, h, body := f.do(t, "GET", "/api/public/v1/openapi.json", tc.key, "")
		if status != tc.want {
			t.Errorf("%s: got %d %.200s, want %d", tc.name, status, body, tc.want)
		}
		if tc.want == 401 && (h.Get("WWW-Authenticate") == "" || !strings.Contains(string(body), `"unauthenticated"`)) {
			t.Errorf("%s: got %v %s, want WWW-Authenticate and type unauthenticated", tc.name, h, body)
		}
	}
}
