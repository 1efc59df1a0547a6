package e2e

import (
	"bytes"
	"net/http"
	"net/url"
	"reflect"
	"testing"
	"time"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/tcpproxy"
)

// Bounds on how a node reacts to its PostgreSQL database going away and
// coming back: readiness is a 2 s ping; a request fails as soon as its
// connection (and a fresh one) does.
const (
	outageReadyBound   = 5 * time.Second
	outageRequestBound = 3 * time.Second
	outageRecoverBound = 10 * time.Second
)

// notifyBound is how long a test waits for a change committed elsewhere (the
// CLI, another node) to reach a running PostgreSQL node's read cache: the
// notification takes well under 100 ms (docs/benchmarks.md, revocation), and
// far longer only when the test machine is overloaded.
const notifyBound = 2 * time.Second

// The database goes away under a running node (every connection closed, new
// ones refused, as when PostgreSQL restarts or fails over): /readyz fails
// within seconds, API requests answer 503 unavailable at once instead of
// hanging or 500, and when the database is back both work again without a
// restart.
func TestDatabaseOutageAnswersUnavailableAndRecovers(t *testing.T) {
	t.Parallel()
	if storetest.PostgresURL(t) == "" {
		t.Skip("needs PostgreSQL")
	}
	db := storetest.DSN(t, store.Postgres)
	account := createAccount(t, db, "Outage Inc")
	createUser(t, db, account, "--first", "Olive", "--last", "Outage")
	key := createKey(t, db, account, "reader", "users:read").Key

	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := tcpproxy.Listen("127.0.0.1:0", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	u.Host = proxy.Addr()
	base := startServer(t, u.String())

	if r := request(t, http.MethodGet, base+"/readyz", ""); r.status != http.StatusOK {
		t.Fatalf("GET /readyz before the outage: status got %d, want 200\nbody: %s", r.status, r.body)
	}
	before := getUsers(t, base, key)
	kept := request(t, http.MethodGet, base+apiPrefix+"/users", "Bearer "+key)

	proxy.Cut()
	took := waitStatus(t, base+"/readyz", http.StatusServiceUnavailable, outageReadyBound)
	t.Logf("GET /readyz answered 503 %v after the database went away", took)
	// The read cache serves GET /users until its notification connection
	// is seen lost, a moment after the cut (at once when the machine is
	// not loaded): until then, the answer kept from before, and nothing
	// else.
	took = waitStatusAllowing(t, base+apiPrefix+"/users", "Bearer "+key, http.StatusServiceUnavailable, kept, outageReadyBound)
	t.Logf("GET /users answered 503 %v after /readyz did", took)
	for range 3 { // each on fresh connections from the pool
		start := time.Now()
		r := request(t, http.MethodGet, base+apiPrefix+"/users", "Bearer "+key)
		took := time.Since(start)
		errorEnvelope(t, "GET /users while the database is away", r, http.StatusServiceUnavailable, "unavailable")
		if took > outageRequestBound {
			t.Errorf("GET /users while the database is away: answered after %v, want within %v", took, outageRequestBound)
		}
	}

	proxy.Restore()
	took = waitStatus(t, base+"/readyz", http.StatusOK, outageRecoverBound)
	t.Logf("GET /readyz answered 200 %v after the database came back", took)
	if after := getUsers(t, base, key); !reflect.DeepEqual(after, before) {
		t.Errorf("GET /users after the database came back: got %+v, want %+v", after, before)
	}
}

// waitStatusAllowing polls GET url with auth until it answers status, and
// returns how long that took; meanwhile only the answer allowed may come,
// status and body. It fails the test if that takes longer than bound.
func waitStatusAllowing(t *testing.T, url, auth string, status int, allowed response, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		r := request(t, http.MethodGet, url, auth)
		switch {
		case r.status == status:
			return time.Since(start)
		case r.status != allowed.status || !bytes.Equal(r.body, allowed.body):
			t.Fatalf("GET %s: %d %s while waiting for %d; only %d %s may come meanwhile", url, r.status, r.body, status, allowed.status, allowed.body)
		case time.Since(start) > bound:
			t.Fatalf("GET %s: status still %d after %v, want %d within %v\nbody: %s", url, r.status, time.Since(start), status, bound, r.body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitStatus polls GET url until it answers status, and returns how long
// that took; it fails the test if that takes longer than bound.
func waitStatus(t *testing.T, url string, status int, bound time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		r := request(t, http.MethodGet, url, "")
		if r.status == status {
			return time.Since(start)
		}
		if time.Since(start) > bound {
			t.Fatalf("GET %s: status still %d after %v, want %d within %v\nbody: %s", url, r.status, time.Since(start), status, bound, r.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
