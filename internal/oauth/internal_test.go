package oauth

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

func TestClientRedirectKeepsRegisteredQuery(t *testing.T) {
	s := New(Config{Issuer: "https://sb.example"})
	for _, tc := range []struct{ uri, want string }{
		{"https://app.example/cb", "https://app.example/cb?code=c1&iss=https%3A%2F%2Fsb.example&state=s+1"},
		{"https://app.example/cb?tenant=b&a=1", "https://app.example/cb?tenant=b&a=1&code=c1&iss=https%3A%2F%2Fsb.example&state=s+1"},
		{"https://app.example/cb?", "https://app.example/cb?code=c1&iss=https%3A%2F%2Fsb.example&state=s+1"},
	} {
		if got := s.clientRedirect(tc.uri, "code", "c1", "state", "s 1", "error_description", ""); got != tc.want {
			t.Errorf("clientRedirect(%q) = %q, want %q", tc.uri, got, tc.want)
		}
	}
}

func TestCookieNameFollowsIssuerScheme(t *testing.T) {
	for issuer, want := range map[string]string{
		"https://sb.example":       "__Host-sb_csrf",
		"https://sb.example/base/": "__Host-sb_csrf",
		"http://127.0.0.1:8080":    "sb_csrf",
	} {
		s := New(Config{Issuer: issuer})
		if s.csrfCookie != want || s.secure != (want != "sb_csrf") {
			t.Errorf("issuer %s: cookie %q (secure %v), want %q", issuer, s.csrfCookie, s.secure, want)
		}
	}
	if s := New(Config{Issuer: "https://sb.example/base/"}); s.basePath != "/base" {
		t.Errorf("basePath = %q, want /base", s.basePath)
	}
}

func TestThrottleGrowsAndForgets(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	th := newThrottle()
	th.now = func() time.Time { return now }
	const attacker, person, other = "192.0.2.1", "198.51.100.7", "203.0.113.9"
	// Each attempt let through counts as a failure until it succeeds.
	for i := range freeUserFailures + 1 {
		if w := th.begin("Amy", attacker); w != 0 {
			t.Fatalf("wait before failure %d = %v, want 0", i+1, w)
		}
	}
	var last time.Duration
	for i := range 10 {
		w := th.begin("amy", attacker)
		if w < last || w > maxWait || w == 0 {
			t.Fatalf("wait after %d extra failures = %v (previous %v), want growing up to %v", i+1, w, last, maxWait)
		}
		last = w
		now = now.Add(w)
		if w := th.begin("AMY", attacker); w != 0 {
			t.Fatalf("after waiting it out: wait %v, want 0", w)
		}
	}
	if last != maxWait {
		t.Fatalf("wait = %v, want capped at %v", last, maxWait)
	}
	// The username is under attack, but the person signing in from an
	// address that never failed for it is let through, and their success
	// does not reset the attacker's counters.
	if w := th.begin("amy", person); w != 0 {
		t.Fatalf("clean address waits %v while the username is attacked, want 0", w)
	}
	th.succeed("amy", person)
	if w := th.begin("amy", attacker); w == 0 {
		t.Fatal("attacker's address let through after the person signed in elsewhere")
	}
	// A new attacking address gets one attempt, then the username's wait.
	if w := th.begin("amy", other); w != 0 {
		t.Fatalf("first attempt from a new address waits %v, want 0", w)
	}
	if w := th.begin("amy", other); w == 0 {
		t.Fatal("second attempt from a new address not throttled by the username's failures")
	}
	// The attacker's address also waits for other usernames (it failed 24 times).
	if w := th.begin("bob", attacker); w == 0 {
		t.Fatal("address not throttled after 24 failures")
	}
	// IPv6 addresses of one /64 share a counter.
	if ipKey("2001:db8::1") != ipKey("2001:db8::ffff") || ipKey("::ffff:192.0.2.1") != ipKey("192.0.2.1") {
		t.Fatal("ipKey does not group a /64 or unmap IPv4")
	}
	now = now.Add(forgetAfter + time.Second)
	if w := th.begin("amy", attacker); w != 0 {
		t.Fatalf("wait after a quiet spell = %v, want 0", w)
	}
	th.succeed("amy", attacker)
	if th.entries[pairKey("amy", attacker)] != nil {
		t.Fatal("pair counter kept after a success")
	}
	for _, k := range []string{ipKey(attacker), userKey("amy")} {
		if e := th.entries[k]; e == nil || e.failures != 0 {
			t.Fatalf("%s after success = %+v, want the attempt taken back", k, e)
		}
	}
}

// TestThrottleHoldsAgainstABurst: attempts made at the same moment, before
// any password check has finished, are let through only up to the free ones
// (plus the one whose wait has not started), not all at once.
func TestThrottleHoldsAgainstABurst(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	th := newThrottle()
	th.now = func() time.Time { return now }
	var wg sync.WaitGroup
	var allowed atomic.Int32
	for range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if th.begin("amy", "192.0.2.1") == 0 {
				allowed.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := allowed.Load(); n != freeUserFailures+1 {
		t.Errorf("%d of 60 simultaneous attempts let through, want %d", n, freeUserFailures+1)
	}
}

func TestLimiterRefillsAndBounds(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	l := newLimiter(Rate{Burst: 2, Every: time.Minute}, Rate{Burst: 3, Every: 10 * time.Second})
	l.now = func() time.Time { return now }
	for i := range 2 {
		if w := l.allow("a"); w != 0 {
			t.Fatalf("a's attempt %d: wait %v, want 0", i+1, w)
		}
	}
	if w := l.allow("a"); w != time.Minute {
		t.Fatalf("a's third attempt: wait %v, want 1m", w)
	}
	now = now.Add(45 * time.Second)
	if w := l.allow("a"); w != 15*time.Second {
		t.Fatalf("a after 45s: wait %v, want 15s", w)
	}
	// The global bucket (3, refilled 4.5 by now but capped) serves b once more.
	if w := l.allow("b"); w != 0 {
		t.Fatalf("b: wait %v, want 0", w)
	}
	if w := l.allow("c"); w != 0 {
		t.Fatalf("c: wait %v, want 0", w)
	}
	if w := l.allow("d"); w != 0 {
		t.Fatalf("d: wait %v, want 0", w)
	}
	if w := l.allow("e"); w != 10*time.Second {
		t.Fatalf("e with the global bucket empty: wait %v, want 10s", w)
	}
	now = now.Add(15 * time.Second)
	if w := l.allow("a"); w != 0 {
		t.Fatalf("a after a minute: wait %v, want 0", w)
	}
	l.refund("a")
	if w := l.allow("a"); w != 0 {
		t.Fatalf("a after a refund: wait %v, want 0", w)
	}

	// The table of addresses is bounded: full buckets are swept, and when
	// every tracked address is still paying off, a new one is not tracked
	// (the global bucket still counts it).
	l = newLimiter(Rate{Burst: 1, Every: time.Hour}, Rate{Burst: 1000, Every: time.Second})
	l.now = func() time.Time { return now }
	l.maxAddrs = 3
	for _, a := range []string{"a", "b", "c", "d"} {
		l.allow(a)
	}
	if len(l.addrs) != 3 || l.addrs["d"] != nil {
		t.Fatalf("tracked %v, want a, b and c only", l.addrs)
	}
	now = now.Add(time.Hour)
	l.allow("e")
	if len(l.addrs) != 1 || l.addrs["e"] == nil {
		t.Fatalf("tracked %v after an hour, want only e", l.addrs)
	}
}

func TestSealedRequestExpires(t *testing.T) {
	st := storetest.Open(t, store.SQLite)
	s := New(Config{Store: st, Issuer: "https://sb.example"})
	now := time.Unix(2_000_000_000, 0)
	p := pendingAuth{ClientID: "c", RedirectURI: "https://app.example/cb", Scopes: []string{"sms:read"}, Challenge: "x",
		CSRFHash: []byte("h"), Expires: now.Add(10 * time.Minute).Unix()}
	v, err := s.sealPending(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.openPending(context.Background(), v, now.Add(10*time.Minute-time.Second))
	if err != nil || got.ClientID != "c" || got.RedirectURI != p.RedirectURI || string(got.CSRFHash) != "h" {
		t.Fatalf("open before expiry = %+v, %v", got, err)
	}
	if _, err := s.openPending(context.Background(), v, now.Add(10*time.Minute)); err != errNotPending {
		t.Fatalf("open at expiry: %v, want errNotPending", err)
	}
	// Two seals of one request differ (random nonce).
	if w, _ := s.sealPending(context.Background(), p); w == v {
		t.Fatal("sealing twice gave the same value")
	}
}

func TestPagesSendHSTSOnlyOverHTTPS(t *testing.T) {
	for issuer, want := range map[string]string{
		"https://sb.example":    "max-age=31536000",
		"http://127.0.0.1:8080": "",
	} {
		s := New(Config{Issuer: issuer})
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/oauth/authorize", nil))
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Fatalf("issuer %s: authorize without parameters answered %d %q, want an HTML page", issuer, w.Code, ct)
		}
		if got := w.Header().Get("Strict-Transport-Security"); got != want {
			t.Errorf("issuer %s: Strict-Transport-Security %q, want %q", issuer, got, want)
		}
	}
}
