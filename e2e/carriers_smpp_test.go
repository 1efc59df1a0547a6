package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"switchboard/internal/carrier/smpp/smpptest"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestCarrierConnectionSMPP: a line on an smpp connection sends through a
// bind to node-smpp; the SMSC's receipt, naming its own message_id, settles
// the message with the SMSC's status word unmapped; an inbound deliver_sm
// is the line's inbound text; carrier list shows the bind. A wrong
// password is down with the SMSC's status.
func TestCarrierConnectionSMPP(t *testing.T) {
	t.Parallel()
	sc := smpptest.Start(t)
	db := storetest.DSN(t, store.SQLite)
	acct, key := carrierAccount(t, db)
	cliJSON(t, db, &struct{}{}, "carrier", "add", "smsc1", "--kind", "smpp", "--address", sc.Addr, "--system-id", "esme", "--password", "secret")
	line := createLine(t, db, acct, "--number", "4155550100", "--carrier", "smsc1").Number
	base, metrics := startServerAddrs(t, db, "--metrics-addr", "127.0.0.1:0")
	sc.Next(t, "bind")
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
	sub := sc.Next(t, "submit_sm")
	if sub["destination_addr"] != "12125550101" || sub["source_addr"] != line || sub["message"] != "Your appointment is at 9." || sub["registered_delivery"] != float64(1) {
		t.Fatalf("submit_sm: %v", sub)
	}
	sc.Do(t, map[string]any{"cmd": "receipt", "id": sub["message_id"], "stat": "DELIVRD", "from": "12125550101", "to": line})
	if ev := sc.Next(t, "deliver_sm_resp"); ev["status"] != float64(0) {
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
	p1, p2 := sc.Next(t, "submit_sm"), sc.Next(t, "submit_sm")
	if len(p1["udh"].([]any)) == 0 || p1["message_id"] == p2["message_id"] {
		t.Fatalf("the long text's parts: %v, %v", p1, p2)
	}
	longThread := func() string {
		return string(request(t, "GET", base+apiPrefix+"/sms/conversations/"+line+"/12125550102", "Bearer "+key).body)
	}
	sc.Do(t, map[string]any{"cmd": "receipt", "id": p1["message_id"], "stat": "DELIVRD", "from": "12125550102", "to": line})
	sc.Next(t, "deliver_sm_resp")
	if th := longThread(); strings.Contains(th, `"DELIVRD"`) {
		t.Errorf("delivered after one part of two: %s", th)
	}
	sc.Do(t, map[string]any{"cmd": "receipt", "id": p2["message_id"], "stat": "DELIVRD", "from": "12125550102", "to": line})
	sc.Next(t, "deliver_sm_resp")
	if th := longThread(); !strings.Contains(th, `"DELIVRD"`) || !strings.Contains(th, fmt.Sprintf(`"id":%d`, longID)) {
		t.Errorf("the long text after both parts' receipts: %s", th)
	}

	sc.Do(t, map[string]any{"cmd": "inbound", "from": "12125550199", "to": line, "text": "see you then"})
	if ev := sc.Next(t, "deliver_sm_resp"); ev["status"] != float64(0) {
		t.Fatalf("the inbound text was answered %v", ev)
	}
	r = request(t, "GET", base+apiPrefix+"/sms/conversations/"+line+"/12125550199", "Bearer "+key)
	if r.status != 200 || !strings.Contains(string(r.body), "see you then") {
		t.Errorf("the inbound text's thread: %d %s", r.status, r.body)
	}

	// A text to a number no line holds: taken from the SMSC, dropped,
	// counted.
	sc.Do(t, map[string]any{"cmd": "inbound", "from": "12125550199", "to": "19995550000", "text": "wrong number"})
	if ev := sc.Next(t, "deliver_sm_resp"); ev["status"] != float64(0) {
		t.Fatalf("the text to an unknown number was answered %v", ev)
	}
	if r := request(t, "GET", metrics+"/metrics", ""); !strings.Contains(string(r.body), "switchboard_inbound_unknown_number_total 1") {
		t.Errorf("/metrics does not count the text to an unknown number")
	}

	// An MMS (here a group text) cannot go over SMPP: refused before
	// anything is written or charged, and the quote says so too.
	group := `{"from":"` + line + `","to":["12125550101","12125550102"],"message":"hello both"}`
	for _, path := range []string{"/sms/messages", "/sms/quote"} {
		if r := postJSON(t, base+apiPrefix+path, key, group); r.status != 422 || !strings.Contains(string(r.body), "SMPP connection") {
			t.Errorf("a group text on an SMPP line, %s: %d %s; want 422 naming the connection", path, r.status, r.body)
		}
	}

	// A wrong password: down, with the SMSC's refusal, and no tight loop.
	cliJSON(t, db, &struct{}{}, "carrier", "set", "smsc1", "--password", "wrong")
	waitFor(t, "the refused bind in carrier list", 15*time.Second, func() bool {
		s := state()
		return s["state"] == "down" && strings.Contains(fmt.Sprint(s["lastError"]), "ESME_RINVPASWD")
	})
}
