package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/carrier/smpp/smpptest"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// queueSend posts one text and returns its message id and the answer's
// status: 201 sent, or 202 pending while it waits its turn.
func queueSend(t *testing.T, base, key, from, to, text string) (int64, int) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"from": from, "to": []string{to}, "message": text})
	r := postJSON(t, base+apiPrefix+"/sms/messages", key, string(body))
	var out struct {
		Data struct {
			Messages []struct {
				ID int64 `json:"id"`
			} `json:"messages"`
		} `json:"data"`
	}
	if (r.status != http.StatusCreated && r.status != http.StatusAccepted) || json.Unmarshal(r.body, &out) != nil || len(out.Data.Messages) != 1 {
		t.Fatalf("POST /sms/messages: %d %s", r.status, r.body)
	}
	return out.Data.Messages[0].ID, r.status
}

// submits reads n submit_sm events, sorted by the SMSC's clock.
func submits(t *testing.T, sc *smpptest.SMSC, n int) []map[string]any {
	t.Helper()
	var out []map[string]any
	for range n {
		out = append(out, sc.Next(t, "submit_sm"))
	}
	sort.Slice(out, func(i, j int) bool { return out[i]["at"].(float64) < out[j]["at"].(float64) })
	return out
}

// TestCarrierQueueSMPP: an smpp connection's --throughput spaces its
// submits across the queue; messages still waiting when the server stops
// are sent by the next one, none twice; a refusal of a queued message is
// message.failed, uncharged.
func TestCarrierQueueSMPP(t *testing.T) {
	t.Parallel()
	sc := smpptest.Start(t)
	db := storetest.DSN(t, store.SQLite)
	acct, key := carrierAccount(t, db)
	cliJSON(t, db, &struct{}{}, "carrier", "add", "smsc1", "--kind", "smpp", "--address", sc.Addr, "--system-id", "esme", "--password", "secret",
		"--throughput", "4")
	line := createLine(t, db, acct, "--number", "4155550100", "--carrier", "smsc1").Number
	p, base, _ := startServerProcess(t, db, "--carrier-timeout", "1s")
	sc.Next(t, "bind")
	events := openEvents(t, base, key, "")

	// Eight at once at 4 a second: slots 1.75 s from the first to the last.
	// A loaded machine spreads the submits more, except that one sent late
	// in its slot (the first, say) shortens the span by up to an interval:
	// so at least 1.5 s, where unpaced they would take milliseconds.
	ids := make([]int64, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], _ = queueSend(t, base, key, line, "12125550101", fmt.Sprintf("paced %d", i))
		}()
	}
	wg.Wait()
	got := submits(t, sc, 8)
	if span := time.Duration(got[7]["at"].(float64)-got[0]["at"].(float64)) * time.Millisecond; span < 1500*time.Millisecond {
		t.Errorf("8 submits at --throughput 4 took %v from first to last; want at least 1.5 s", span)
	}
	want := map[int64]bool{}
	for _, id := range ids {
		want[id] = true
	}
	last := events.sentIDs(t, "the paced sends", want)

	// At 1 a second, five sends: the server stops with some still
	// queued; the next server sends them, each once.
	cliJSON(t, db, &struct{}{}, "carrier", "set", "smsc1", "--throughput", "1")
	sc.Next(t, "bind") // rebuilt with its new settings
	texts := map[string]int64{}
	var mu sync.Mutex
	for i := range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := fmt.Sprintf("across a restart %d", i)
			id, _ := queueSend(t, base, key, line, "12125550102", text)
			mu.Lock()
			texts[text] = id
			mu.Unlock()
		}()
	}
	wg.Wait()
	p.stop()
	var list struct{ Carriers []map[string]any }
	cliJSON(t, db, &list, "carrier", "list")
	t.Logf("queued when the server stopped: %v", list.Carriers[0]["queued"])
	_, base, _ = startServerProcess(t, db, "--carrier-timeout", "1s")
	seen := map[string]int{}
	for len(seen) < 5 {
		ev := sc.Next(t, "submit_sm")
		if _, ours := texts[fmt.Sprint(ev["message"])]; ours {
			seen[fmt.Sprint(ev["message"])]++
		}
	}
	events = openEvents(t, base, key, last)
	want = map[int64]bool{}
	for _, id := range texts {
		want[id] = true
	}
	events.sentIDs(t, "the sends across the restart", want)
	// The queue keeps its order, so a text sent twice would have left
	// before this one.
	marker, _ := queueSend(t, base, key, line, "12125550102", "marker")
	if ev := sc.Next(t, "submit_sm"); ev["message"] != "marker" {
		t.Errorf("after the restart's texts, %q left before the marker (%d)", ev["message"], marker)
	}
	for text, n := range seen {
		if n != 1 {
			t.Errorf("%q submitted %d times", text, n)
		}
	}

	// A queued message the SMSC refuses: failed, uncharged, message.failed.
	sc.Do(t, map[string]any{"cmd": "throttle", "n": 1, "status": 0x0B}) // ESME_RINVDSTADR
	body, _ := json.Marshal(map[string]any{"from": line, "to": []string{"12125550103"}, "message": "to a bad number"})
	r := postJSON(t, base+apiPrefix+"/sms/messages", key, string(body))
	if r.status != http.StatusServiceUnavailable && r.status != http.StatusAccepted {
		t.Fatalf("a send the SMSC refuses: %d %s; want 503 (refused within the carrier timeout) or 202", r.status, r.body)
	}
	if ev := sc.Next(t, "submit_sm"); ev["refused"] != float64(0x0B) {
		t.Fatalf("the refused submit: %v", ev)
	}
	deadline := time.After(30 * time.Second)
	for failed := false; !failed; {
		select {
		case ev := <-events.events:
			failed = ev.data.Data.Event == "message.failed"
			if ev.data.Data.Event == "message.sent" && ev.data.Data.MessageID != marker {
				t.Errorf("after the restart's texts, message %d sent again", ev.data.Data.MessageID)
			}
		case <-deadline:
			t.Fatal("no message.failed event for the refused message")
		}
	}
	cliJSON(t, db, &list, "carrier", "list")
	if c := list.Carriers[0]; c["queued"] != float64(0) || c["throughput"] != float64(1) || len(c["binds"].([]any)) != 1 {
		t.Errorf("carrier list after the queue emptied: %v", c)
	}
}

// TestCarrierBindsAcrossNodes: two nodes on one PostgreSQL hold one bind
// between them (--binds 1); a send on the node without it is sent through
// the other; when that node dies, the survivor binds within the lease's
// time and sends itself.
func TestCarrierBindsAcrossNodes(t *testing.T) {
	t.Parallel()
	db := storetest.DSN(t, store.Postgres)
	sc := smpptest.Start(t)
	sc.Do(t, map[string]any{"cmd": "tolerate"}) // the killed node's socket
	acct, key := carrierAccount(t, db)
	cliJSON(t, db, &struct{}{}, "carrier", "add", "smsc1", "--kind", "smpp", "--address", sc.Addr, "--system-id", "esme", "--password", "secret", "--binds", "1")
	line := createLine(t, db, acct, "--number", "4155550100", "--carrier", "smsc1").Number
	a, _, _ := startServerProcess(t, db)
	sc.Next(t, "bind")
	_, baseB, _ := startServerProcess(t, db)
	binds := func() []any {
		var l struct{ Carriers []map[string]any }
		cliJSON(t, db, &l, "carrier", "list")
		return l.Carriers[0]["binds"].([]any)
	}

	events := openEvents(t, baseB, key, "")
	id, _ := queueSend(t, baseB, key, line, "12125550101", "through the other node")
	if ev := sc.Next(t, "submit_sm"); ev["message"] != "through the other node" {
		t.Fatalf("submit_sm: %v", ev)
	}
	last := events.sentIDs(t, "the send on the node without the bind", map[int64]bool{id: true})
	if b := binds(); len(b) != 1 {
		t.Fatalf("binds with two nodes up: %v; want 1", b)
	}
	if r := request(t, "GET", baseB+"/readyz", ""); r.status != 200 || !strings.Contains(string(r.body), `"state":"standby"`) {
		t.Errorf("the node without the bind, /readyz: %d %s; want it ready, smsc1 standby", r.status, r.body)
	}

	// The holder dies without giving its bind up: the survivor takes it
	// once the lease ends.
	a.stopOnce.Do(func() {
		a.cmd.Process.Kill()
		<-a.done
	})
	killed := time.Now()
	ev := sc.Next(t, "bind")
	if at := time.UnixMilli(int64(ev["at"].(float64))); at.Before(killed) {
		t.Fatalf("a second bind at %v, before the holder died at %v", at, killed)
	}
	t.Logf("the survivor bound %v after the holder died", time.Since(killed).Round(100*time.Millisecond))
	events = openEvents(t, baseB, key, last)
	id, _ = queueSend(t, baseB, key, line, "12125550101", "after the failover")
	if ev := sc.Next(t, "submit_sm"); ev["message"] != "after the failover" {
		t.Fatalf("submit_sm: %v", ev)
	}
	events.sentIDs(t, "the send after the failover", map[int64]bool{id: true})
	waitFor(t, "one bind, the survivor's", 10*time.Second, func() bool { return len(binds()) == 1 })
}

// TestCarrierNumberThroughput: a Twilio connection's --number-throughput
// spaces one number's messages, in order, and holds no other number back.
func TestCarrierNumberThroughput(t *testing.T) {
	t.Parallel()
	const sid, token = "AC0123", "twilio-auth-token-value"
	type arrival struct {
		from, body string
		at         time.Time
	}
	var mu sync.Mutex
	var got []arrival
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		got = append(got, arrival{r.PostForm.Get("From"), r.PostForm.Get("Body"), time.Now()})
		n := len(got)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"sid":"SM%032d","status":"queued"}`, n)
	}))
	t.Cleanup(api.Close)
	db := storetest.DSN(t, store.SQLite)
	acct, key := carrierAccount(t, db)
	cliJSON(t, db, &struct{}{}, "carrier", "add", "tw1", "--kind", "twilio", "--account-sid", sid, "--auth-token", token, "--api-base", api.URL,
		"--number-throughput", "2")
	busy := createLine(t, db, acct, "--number", "4155550100", "--carrier", "tw1").Number
	other := createLine(t, db, acct, "--number", "4155550111", "--carrier", "tw1").Number
	// Answered 202 once queued for 0.2 s: the texts are queued one after
	// the other, in order, long before the busy number's last turn.
	base := startServer(t, db, "--carrier-timeout", "200ms")

	events := openEvents(t, base, key, "")
	want := map[int64]bool{}
	for i := range 4 {
		id, _ := queueSend(t, base, key, busy, "12125550101", fmt.Sprintf("turn %d", i))
		want[id] = true
	}
	id, _ := queueSend(t, base, key, other, "12125550101", "another number")
	want[id] = true
	events.sentIDs(t, "the sends at 2 a second from one number", want)
	mu.Lock()
	defer mu.Unlock()
	var turns []arrival
	var otherAt time.Time
	for _, a := range got {
		if a.from == "+"+busy {
			turns = append(turns, a)
		} else {
			otherAt = a.at
		}
	}
	for i, a := range turns {
		if a.body != fmt.Sprintf("turn %d", i) {
			t.Errorf("turn %d: %q; want them in order", i, a.body)
		}
	}
	// Slots 1.5 s from the first to the last; one text sent late in its
	// slot (as in TestCarrierQueueSMPP) shortens that by up to an interval.
	if span := turns[3].at.Sub(turns[0].at); span < time.Second {
		t.Errorf("4 texts from one number at 2 a second took %v from first to last; want at least 1 s", span)
	}
	if !otherAt.Before(turns[3].at) {
		t.Errorf("another number's text waited behind the busy number's (at %v, its last at %v)", otherAt, turns[3].at)
	}
}

// TestCarrierSMSCDropAndThrottle: the SMSC drops the bind, then throttles:
// every text sent meanwhile reaches it once, none lost, none doubled.
func TestCarrierSMSCDropAndThrottle(t *testing.T) {
	t.Parallel()
	sc := smpptest.Start(t)
	db := storetest.DSN(t, store.SQLite)
	acct, key := carrierAccount(t, db)
	cliJSON(t, db, &struct{}{}, "carrier", "add", "smsc1", "--kind", "smpp", "--address", sc.Addr, "--system-id", "esme", "--password", "secret")
	line := createLine(t, db, acct, "--number", "4155550100", "--carrier", "smsc1").Number
	base := startServer(t, db, "--carrier-timeout", "2s")
	sc.Next(t, "bind")
	events := openEvents(t, base, key, "")

	send := func(prefix string, n int) map[int64]bool {
		var mu sync.Mutex
		var wg sync.WaitGroup
		ids := map[int64]bool{}
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id, _ := queueSend(t, base, key, line, "12125550101", fmt.Sprintf("%s %d", prefix, i))
				mu.Lock()
				ids[id] = true
				mu.Unlock()
			}()
		}
		wg.Wait()
		return ids
	}
	taken := map[string]int{}
	expect := func(prefix string, n int) {
		t.Helper()
		for got := 0; got < n; {
			ev := sc.Next(t, "submit_sm")
			if ev["refused"] == nil && strings.HasPrefix(fmt.Sprint(ev["message"]), prefix) {
				taken[fmt.Sprint(ev["message"])]++
				got++
			}
		}
	}

	// The SMSC restarts: the bind drops, and the first bind after it is
	// refused (the SMSC still starting), so the texts are sent while no
	// bind is up. (Texts written before the drop and never answered would
	// be an unknown outcome: pending, never sent twice.)
	sc.Do(t, map[string]any{"cmd": "refusebinds", "n": 1})
	sc.Next(t, "refusing_binds")
	sc.Do(t, map[string]any{"cmd": "drop"})
	sc.Next(t, "bind") // the refused one
	ids := send("during the drop", 4)
	expect("during the drop", 4)
	last := events.sentIDs(t, "the texts sent while the bind was down", ids)

	sc.Do(t, map[string]any{"cmd": "throttle", "n": 3})
	sc.Next(t, "throttling")
	ids = send("throttled", 3)
	expect("throttled", 3)
	events = openEvents(t, base, key, last)
	events.sentIDs(t, "the throttled texts", ids)

	queueSend(t, base, key, line, "12125550101", "marker")
	for {
		ev := sc.Next(t, "submit_sm")
		if ev["message"] == "marker" {
			break
		}
		if ev["refused"] == nil {
			taken[fmt.Sprint(ev["message"])]++
		}
	}
	for text, n := range taken {
		if n != 1 {
			t.Errorf("%q taken by the SMSC %d times", text, n)
		}
	}
}
