package smpp

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"switchboard/internal/carrier/smpp/smpptest"
)

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// TestNodeSMSC binds to node-smpp and checks that what it decodes is what
// was meant: addresses, coding, the concatenation header, and that its
// receipts and inbound texts (encoded by its own GSM and UCS-2 encoders)
// come back whole.
func TestNodeSMSC(t *testing.T) {
	noLeaks(t)
	smsc := smpptest.Start(t)
	var rec recorder
	cfg := rec.config(smsc.Addr)
	c := newClient(t, cfg)
	run(t, c)

	bind := smsc.Next(t, "bind")
	if bind["system_id"] != "esme" || bind["password"] != "secret" || bind["system_type"] != "sb" || num(bind["interface_version"]) != 0x34 {
		t.Fatalf("node SMSC saw bind %v", bind)
	}
	waitBound(t, c)

	src := Address{TON: 1, NPI: 1, Addr: "15551234567"}
	dst := Address{TON: 1, NPI: 1, Addr: "447700900123"}
	send := func(text string) []string {
		t.Helper()
		ids, err := c.Send(context.Background(), Message{Source: src, Dest: dst, Text: text, RegisteredDelivery: ReceiptFinal})
		if err != nil {
			t.Fatalf("Send(%.30q…): %v", text, err)
		}
		return ids
	}
	tests := []struct {
		name   string
		text   string
		coding int
		parts  int
	}{
		{"GSM with the extension table", "Hello {world} [x] ~ | ^ \\ €5 @£$¥ ÄÖÑÜ ΔΩ", 0, 1},
		{"UCS-2 with emoji", "Привет 😀 ça va? 👍🏽", 8, 1},
		{"concatenated GSM, 400 characters", strings.Repeat("0123456789 €bcdefghi", 20), 0, 3},
		{"concatenated UCS-2 with surrogate pairs", strings.Repeat("ж😀", 50), 8, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ids := send(tt.text)
			if len(ids) != tt.parts {
				t.Fatalf("%d message ids, want %d", len(ids), tt.parts)
			}
			var joined strings.Builder
			ref := ""
			for i := range tt.parts {
				ev := smsc.Next(t, "submit_sm")
				if ev["message_id"] != ids[i] {
					t.Errorf("part %d: node gave %v, Send returned %s", i+1, ev["message_id"], ids[i])
				}
				if num(ev["data_coding"]) != tt.coding || num(ev["registered_delivery"]) != 1 ||
					ev["source_addr"] != src.Addr || num(ev["source_addr_ton"]) != 1 || num(ev["source_addr_npi"]) != 1 ||
					ev["destination_addr"] != dst.Addr || num(ev["dest_addr_ton"]) != 1 || num(ev["dest_addr_npi"]) != 1 {
					t.Errorf("part %d as node decoded it: %v", i+1, ev)
				}
				udh, _ := ev["udh"].([]any)
				if tt.parts == 1 {
					if num(ev["esm_class"]) != 0 || len(udh) != 0 {
						t.Errorf("single part with esm_class %v and UDH %v", ev["esm_class"], udh)
					}
				} else {
					if num(ev["esm_class"]) != 0x40 || len(udh) != 1 {
						t.Fatalf("part %d: esm_class %v, UDH %v", i+1, ev["esm_class"], udh)
					}
					ie := udh[0].(string) // IE id, length, ref, total, seq
					if !strings.HasPrefix(ie, "0003") || ie[6:] != fmt.Sprintf("%02x%02x", tt.parts, i+1) {
						t.Errorf("part %d: IE %s", i+1, ie)
					}
					if i == 0 {
						ref = ie[4:6]
					} else if ie[4:6] != ref {
						t.Errorf("part %d: reference %s, part 1 had %s", i+1, ie[4:6], ref)
					}
				}
				msg, _ := ev["message"].(string)
				joined.WriteString(msg)
			}
			if joined.String() != tt.text {
				t.Errorf("node decoded\n%q\nwant\n%q", joined.String(), tt.text)
			}
		})
	}

	// Throttled by node: resubmitted, taken once.
	smsc.Do(t, map[string]any{"cmd": "throttle", "n": 2})
	smsc.Next(t, "throttling")
	ids := send("after throttling")
	for range 2 {
		if ev := smsc.Next(t, "submit_sm"); num(ev["refused"]) != 0x58 {
			t.Fatalf("expected a throttled submit, got %v", ev)
		}
	}
	if ev := smsc.Next(t, "submit_sm"); ev["message_id"] != ids[0] || ev["message"] != "after throttling" {
		t.Fatalf("resubmitted %v, Send returned %v", ev, ids)
	}

	// Receipts: from the text alone, and with receipted_message_id.
	smsc.Do(t, map[string]any{"cmd": "receipt", "id": ids[0], "stat": "DELIVRD", "from": dst.Addr, "to": src.Addr})
	smsc.Do(t, map[string]any{"cmd": "receipt", "id": "0", "tlv_id": "node-tlv", "tlv": true, "stat": "UNDELIV", "from": dst.Addr, "to": src.Addr})
	// Inbound: node chooses the coding of single texts itself; the parts
	// of concatenated ones are encoded by its GSM and UCS-2 encoders.
	smsc.Do(t, map[string]any{"cmd": "inbound", "from": dst.Addr, "to": src.Addr, "text": "Hi {there} €"})
	smsc.Do(t, map[string]any{"cmd": "inbound", "from": dst.Addr, "to": src.Addr, "text": "Ответ 😀"})
	smsc.Do(t, map[string]any{"cmd": "inbound", "from": dst.Addr, "to": src.Addr, "data_coding": 0, "ref": 7,
		"parts": []string{"first part [a] ", "second part €"}})
	smsc.Do(t, map[string]any{"cmd": "inbound", "from": dst.Addr, "to": src.Addr, "data_coding": 8, "ref": 8,
		"parts": []string{"один 😀 ", "два 👍"}})
	for range 2 + 2 + 2 + 2 {
		if ev := smsc.Next(t, "deliver_sm_resp"); num(ev["status"]) != 0 {
			t.Fatalf("deliver_sm answered %v", ev)
		}
	}
	rec.mu.Lock()
	receipts, inbound := rec.receipts, rec.inbound
	rec.mu.Unlock()
	if len(receipts) != 2 || receipts[0].MessageID != ids[0] || receipts[0].Stat != "DELIVRD" ||
		receipts[1].MessageID != "node-tlv" || receipts[1].Stat != "UNDELIV" || receipts[1].State != 2 {
		t.Errorf("receipts %+v", receipts)
	}
	wantIn := []string{"Hi {there} €", "Ответ 😀", "first part [a] second part €", "один 😀 два 👍"}
	if len(inbound) != len(wantIn) {
		t.Fatalf("inbound %+v, want %q", inbound, wantIn)
	}
	for i, in := range inbound {
		if in.Text != wantIn[i] || in.Source != dst || in.Dest != src {
			t.Errorf("inbound %d = %+v, want %q from %v", i, in, wantIn[i], dst)
		}
	}

	// node's enquire_link is answered; a dropped link is bound again.
	smsc.Do(t, map[string]any{"cmd": "enquire"})
	smsc.Next(t, "enquire_link_resp")
	smsc.Do(t, map[string]any{"cmd": "drop"})
	smsc.Next(t, "bind")
	if ids := send("after the drop"); len(ids) != 1 {
		t.Fatalf("Send after the drop: %v", ids)
	}
}
