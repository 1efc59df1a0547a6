package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/money"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/tcpproxy"
)

// TestScheduledMessageThroughTheBinary schedules a text a few seconds ahead
// on a running server, raises the rate, and checks that the carrier gets it
// exactly once and that it is charged the price fixed when it was scheduled.
func TestScheduledMessageThroughTheBinary(t *testing.T) {
	engines(t, func(t *testing.T, db string) {
		fake := newCrashKannel(t)
		c := crashProvision(t, db, fake)
		key := createKey(t, db, c.account, "scheduler", "sms:send,sms:read").Key
		c.launch(t, true)
		client := crashClient(t)
		call := func(method, path string, body any) (int, []byte) {
			t.Helper()
			var rd io.Reader
			if body != nil {
				b, _ := json.Marshal(body)
				rd = bytes.NewReader(b)
			}
			req, err := http.NewRequest(method, c.baseURL()+apiPrefix+path, rd)
			must(t, err)
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			must(t, err)
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			must(t, err)
			return resp.StatusCode, raw
		}
		type scheduled struct {
			ID    int64        `json:"id"`
			Price money.Micros `json:"price"`
		}

		sendAt := time.Now().Add(3 * time.Second).UTC()
		status, raw := call("POST", "/sms/lines/"+c.from+"/scheduled", map[string]any{
			"to": []string{"+1 (415) 555-1234"}, "message": "see you at 10", "sendAt": sendAt.Format(time.RFC3339Nano)})
		var created struct{ Data scheduled }
		if status != 201 || json.Unmarshal(raw, &created) != nil || created.Data.Price != crashSMSRate {
			t.Fatalf("schedule: %d %s", status, raw)
		}
		// The rate changes before it is sent: it is still charged the fixed price.
		var rate struct{}
		cliJSON(t, db, &rate, "rate", "set", "--account", fmt.Sprint(c.account), "--prefix", "1", "--sms", "0.05", "--mms", "0.2")
		status, raw = call("GET", "/sms/lines/"+c.from+"/scheduled", nil)
		var list struct{ Data []scheduled }
		if status != 200 || json.Unmarshal(raw, &list) != nil || len(list.Data) != 1 || list.Data[0].ID != created.Data.ID {
			t.Fatalf("list before: %d %s", status, raw)
		}

		st := crashOpenStore(t, db)
		crashWaitFor(t, "the scheduled message is sent and its receipt stored", func() string {
			if s := fake.state(); len(s.accepted) != 1 {
				return fmt.Sprintf("the carrier accepted %d messages", len(s.accepted))
			}
			return crashSettled(st, fake)
		})
		if time.Now().Before(sendAt) {
			t.Errorf("sent before its time %s", sendAt)
		}
		s := fake.state()
		for id, n := range s.calls {
			if n != 1 || s.accepted[id] != "see you at 10" {
				t.Errorf("carrier: message %d called %d times, text %q", id, n, s.accepted[id])
			}
		}
		if len(s.problems) > 0 {
			t.Errorf("carrier problems: %v", s.problems)
		}
		total, n, err := st.LedgerTotal(context.Background(), c.account)
		if err != nil || n != 1 || total != int64(crashSMSRate) {
			t.Errorf("ledger: %d in %d charges (%v), want one charge of %d", total, n, err, crashSMSRate)
		}
		status, raw = call("GET", "/sms/lines/"+c.from+"/scheduled", nil)
		if status != 200 || json.Unmarshal(raw, &list) != nil || len(list.Data) != 0 {
			t.Errorf("list after: %d %s", status, raw)
		}
	})
}

// TestScheduledTwoServersOneKilled runs two servers on one PostgreSQL
// database with 1,000 messages due in the same second, kills one with
// SIGKILL while they are being sent, and checks at the carrier that every
// message arrives exactly once: the killed server's claimed rows come back
// to the other when their leases end; what it had handed to the carrier is
// not sent again (the carrier's receipts reach the survivor through the
// nodes' shared public URL, as behind a load balancer), and what it had not
// yet handed over is sent anew once --reconcile-after has passed with no
// receipt.
func TestScheduledTwoServersOneKilled(t *testing.T) {
	if storetest.PostgresURL(t) == "" {
		t.Skip("needs PostgreSQL")
	}
	t.Parallel()
	db := storetest.DSN(t, store.Postgres)
	fake := newCrashKannel(t)
	// The carrier takes a while to answer, so that the kill lands mid-dispatch;
	// it keeps a message it took even if the sender hangs up, as smsbox does.
	fake.after = func(ctx context.Context, id int64) { time.Sleep(40 * time.Millisecond) }
	a := crashProvision(t, db, fake)
	key := createKey(t, db, a.account, "scheduler", "sms:send,sms:read").Key
	b := *a
	b.port = crashFreePort(t)
	proxy, err := tcpproxy.Listen("127.0.0.1:0", fmt.Sprintf("127.0.0.1:%d", a.port), fmt.Sprintf("127.0.0.1:%d", b.port))
	must(t, err)
	t.Cleanup(func() { proxy.Close() })
	a.publicURL = "http://" + proxy.Addr()
	b.publicURL = a.publicURL
	pa := a.launch(t, false)
	b.launch(t, true)

	const n = 1000
	client := crashClient(t)
	// All n must be scheduled before they fall due (a sendAt in the past is
	// refused): a few seconds on a quiet machine, 14 s seen at load 24.
	sendAt := time.Now().Add(20 * time.Second).UTC().Truncate(time.Second)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				base := a.baseURL()
				if i%2 == 1 {
					base = b.baseURL()
				}
				body, _ := json.Marshal(map[string]any{"to": []string{fmt.Sprintf("+1415555%04d", 1000+i%1000)}, "message": fmt.Sprintf("m%d", i), "sendAt": sendAt.Format(time.RFC3339)})
				req, _ := http.NewRequest("POST", base+apiPrefix+"/sms/lines/"+a.from+"/scheduled", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil || resp.StatusCode != 201 {
					failed.Add(1)
				}
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 || time.Now().After(sendAt) {
		t.Fatalf("%d schedules failed; scheduling ended %v after the send time", failed.Load(), time.Since(sendAt))
	}

	// The wait for sending is counted from when the messages fall due, not
	// from when scheduling ended: on a quiet machine scheduling takes under
	// a second, which left the dispatchers a second to start.
	crashWaitUntil(t, sendAt.Add(crashSettle), "sending is under way", func() string {
		if k := len(fake.state().accepted); k < 200 {
			return fmt.Sprintf("%d accepted", k)
		}
		return ""
	})
	crashKill(t, pa)
	if k := len(fake.state().accepted); k >= n {
		t.Fatalf("all %d were sent before the kill: the test did not kill mid-dispatch", k)
	}
	// The rows the killed server had claimed come back when their 30 s
	// leases end.
	texts := map[string]int{}
	crashWaitUntil(t, time.Now().Add(90*time.Second), "every message at the carrier after the kill", func() string {
		s := fake.state()
		clear(texts)
		for _, text := range s.accepted {
			texts[text]++
		}
		if len(texts) < n {
			return fmt.Sprintf("%d of %d messages reached the carrier (%d dropped)", len(texts), n, len(s.dropped))
		}
		return ""
	})
	for text, k := range texts {
		if k != 1 {
			t.Errorf("%s reached the carrier %d times", text, k)
		}
	}
	s := fake.state()
	for id, calls := range s.calls {
		if calls != 1 {
			t.Errorf("message %d: %d carrier calls", id, calls)
		}
	}
	if len(s.problems) > 0 {
		t.Errorf("carrier problems: %v", s.problems[:min(len(s.problems), 5)])
	}
	if len(s.accepted) != n {
		t.Errorf("%d messages accepted for %d texts", len(s.accepted), n)
	}
}
