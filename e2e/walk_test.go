package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"switchboard/internal/money"
)

// coreWalk is the core of the API, walked against one or more serving nodes
// on one database (through PgBouncer, or several nodes behind a proxy): key
// checks, a user list, sends with an Idempotency-Key replayed on another
// node, each send read back on a third, and a scheduled message; then the
// carrier and the ledger must agree that everything happened exactly once.
type coreWalk struct {
	c     *crashSetup // the account, its line and the fake carrier
	key   string      // users:read, sms:send, sms:read, messages:read
	bases []string    // the nodes' base URLs
	// sends is how many sends run at once (each with its own key).
	sends  int
	client *http.Client
}

// newCoreWalk provisions a user and a key for the walk in c's account
// through the CLI on db.
func newCoreWalk(t *testing.T, db string, c *crashSetup, bases ...string) *coreWalk {
	t.Helper()
	createUser(t, db, c.account, "--first", "Wanda", "--last", "Walker")
	key := createKey(t, db, c.account, "walker", "users:read,sms:send,sms:read,messages:read").Key
	return &coreWalk{c: c, key: key, bases: bases, sends: 24, client: crashClient(t)}
}

func (w *coreWalk) base(i int) string { return w.bases[i%len(w.bases)] }

// call makes one request with the walk's key (or key, when given) and
// returns the status, headers and body.
func (w *coreWalk) call(t *testing.T, method, url, key string, header map[string]string, body any) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	must(t, err)
	if key == "" {
		key = w.key
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := w.client.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return 0, nil, nil
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, resp.Header, raw
}

func (w *coreWalk) run(t *testing.T) {
	t.Helper()
	// Keys: a good one lists the users on every node, a wrong one is refused.
	for i := range w.bases {
		status, _, raw := w.call(t, "GET", w.base(i)+apiPrefix+"/users", "", nil, nil)
		if status != 200 || !bytes.Contains(raw, []byte(`"lastName":"Walker"`)) {
			t.Errorf("GET /users on node %d: %d %s; want 200 listing Walker", i, status, raw)
		}
		if status, _, raw := w.call(t, "GET", w.base(i)+apiPrefix+"/users", "sbk_not_a_key", nil, nil); status != 401 {
			t.Errorf("GET /users with a wrong key on node %d: %d %s; want 401", i, status, raw)
		}
	}

	// Sends, all at once, each with an Idempotency-Key; then each replayed
	// on the next node and read back on the one after.
	type sent struct {
		to, text string
		id       int64
		body     []byte
	}
	sends := make([]sent, w.sends)
	send := func(i, node int) (int, http.Header, []byte) {
		return w.call(t, "POST", w.base(node)+apiPrefix+"/sms/messages", "",
			map[string]string{"Idempotency-Key": fmt.Sprintf("walk-%d", i)},
			map[string]any{"from": w.c.from, "to": []string{sends[i].to}, "message": sends[i].text})
	}
	var wg sync.WaitGroup
	for i := range sends {
		sends[i].to, sends[i].text = fmt.Sprintf("1415555%04d", 2000+i), fmt.Sprintf("walk %d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, _, raw := send(i, i)
			var env struct {
				Data struct {
					Messages []struct {
						ID int64 `json:"id"`
					} `json:"messages"`
				} `json:"data"`
			}
			if status != 201 || json.Unmarshal(raw, &env) != nil || len(env.Data.Messages) != 1 {
				t.Errorf("send %d on node %d: %d %s; want 201 with one message", i, i%len(w.bases), status, raw)
				return
			}
			sends[i].id, sends[i].body = env.Data.Messages[0].ID, raw
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for i, s := range sends {
		status, h, raw := send(i, i+1)
		if status != 201 || h.Get("Idempotent-Replayed") != "true" || !bytes.Equal(raw, s.body) {
			t.Errorf("send %d replayed on node %d: %d, Idempotent-Replayed %q, body %s; want 201, true and the first answer %s",
				i, (i+1)%len(w.bases), status, h.Get("Idempotent-Replayed"), raw, s.body)
		}
		status, _, raw = w.call(t, "GET", w.base(i+2)+apiPrefix+"/sms/conversations/"+w.c.from+"/"+s.to, "", nil, nil)
		var thread struct {
			Data struct {
				Messages []struct {
					ID   int64  `json:"id"`
					Body string `json:"body"`
				} `json:"messages"`
			} `json:"data"`
		}
		if status != 200 || json.Unmarshal(raw, &thread) != nil || len(thread.Data.Messages) != 1 || thread.Data.Messages[0].ID != s.id {
			t.Errorf("send %d (message %d) read on node %d: %d %s; want its thread with that one message", i, s.id, (i+2)%len(w.bases), status, raw)
		}
	}

	// A scheduled message, due in two seconds.
	sendAt := time.Now().Add(2 * time.Second).UTC()
	status, _, raw := w.call(t, "POST", w.base(0)+apiPrefix+"/sms/lines/"+w.c.from+"/scheduled", "", nil,
		map[string]any{"to": []string{"+1 415 555 3999"}, "message": "walk scheduled", "sendAt": sendAt.Format(time.RFC3339Nano)})
	if status != 201 {
		t.Fatalf("schedule: %d %s; want 201", status, raw)
	}

	// The carrier got each message once, and each is charged once.
	st := crashOpenStore(t, w.c.db)
	fake := w.c.fake
	crashWaitFor(t, "the scheduled message is sent and every receipt stored", func() string {
		if s := fake.state(); len(s.accepted) != len(sends)+1 {
			return fmt.Sprintf("the carrier accepted %d of %d messages", len(s.accepted), len(sends)+1)
		}
		return crashSettled(st, fake)
	})
	fs := fake.state()
	for _, p := range fs.problems {
		t.Errorf("carrier: %s", p)
	}
	ledger, total, entries := crashCharges(t, st, w.c.account)
	for id, n := range fs.calls {
		if n != 1 || len(ledger[id]) != 1 || ledger[id][0] != crashSMSRate {
			t.Errorf("message %d (%q): %d carrier calls, charged %v; want 1 call, one charge of %s", id, fs.accepted[id], n, ledger[id], crashSMSRate)
		}
	}
	texts := map[string]bool{}
	for _, text := range fs.accepted {
		texts[text] = true
	}
	for _, s := range sends {
		if !texts[s.text] {
			t.Errorf("send %q never reached the carrier", s.text)
		}
	}
	if !texts["walk scheduled"] {
		t.Error("the scheduled message never reached the carrier")
	}
	if want := money.Micros(len(sends)+1) * crashSMSRate; money.Micros(total) != want || entries != len(sends)+1 {
		t.Errorf("ledger: %s in %d entries; want %s in %d", money.Micros(total), entries, want, len(sends)+1)
	}
	ids := make([]int64, 0, len(sends))
	for _, s := range sends {
		ids = append(ids, s.id)
	}
	slices.Sort(ids)
	if len(slices.Compact(ids)) != len(sends) {
		t.Errorf("message ids %v: want %d distinct", ids, len(sends))
	}
}
