package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"switchboard/internal/money"
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
