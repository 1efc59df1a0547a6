package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// smsc is internal/carrier/smpp/testdata/smsc.js under node: an SMSC
// written by others (node-smpp), driven by JSON lines on its stdin and
// reporting what it decoded as JSON lines on its stdout.
type smsc struct {
	addr   string
	stdin  io.WriteCloser
	events chan map[string]any
}

func startSMSC(t *testing.T) *smsc {
	t.Helper()
	if os.Getenv("SWITCHBOARD_TEST_SMPP") != "1" {
		t.Skip("set SWITCHBOARD_TEST_SMPP=1 to run an SMPP connection against node-smpp, an independent SMSC (needs node and `npm ci --prefix e2e`)")
	}
	modules, err := filepath.Abs("node_modules")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "../internal/carrier/smpp/testdata/smsc.js")
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("SWITCHBOARD_TEST_SMPP=1 but node does not start: %v", err)
	}
	s := &smsc{stdin: stdin, events: make(chan map[string]any, 100)}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ev map[string]any
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				s.events <- ev
			}
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		for range s.events {
		}
		cmd.Wait()
	})
	s.addr = fmt.Sprintf("127.0.0.1:%v", s.next(t, "listening")["port"])
	return s
}

func (s *smsc) do(t *testing.T, cmd map[string]any) {
	t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := s.stdin.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
}

func (s *smsc) next(t *testing.T, kind string) map[string]any {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("the SMSC exited while waiting for %q", kind)
			}
			if ev["event"] == kind {
				return ev
			}
		case <-timeout:
			t.Fatalf("the SMSC sent no %q", kind)
		}
	}
}

// TestCarrierConnectionSMPP: a line on an smpp connection sends through a
// bind to node-smpp; the SMSC's receipt, naming its own message_id, settles
// the message with the SMSC's status word unmapped; an inbound deliver_sm
// is the line's inbound text; carrier list shows the bind. A wrong
// password is down with the SMSC's status.
func TestCarrierConnectionSMPP(t *testing.T) {
	t.Parallel()
	sc := startSMSC(t)
	db := storetest.DSN(t, store.SQLite)
	acct := createAccount(t, db, "Acme")
	cliJSON(t, db, &struct{}{}, "rate", "set", "--account", fmt.Sprint(acct), "--prefix", "1", "--sms", "0.0079", "--mms", "0.02")
	key := createKey(t, db, acct, "api", "all").Key
	cliJSON(t, db, &struct{}{}, "carrier", "add", "smsc1", "--kind", "smpp", "--address", sc.addr, "--system-id", "esme", "--password", "secret")
	line := createLine(t, db, acct, "--number", "4155550100", "--carrier", "smsc1").Number
	base, metrics := startServerAddrs(t, db, "--metrics-addr", "127.0.0.1:0")
	sc.next(t, "bind")
	state := func() map[string]any {
		var l struct{ Carriers []map[string]any }
		cliJSON(t, db, &l, "carrier", "list")
		return l.Carriers[0]
	}
	waitFor(t, "the bind in carrier list", 10*time.Second, func() bool { return state()["state"] == "bound" })
	// The node shows it too: /readyz's detail and /metrics.
	if r := request(t, "GET", base+"/readyz", ""); r.status != 200 || !strings.Contains(string(r.body), `{"name":"smsc1","kind":"smpp","state":"bound"`) {
		t.Errorf("/readyz: %d %s", r.status, r.body)
	}
	if r := request(t, "GET", metrics+"/metrics", ""); !strings.Contains(string(r.body), `switchboard_carrier_connection_state{connection="smsc1",kind="smpp",state="bound"} 1`) {
		t.Errorf("/metrics has no bound smsc1:\n%s", r.body)
	}

	id := appAPIKeySend(t, base, key, line, "12125550101", "Your appointment is at 9.")
	sub := sc.next(t, "submit_sm")
	if sub["destination_addr"] != "12125550101" || sub["source_addr"] != line || sub["message"] != "Your appointment is at 9." || sub["registered_delivery"] != float64(1) {
		t.Fatalf("submit_sm: %v", sub)
	}
	sc.do(t, map[string]any{"cmd": "receipt", "id": sub["message_id"], "stat": "DELIVRD", "from": "12125550101", "to": line})
	if ev := sc.next(t, "deliver_sm_resp"); ev["status"] != float64(0) {
		t.Fatalf("the receipt was answered %v", ev)
	}
	r := request(t, "GET", base+apiPrefix+"/sms/conversations/"+line+"/12125550101", "Bearer "+key)
	if r.status != 200 || !strings.Contains(string(r.body), `"DELIVRD"`) || !strings.Contains(string(r.body), fmt.Sprintf(`"id":%d`, id)) {
		t.Errorf("the message after its receipt: %d %s", r.status, r.body)
	}

	// A long text: two parts, each with its SMSC id; the message is
	// delivered when both parts are.
	long := strings.Repeat("Your appointment on Tuesday is confirmed. ", 4)
	longID := appAPIKeySend(t, base, key, line, "12125550102", long)
	p1, p2 := sc.next(t, "submit_sm"), sc.next(t, "submit_sm")
	if len(p1["udh"].([]any)) == 0 || p1["message_id"] == p2["message_id"] {
		t.Fatalf("the long text's parts: %v, %v", p1, p2)
	}
	longThread := func() string {
		return string(request(t, "GET", base+apiPrefix+"/sms/conversations/"+line+"/12125550102", "Bearer "+key).body)
	}
	sc.do(t, map[string]any{"cmd": "receipt", "id": p1["message_id"], "stat": "DELIVRD", "from": "12125550102", "to": line})
	sc.next(t, "deliver_sm_resp")
	if th := longThread(); strings.Contains(th, `"DELIVRD"`) {
		t.Errorf("delivered after one part of two: %s", th)
	}
	sc.do(t, map[string]any{"cmd": "receipt", "id": p2["message_id"], "stat": "DELIVRD", "from": "12125550102", "to": line})
	sc.next(t, "deliver_sm_resp")
	if th := longThread(); !strings.Contains(th, `"DELIVRD"`) || !strings.Contains(th, fmt.Sprintf(`"id":%d`, longID)) {
		t.Errorf("the long text after both parts' receipts: %s", th)
	}

	sc.do(t, map[string]any{"cmd": "inbound", "from": "12125550199", "to": line, "text": "see you then"})
	if ev := sc.next(t, "deliver_sm_resp"); ev["status"] != float64(0) {
		t.Fatalf("the inbound text was answered %v", ev)
	}
	r = request(t, "GET", base+apiPrefix+"/sms/conversations/"+line+"/12125550199", "Bearer "+key)
	if r.status != 200 || !strings.Contains(string(r.body), "see you then") {
		t.Errorf("the inbound text's thread: %d %s", r.status, r.body)
	}

	// A wrong password: down, with the SMSC's refusal, and no tight loop.
	cliJSON(t, db, &struct{}{}, "carrier", "set", "smsc1", "--password", "wrong")
	waitFor(t, "the refused bind in carrier list", 15*time.Second, func() bool {
		s := state()
		return s["state"] == "down" && strings.Contains(fmt.Sprint(s["lastError"]), "ESME_RINVPASWD")
	})
}
