package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestCarrierConnections: named carrier connections in the database
// (issue 34). A line that names a Kannel connection sends through it, and
// its inbound texts arrive through the connection's own callback URL; a
// line without one keeps the server's --carrier (the simulator). The CLI
// never prints a secret back, and will not remove a connection a line uses.
// A connection added while the server runs is used within its sync.
func TestCarrierConnections(t *testing.T) {
	t.Parallel()
	db := storetest.DSN(t, store.SQLite)
	acct, key := carrierAccount(t, db)

	var mu sync.Mutex
	var got []url.Values // the sendsms requests the stub Kannel took
	kannel := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Query())
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, "0: Accepted for delivery")
	}))
	t.Cleanup(kannel.Close)
	const secret = "connection-test-secret-1"
	var added map[string]any
	cliJSON(t, db, &added, "carrier", "add", "k1", "--kind", "kannel", "--send-url", kannel.URL+"/cgi-bin/sendsms",
		"--user", "u", "--password", "kannel-password-value", "--secret", secret)
	if s := fmt.Sprint(added); strings.Contains(s, "kannel-password-value") || strings.Contains(s, secret) {
		t.Errorf("carrier add printed a secret: %s", s)
	}
	viaKannel := createLine(t, db, acct, "--number", "4155550100", "--carrier", "k1").Number
	viaSim := createLine(t, db, acct, "--number", "4155550101").Number
	base := startServer(t, db)

	sent := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}
	appAPIKeySend(t, base, key, viaSim, "12125550101", "through the simulator")
	if n := sent(); n != 0 {
		t.Errorf("a line without a connection sent through the connection's Kannel (%d requests)", n)
	}
	appAPIKeySend(t, base, key, viaKannel, "12125550102", "through k1")
	if n := sent(); n != 1 || got[0].Get("text") != "through k1" || got[0].Get("from") != viaKannel || got[0].Get("password") != "kannel-password-value" {
		t.Fatalf("k1's Kannel got %v, want the line's text", got)
	}

	// An inbound text through the connection's callback URL.
	q := url.Values{"secret": {secret}, "from": {"12125550199"}, "to": {viaKannel}, "text": {"hello k1"}, "coding": {"0"}, "charset": {"UTF-8"}, "ts": {fmt.Sprint(time.Now().Unix())}}
	if r := oauthDo(t, http.MethodGet, base+"/carrier/k1/inbound?"+q.Encode(), "", nil); r.status/100 != 2 {
		t.Fatalf("inbound through /carrier/k1: status %d: %s", r.status, r.body)
	}
	if r := request(t, "GET", base+apiPrefix+"/sms/conversations/"+viaKannel+"/12125550199", "Bearer "+key); r.status != 200 || !strings.Contains(string(r.body), "hello k1") {
		t.Fatalf("the inbound text's thread: status %d: %s", r.status, r.body)
	}

	// The list: state, lines, secrets as "set", callback URLs.
	var listed struct{ Carriers []map[string]any }
	cliJSON(t, db, &listed, "carrier", "list", "--public-url", "https://sb.example.com")
	list := listed.Carriers
	if len(list) != 1 || list[0]["state"] != "ready" || fmt.Sprint(list[0]["lines"]) != "["+viaKannel+"]" ||
		fmt.Sprint(list[0]["secrets"]) != "map[password:set secret:set]" || list[0]["inboundUrl"] != "https://sb.example.com/carrier/k1/inbound" {
		t.Errorf("carrier list: %v", list)
	}
	if s := fmt.Sprint(list); strings.Contains(s, "kannel-password-value") || strings.Contains(s, secret) {
		t.Errorf("carrier list printed a secret: %s", s)
	}
	if _, stderr, code := run(t, cliArgs(db, []string{"carrier", "remove", "k1"})...); code == 0 || !strings.Contains(stderr, viaKannel) {
		t.Errorf("removing a connection a line uses: exit %d, %s; want refused naming the line", code, stderr)
	}

	// Disabled: the line's texts are refused, not sent another way.
	cliJSON(t, db, &struct{}{}, "carrier", "set", "k1", "--disabled=true")
	waitFor(t, "the server to see k1 disabled", 10*time.Second, func() bool {
		var l struct{ Carriers []map[string]any }
		cliJSON(t, db, &l, "carrier", "list")
		return l.Carriers[0]["state"] == "disabled"
	})
	r := postJSON(t, base+apiPrefix+"/sms/messages", key, fmt.Sprintf(`{"from": %q, "to": ["12125550103"], "message": "while disabled"}`, viaKannel))
	if r.status/100 == 2 || sent() != 1 {
		t.Errorf("a send on a disabled connection's line: status %d, %d requests to its Kannel; want refused, none", r.status, sent())
	}

	// Moved back to the server's gateway while running, then k1 removed.
	cliJSON(t, db, &struct{}{}, "line", "set", "--account", fmt.Sprint(acct), "--number", viaKannel, "--carrier", "default")
	appAPIKeySend(t, base, key, viaKannel, "12125550104", "through the simulator again")
	cliJSON(t, db, &struct{}{}, "carrier", "remove", "k1")
	if sent() != 1 {
		t.Errorf("the line moved back still sent through k1")
	}
}

// carrierAccount creates the account the carrier tests send from: US
// rates and an API key with every scope.
func carrierAccount(t *testing.T, db string) (acct int64, key string) {
	t.Helper()
	acct = createAccount(t, db, "Acme")
	cliJSON(t, db, &struct{}{}, "rate", "set", "--account", fmt.Sprint(acct), "--prefix", "1", "--sms", "0.0079", "--mms", "0.02")
	return acct, createKey(t, db, acct, "api", "all").Key
}

// waitFor polls cond until it holds, failing the test after bound.
func waitFor(t *testing.T, what string, bound time.Duration, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Since(start) > bound {
			t.Fatalf("waited %v for %s", bound, what)
		}
	}
}
