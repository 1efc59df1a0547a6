package smpp

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// pdu builds golden bytes from the specification's field tables: hex
// octets written as they appear on the wire, and C-octet strings spelled
// out (cstr) so a table row reads as one argument.
func pdu(t *testing.T, fields ...string) []byte {
	t.Helper()
	var b []byte
	for _, f := range fields {
		if s, ok := strings.CutPrefix(f, "cstr:"); ok {
			b = append(b, s...)
			b = append(b, 0)
			continue
		}
		h, err := hex.DecodeString(strings.ReplaceAll(f, " ", ""))
		if err != nil {
			t.Fatalf("bad hex %q: %v", f, err)
		}
		b = append(b, h...)
	}
	return b
}

// Golden PDUs, each laid out field by field after the tables of SMPP 3.4
// section 4 (bind_transceiver 4.1.5, submit_sm 4.4.1, deliver_sm 4.6.1,
// enquire_link 4.11, unbind 4.2, generic_nack 4.3) and TLVs after 5.3.
func goldenPDUs(t *testing.T) []struct {
	name  string
	pdu   *PDU
	bytes []byte
} {
	return []struct {
		name  string
		pdu   *PDU
		bytes []byte
	}{
		{"bind_transceiver", &PDU{Command: CmdBindTransceiver, Seq: 1, Body: &Bind{
			SystemID: "SMPP3TEST", Password: "secret08", SystemType: "SUBMIT1",
			InterfaceVersion: 0x34, AddrTON: 1, AddrNPI: 1}},
			pdu(t, "0000002F", "00000009", "00000000", "00000001",
				"cstr:SMPP3TEST", "cstr:secret08", "cstr:SUBMIT1",
				"34", "01", "01", "cstr:")},
		{"bind_transceiver_resp with sc_interface_version", &PDU{Command: CmdBindTransceiverResp, Seq: 1, Body: &BindResp{
			SystemID: "SMSC", TLVs: TLVs{{Tag: TagSCInterfaceVersion, Value: []byte{0x34}}}}},
			pdu(t, "0000001A", "80000009", "00000000", "00000001", "cstr:SMSC", "0210 0001 34")},
		{"submit_sm", &PDU{Command: CmdSubmitSM, Seq: 2, Body: &SM{
			Source:             Address{TON: 1, NPI: 1, Addr: "15551234567"},
			Dest:               Address{TON: 1, NPI: 1, Addr: "447700900123"},
			RegisteredDelivery: 1, ShortMessage: []byte("Hello")}},
			pdu(t, "0000003D", "00000004", "00000000", "00000002",
				"cstr:",                        // service_type
				"01", "01", "cstr:15551234567", // source_addr_ton, _npi, source_addr
				"01", "01", "cstr:447700900123", // dest_addr_ton, _npi, destination_addr
				"00", "00", "00", // esm_class, protocol_id, priority_flag
				"cstr:", "cstr:", // schedule_delivery_time, validity_period
				"01", "00", "00", "00", // registered_delivery, replace_if_present_flag, data_coding, sm_default_msg_id
				"05", "48656C6C6F")}, // sm_length, short_message
		{"submit_sm_resp", &PDU{Command: CmdSubmitSMResp, Seq: 2, Body: &SMResp{MessageID: "abc123"}},
			pdu(t, "00000017", "80000004", "00000000", "00000002", "cstr:abc123")},
		{"deliver_sm receipt", &PDU{Command: CmdDeliverSM, Seq: 9, Body: &SM{
			Source: Address{TON: 1, NPI: 1, Addr: "447700900123"}, Dest: Address{TON: 1, NPI: 1, Addr: "15551234567"},
			ESMClass: 0x04, ShortMessage: []byte("id:abc123 stat:DELIVRD"),
			TLVs: TLVs{CStringTLV(TagReceiptedMessageID, "abc123"), {Tag: TagMessageState, Value: []byte{2}}}}},
			pdu(t, "0000005E", "00000005", "00000000", "00000009",
				"cstr:", "01", "01", "cstr:447700900123", "01", "01", "cstr:15551234567",
				"04", "00", "00", "cstr:", "cstr:", "00", "00", "00", "00",
				"16", hex.EncodeToString([]byte("id:abc123 stat:DELIVRD")),
				"001E 0007", hex.EncodeToString([]byte("abc123\x00")), // receipted_message_id
				"0427 0001 02")}, // message_state DELIVERED
		{"deliver_sm_resp", &PDU{Command: CmdDeliverSMResp, Seq: 9, Body: &SMResp{}},
			pdu(t, "00000011", "80000005", "00000000", "00000009", "00")},
		{"enquire_link", &PDU{Command: CmdEnquireLink, Seq: 7},
			pdu(t, "00000010", "00000015", "00000000", "00000007")},
		{"enquire_link_resp", &PDU{Command: CmdEnquireLinkResp, Seq: 7},
			pdu(t, "00000010", "80000015", "00000000", "00000007")},
		{"unbind", &PDU{Command: CmdUnbind, Seq: 8}, pdu(t, "00000010", "00000006", "00000000", "00000008")},
		{"unbind_resp", &PDU{Command: CmdUnbindResp, Seq: 8}, pdu(t, "00000010", "80000006", "00000000", "00000008")},
		{"generic_nack", &PDU{Command: CmdGenericNack, Status: StatusInvalidCmdID, Seq: 5},
			pdu(t, "00000010", "80000000", "00000003", "00000005")},
		{"submit_sm_resp throttled without body", &PDU{Command: CmdSubmitSMResp, Status: StatusThrottled, Seq: 3},
			pdu(t, "00000010", "80000004", "00000058", "00000003")},
	}
}

func TestGoldenPDUs(t *testing.T) {
	for _, tt := range goldenPDUs(t) {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.pdu.MarshalBinary()
			if err != nil {
				t.Fatalf("MarshalBinary: %v", err)
			}
			if !bytes.Equal(got, tt.bytes) {
				t.Errorf("encoded\n got % X\nwant % X", got, tt.bytes)
			}
			back, err := ReadPDU(bytes.NewReader(tt.bytes), 0)
			if err != nil {
				t.Fatalf("ReadPDU: %v", err)
			}
			want := *tt.pdu
			if want.Body == nil && want.Command == CmdSubmitSMResp {
				want.Body = &SMResp{} // an absent body reads as an empty one
			}
			if !reflect.DeepEqual(back, &want) {
				t.Errorf("decoded %#v, want %#v", back, &want)
			}
		})
	}
}

func TestMalformedPDUs(t *testing.T) {
	hdr := func(length, cmd string) string { return length + cmd + "00000000" + "00000001" }
	tests := []struct {
		name string
		in   []byte
		want string // in the error
	}{
		{"shorter than a header", pdu(t, "0000000C 00000015 00000000"), "shorter than the 16-octet header"},
		{"over the maximum", pdu(t, "00100000 00000015 00000000 00000001"), "exceeds the maximum PDU size"},
		{"stream ends early", pdu(t, hdr("00000020", "00000009"), "41"), "truncated"},
		{"leftover octets", pdu(t, hdr("00000011", "00000015"), "00"), "1 octets left over"},
		{"system_id unterminated", pdu(t, hdr("00000024", "00000009"), hex.EncodeToString([]byte("ABCDEFGHIJKLMNOPQRST"))),
			"system_id: not terminated within 16 octets"},
		{"password unterminated at end", pdu(t, hdr("00000015", "00000009"), "00", hex.EncodeToString([]byte("abcd"))),
			"password: truncated: no terminating NUL"},
		{"sm_length past the end", pdu(t, hdr("00000023", "00000004"),
			"00 0101 00 0101 00 000000 00 00 01000000", "0A", "4142"), "short_message: truncated: 10 octets announced, 2 left"},
		{"bad validity_period", pdu(t, hdr("00000025", "00000004"),
			"00 0101 00 0101 00 000000 00", "3132333400", "01000000", "00"), "validity_period: 4 characters, want 0 or 16"},
		{"TLV header cut", pdu(t, hdr("00000023", "00000004"),
			"00 0101 00 0101 00 000000 00 00 01000000", "00", "0427"), "optional parameters: 2 octets left, a TLV header needs 4"},
		{"TLV value cut", pdu(t, hdr("00000027", "00000004"),
			"00 0101 00 0101 00 000000 00 00 01000000", "00", "0424 0010 4142"), "TLV 0x0424: truncated: 16 octets announced, 2 left"},
		{"message_state of two octets", pdu(t, hdr("00000027", "00000005"),
			"00 0101 00 0101 00 000000 00 00 01000000", "00", "0427 0002 0202"), "TLV 0x0427: value of 2 octets, want 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadPDU(bytes.NewReader(tt.in), 1024)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ReadPDU error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestUnknownCommandKeepsHeader(t *testing.T) {
	p, err := Unmarshal(pdu(t, "00000012 00000103 00000000 0000002A 0102")) // data_sm
	if !errors.Is(err, ErrUnknownCommand) {
		t.Fatalf("err = %v, want ErrUnknownCommand", err)
	}
	if p == nil || p.Seq != 42 || !bytes.Equal(p.Body.(Raw), []byte{1, 2}) {
		t.Fatalf("PDU = %#v, want the header with seq 42 and the raw body", p)
	}
}

func TestEncodeRefusesOverlongFields(t *testing.T) {
	tests := []struct {
		name string
		p    *PDU
		want string
	}{
		{"system_id", &PDU{Command: CmdBindTransceiver, Body: &Bind{SystemID: strings.Repeat("x", 16)}}, "system_id: 16 octets, at most 15"},
		{"password", &PDU{Command: CmdBindTransceiver, Body: &Bind{Password: "123456789"}}, "password: 9 octets, at most 8"},
		{"destination_addr", &PDU{Command: CmdSubmitSM, Body: &SM{Dest: Address{Addr: strings.Repeat("1", 21)}}}, "destination_addr: 21 octets, at most 20"},
		{"short_message", &PDU{Command: CmdSubmitSM, Body: &SM{ShortMessage: make([]byte, 255)}}, "short_message: 255 octets, at most 254"},
		{"NUL inside", &PDU{Command: CmdSubmitSM, Body: &SM{Source: Address{Addr: "a\x00b"}}}, "source_addr: contains NUL"},
		{"body for the wrong command", &PDU{Command: CmdDeliverSMResp, Body: &Bind{}}, "body is a bind"},
		{"fixed-size TLV", &PDU{Command: CmdSubmitSM, Body: &SM{TLVs: TLVs{{Tag: TagSARTotalSegments, Value: []byte{1, 2}}}}}, "value of 2 octets, want 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.p.MarshalBinary()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("MarshalBinary error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestStatusErrors(t *testing.T) {
	var err error = &StatusError{Command: CmdSubmitSM, Status: StatusThrottled}
	if !errors.Is(err, StatusThrottled) || errors.Is(err, StatusMsgQueueFull) {
		t.Errorf("errors.Is does not tell ESME_RTHROTTLED apart: %v", err)
	}
	if got := err.Error(); got != "smpp: submit_sm refused: ESME_RTHROTTLED (0x00000058)" {
		t.Errorf("Error() = %q", got)
	}
	for s, want := range map[Status]bool{StatusThrottled: true, StatusMsgQueueFull: true, StatusSubmitFailed: false, StatusInvalidDest: false} {
		if s.Retryable() != want {
			t.Errorf("%s.Retryable() = %v, want %v", s, !want, want)
		}
	}
}

func FuzzUnmarshal(f *testing.F) {
	for _, g := range goldenPDUs(&testing.T{}) {
		f.Add(g.bytes)
	}
	f.Add(pdu(&testing.T{}, "00000012 00000103 00000000 0000002A 0102"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ReadPDU(bytes.NewReader(b), 4096)
		if err != nil {
			return
		}
		// Whatever decodes must encode, and decode again to the same PDU.
		enc, err := p.MarshalBinary()
		if err != nil {
			t.Fatalf("decoded %#v but cannot encode it: %v", p, err)
		}
		q, err := Unmarshal(enc)
		if err != nil {
			t.Fatalf("re-decoding %X: %v", enc, err)
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("round trip changed the PDU:\n%#v\n%#v", p, q)
		}
	})
}
