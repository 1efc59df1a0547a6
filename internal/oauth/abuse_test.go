package oauth_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/internal/oauth"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

const registration = `{"client_name":"Flood","redirect_uris":["` + redirect + `"]}`

// registerFrom posts a registration with X-Forwarded-For set to from (none
// when empty) and returns the status, Retry-After and the OAuth error code.
func (e *env) registerFrom(t *testing.T, from, body string) (status int, retryAfter, errCode string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+"/api/v1/oauth/register", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if from != "" {
		req.Header.Set("X-Forwarded-For", from)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b := read(t, resp)
	var got struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	json.Unmarshal(b, &got)
	if resp.StatusCode == http.StatusTooManyRequests && (got.Description == "" || resp.Header.Get("Cache-Control") != "no-store") {
		t.Errorf("429 without a description or no-store: %s", b)
	}
	return resp.StatusCode, resp.Header.Get("Retry-After"), got.Error
}

// TestRegisterRateLimitedByDefault: one address registering in a loop gets
// the default burst, then 429 rate_limited with a Retry-After of about a
// minute (one more token), in the RFC 7591 error form.
func TestRegisterRateLimitedByDefault(t *testing.T) {
	e := setup(t, storetest.Open(t, store.SQLite)) // setup registered one already
	accepted := 1
	for range 100 {
		status, retry, code := e.registerFrom(t, "", registration)
		if status == http.StatusCreated {
			accepted++
			continue
		}
		if status != http.StatusTooManyRequests || code != "rate_limited" {
			t.Fatalf("registration %d: got %d %s, want 201 or 429 rate_limited", accepted+1, status, code)
		}
		secs, err := strconv.Atoi(retry)
		if err != nil || secs < 1 || secs > int(oauth.DefaultRegisterPerAddress.Every/time.Second) {
			t.Fatalf("Retry-After = %q, want 1..%v seconds", retry, oauth.DefaultRegisterPerAddress.Every)
		}
		break
	}
	if accepted != oauth.DefaultRegisterPerAddress.Burst {
		t.Fatalf("one address registered %d clients before 429, want %d", accepted, oauth.DefaultRegisterPerAddress.Burst)
	}
}

func TestRegisterLimits(t *testing.T) {
	for _, tc := range []struct {
		name    string
		perAddr oauth.Rate
		global  oauth.Rate
		trusted string
		from    []string // X-Forwarded-For of each attempt after setup's registration
		want    []int
	}{
		{
			name:    "per address, forwarded headers ignored without trusted proxies",
			perAddr: oauth.Rate{Burst: 3, Every: time.Hour}, global: oauth.Rate{Burst: 100, Every: time.Hour},
			from: []string{"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"},
			want: []int{201, 201, 429, 429},
		},
		{
			name:    "per address behind a trusted proxy",
			perAddr: oauth.Rate{Burst: 2, Every: time.Hour}, global: oauth.Rate{Burst: 100, Every: time.Hour},
			trusted: "127.0.0.1",
			// setup's registration came without a header: the proxy's own address.
			from: []string{"192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.2", "198.51.100.9, 192.0.2.2", "192.0.2.2", "127.0.0.1"},
			want: []int{201, 201, 429, 201, 201, 429, 201},
		},
		{
			name:    "a forged left-hand entry does not buy a new address",
			perAddr: oauth.Rate{Burst: 1, Every: time.Hour}, global: oauth.Rate{Burst: 100, Every: time.Hour},
			trusted: "127.0.0.1",
			from:    []string{"192.0.2.1", "203.0.113.1, 192.0.2.1", "203.0.113.2,192.0.2.1"},
			want:    []int{201, 429, 429},
		},
		{
			name:    "global cap across addresses",
			perAddr: oauth.Rate{Burst: 5, Every: time.Hour}, global: oauth.Rate{Burst: 3, Every: time.Hour},
			trusted: "127.0.0.0/8",
			from:    []string{"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"},
			want:    []int{201, 201, 429, 429},
		},
		{
			name:    "IPv6 addresses of one /64 share a bucket",
			perAddr: oauth.Rate{Burst: 2, Every: time.Hour}, global: oauth.Rate{Burst: 100, Every: time.Hour},
			trusted: "127.0.0.1",
			from:    []string{"2001:db8::1", "2001:db8::2", "2001:db8::3", "2001:db8:0:1::1"},
			want:    []int{201, 201, 429, 201},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			e := setup(t, storetest.Open(t, store.SQLite), func(c *oauth.Config) {
				c.RegisterPerAddress, c.RegisterGlobal, c.Registry = tc.perAddr, tc.global, reg
				if tc.trusted != "" {
					p, err := oauth.ParseTrustedProxies(tc.trusted)
					if err != nil {
						t.Fatal(err)
					}
					c.TrustedProxies = p
				}
			})
			limited := 0
			for i, from := range tc.from {
				status, retry, code := e.registerFrom(t, from, registration)
				if status != tc.want[i] {
					t.Fatalf("attempt %d from %q: got %d %s, want %d", i+1, from, status, code, tc.want[i])
				}
				if status == 429 {
					limited++
					if secs, err := strconv.Atoi(retry); err != nil || secs < 1 || secs > 3600 || code != "rate_limited" {
						t.Fatalf("attempt %d: Retry-After %q, error %q; want 1..3600 and rate_limited", i+1, retry, code)
					}
				}
			}
			// A refused registration wrote nothing.
			clients, err := e.st.OAuthClients(ctx)
			if err != nil || len(clients) != 1+len(tc.from)-limited {
				t.Fatalf("stored clients = %d, %v; want %d", len(clients), err, 1+len(tc.from)-limited)
			}
			wantCounter(t, reg, "switchboard_oauth_registrations_total", map[string]float64{
				"registered": float64(1 + len(tc.from) - limited), "rate_limited": float64(limited), "invalid": 0, "error": 0,
			})
		})
	}
}

// TestRegisterRefusalsCostNothing: a registration refused for its metadata
// is counted as invalid and gives its token back (it wrote nothing), so a
// developer fixing their metadata is not locked out.
func TestRegisterRefusalsCostNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := setup(t, storetest.Open(t, store.SQLite), func(c *oauth.Config) {
		c.RegisterPerAddress, c.Registry = oauth.Rate{Burst: 2, Every: time.Hour}, reg
	})
	for range 5 {
		if status, _, code := e.registerFrom(t, "", `{"client_name":"x","redirect_uris":["http://app.example/cb"]}`); status != 400 || code != "invalid_redirect_uri" {
			t.Fatalf("bad registration: %d %s, want 400 invalid_redirect_uri", status, code)
		}
	}
	if status, _, _ := e.registerFrom(t, "", registration); status != 201 {
		t.Fatalf("second good registration: %d, want 201", status)
	}
	if status, _, _ := e.registerFrom(t, "", registration); status != 429 {
		t.Fatalf("third good registration: %d, want 429", status)
	}
	wantCounter(t, reg, "switchboard_oauth_registrations_total", map[string]float64{"registered": 2, "invalid": 5, "rate_limited": 1, "error": 0})
}

func wantCounter(t *testing.T, reg *prometheus.Registry, name string, want map[string]float64) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				got[l.GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s{outcome=%q} = %v (present %v), want %v", name, k, g, ok, v)
		}
	}
}

func TestParseTrustedProxies(t *testing.T) {
	got, err := oauth.ParseTrustedProxies(" 127.0.0.1, 10.0.0.0/8,,::1,::ffff:192.0.2.1 ")
	want := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("192.0.2.1/32")}
	if err != nil || len(got) != len(want) {
		t.Fatalf("ParseTrustedProxies = %v, %v; want %v", got, err, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("prefix %d = %v, want %v", i, got[i], want[i])
		}
	}
	for _, bad := range []string{"localhost", "10.0.0.0/33", "1.2.3"} {
		if _, err := oauth.ParseTrustedProxies(bad); err == nil {
			t.Errorf("ParseTrustedProxies(%q) accepted", bad)
		}
	}
}

// TestAuthorizeWritesNothing: opening the sign-in page, which needs no
// credential, costs no database write; only signing in does.
func TestAuthorizeWritesNothing(t *testing.T) {
	st := storetest.Open(t, store.SQLite)
	e := setup(t, st)
	// The first authorize anywhere creates the shared sealing key, once.
	resp, page := e.get(t, browser(t), e.authorizePath(nil))
	wantStatus(t, resp, page, http.StatusOK)

	before := st.CommitStats()
	for i := range 50 {
		resp, page := e.get(t, browser(t), e.authorizePath(map[string]string{"state": "s" + strconv.Itoa(i)}))
		wantStatus(t, resp, page, http.StatusOK)
	}
	if after := st.CommitStats(); after.Writes != before.Writes {
		t.Fatalf("50 authorize pages wrote %d times, want 0", after.Writes-before.Writes)
	}

	// Signing in writes the request, once.
	b := browser(t)
	before = st.CommitStats()
	e.signIn(t, b, nil)
	if after := st.CommitStats(); after.Writes-before.Writes != 1 {
		t.Fatalf("authorize, sign-in and the consent page wrote %d times, want 1", after.Writes-before.Writes)
	}
}

// TestSignInOnAnotherNode: the sign-in form from one node is accepted by
// another on the same database (the sealing key is shared), through to the
// code exchange.
func TestSignInOnAnotherNode(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		a := setup(t, st)
		b := *a
		other := httptest.NewServer(oauth.New(oauth.Config{Store: st, Issuer: a.url}).Handler())
		t.Cleanup(other.Close)
		b.url = other.URL

		br := browser(t)
		resp, page := a.get(t, br, a.authorizePath(nil))
		wantStatus(t, resp, page, http.StatusOK)
		form := hidden(t, page)
		form.Set("username", "amy")
		form.Set("password", password)
		// The cookie jar keys cookies by host: carry the CSRF cookie over.
		u, _ := url.Parse(other.URL)
		au, _ := url.Parse(a.url)
		br.Jar.SetCookies(u, br.Jar.Cookies(au))
		resp, body := b.postForm(t, br, "/oauth/login", form)
		wantStatus(t, resp, body, http.StatusSeeOther)
		resp, page = b.get(t, br, resp.Header.Get("Location"))
		wantStatus(t, resp, page, http.StatusOK)
		consent := hidden(t, page)
		consent.Set("decision", "approve")
		resp, body = a.postForm(t, br, "/oauth/consent", consent)
		wantStatus(t, resp, body, http.StatusSeeOther)
		back, _ := url.Parse(resp.Header.Get("Location"))
		if status, tok := a.exchange(t, back.Query().Get("code")); status != 200 {
			t.Fatalf("exchange = %d %+v", status, tok)
		}
	})
}

// TestSealedRequestTampering: the sign-in form's request cannot be altered,
// forged or moved to another client, and outlives neither its client nor
// its expiry.
func TestSealedRequestTampering(t *testing.T) {
	st := storetest.Open(t, store.SQLite)
	e := setup(t, st)
	b := browser(t)
	resp, page := e.get(t, b, e.authorizePath(nil))
	wantStatus(t, resp, page, http.StatusOK)
	form := hidden(t, page)
	form.Set("username", "amy")
	form.Set("password", password)
	sealed := form.Get("request")
	flip := []byte(sealed)
	flip[len(flip)-5] = map[bool]byte{true: 'B', false: 'A'}[flip[len(flip)-5] == 'A']
	for name, v := range map[string]string{
		"altered":        string(flip),
		"truncated":      sealed[:len(sealed)-10],
		"made up":        "sbpr_" + strings.Repeat("A", 200),
		"a request id":   strings.Repeat("A", 43),
		"empty":          "",
		"another prefix": "sbxx_" + sealed[5:],
	} {
		f := url.Values{}
		for k, vv := range form {
			f[k] = vv
		}
		f.Set("request", v)
		resp, body := e.postForm(t, b, "/oauth/login", f)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "expired") {
			t.Errorf("%s: got %d, want 400 and the expired page:\n%s", name, resp.StatusCode, body)
		}
	}
	// Another server's key (another database) cannot open it.
	other := setup(t, storetest.Open(t, store.SQLite))
	ou, _ := url.Parse(other.url)
	eu, _ := url.Parse(e.url)
	b.Jar.SetCookies(ou, b.Jar.Cookies(eu))
	resp, body := other.postForm(t, b, "/oauth/login", form)
	wantStatus(t, resp, body, http.StatusBadRequest)

	// The client is deleted before the person signs in.
	resp, body = e.postForm(t, b, "/oauth/login", form)
	wantStatus(t, resp, body, http.StatusSeeOther) // still fine now
	later := time.Now().Add(store.OAuthUnusedClientTTL + time.Hour)
	st.SetClock(func() time.Time { return later })
	// e's client has no grant yet: pruned.
	if n, err := st.PruneUnusedOAuthClients(ctx); err != nil || n == 0 {
		t.Fatalf("prune = %d, %v", n, err)
	}
	st.SetClock(time.Now)
	resp, body = e.postForm(t, b, "/oauth/login", form)
	wantStatus(t, resp, body, http.StatusBadRequest)
}
