package smpp

import (
	"testing"
	"time"
)

func TestParseReceipt(t *testing.T) {
	text := "id:0123456789 sub:001 dlvrd:001 submit date:2611281015 done date:2611281016 stat:DELIVRD err:000 Text:id:forged stat:NOPE"
	tests := []struct {
		name string
		sm   *SM
		want Receipt
	}{
		{"appendix B text", &SM{ESMClass: ESMClassReceipt, ShortMessage: []byte(text)},
			Receipt{MessageID: "0123456789", Stat: "DELIVRD", Err: "000", Text: text}},
		{"receipted_message_id wins over the text", &SM{ESMClass: ESMClassReceipt, ShortMessage: []byte(text),
			TLVs: TLVs{CStringTLV(TagReceiptedMessageID, "75BCD15"), {Tag: TagMessageState, Value: []byte{5}}}},
			Receipt{MessageID: "75BCD15", Stat: "DELIVRD", Err: "000", State: 5, Text: text}},
		{"TLVs only", &SM{ESMClass: ESMClassReceipt,
			TLVs: TLVs{{Tag: TagReceiptedMessageID, Value: []byte("abc")}, {Tag: TagMessageState, Value: []byte{5}}}},
			Receipt{MessageID: "abc", Stat: "UNDELIV", State: 5}},
		{"upper case keys, space after colon", &SM{ESMClass: ESMClassReceipt, ShortMessage: []byte("ID: 77 STAT:EXPIRED")},
			Receipt{MessageID: "77", Stat: "EXPIRED", Text: "ID: 77 STAT:EXPIRED"}},
		{"intermediate notification", &SM{ESMClass: ESMClassIntermediate, ShortMessage: []byte("id:9 stat:ENROUTE")},
			Receipt{MessageID: "9", Stat: "ENROUTE", Intermediate: true, Text: "id:9 stat:ENROUTE"}},
		{"in UCS-2", &SM{ESMClass: ESMClassReceipt, DataCoding: CodingUCS2,
			ShortMessage: []byte{0, 'i', 0, 'd', 0, ':', 0, '5', 0, ' ', 0, 's', 0, 't', 0, 'a', 0, 't', 0, ':', 0, 'R'}},
			Receipt{MessageID: "5", Stat: "R", Text: "id:5 stat:R"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !IsReceipt(tt.sm) {
				t.Fatal("IsReceipt = false")
			}
			if got := ParseReceipt(tt.sm); got != tt.want {
				t.Errorf("ParseReceipt = %+v, want %+v", got, tt.want)
			}
		})
	}
	if IsReceipt(&SM{ESMClass: ESMClassUDHI}) {
		t.Error("a concatenated inbound text counts as a receipt")
	}
}

func TestAssembler(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	src, dst := Address{Addr: "447700900123"}, Address{Addr: "15551234567"}
	udh8 := func(ref, total, seq byte, data ...byte) []byte {
		return append([]byte{5, 0, 3, ref, total, seq}, data...)
	}
	udh16 := func(ref uint16, total, seq byte, data ...byte) []byte {
		return append([]byte{6, 8, 4, byte(ref >> 8), byte(ref), total, seq}, data...)
	}
	part := func(coding byte, b []byte) *SM {
		return &SM{Source: src, Dest: dst, ESMClass: ESMClassUDHI, DataCoding: coding, ShortMessage: b}
	}
	sar := func(ref, total, seq int, b []byte) *SM {
		return &SM{Source: src, Dest: dst, DataCoding: CodingDefault, ShortMessage: b, TLVs: TLVs{
			{Tag: TagSARMsgRefNum, Value: []byte{byte(ref >> 8), byte(ref)}},
			{Tag: TagSARTotalSegments, Value: []byte{byte(total)}},
			{Tag: TagSARSegmentSeqnum, Value: []byte{byte(seq)}}}}
	}
	tests := []struct {
		name  string
		parts []*SM
		want  string
	}{
		{"single", []*SM{{Source: src, Dest: dst, ShortMessage: []byte("Hi")}}, "Hi"},
		{"message_payload", []*SM{{Source: src, Dest: dst, TLVs: TLVs{{Tag: TagMessagePayload, Value: []byte("long")}}}}, "long"},
		{"out of order, duplicate part", []*SM{
			part(0, udh8(1, 3, 3, 'c')), part(0, udh8(1, 3, 1, 'a')), part(0, udh8(1, 3, 1, 'a')), part(0, udh8(1, 3, 2, 'b'))}, "abc"},
		{"16-bit reference", []*SM{part(0, udh16(0x1234, 2, 1, 'x')), part(0, udh16(0x1234, 2, 2, 'y'))}, "xy"},
		{"sar_* parameters", []*SM{sar(300, 2, 2, []byte("lo")), sar(300, 2, 1, []byte("hel"))}, "hello"},
		// Another sender may cut a surrogate pair or an escape between parts.
		{"surrogate pair cut", []*SM{part(8, udh8(2, 2, 1, 0xD8, 0x3D)), part(8, udh8(2, 2, 2, 0xDE, 0x00))}, "😀"},
		{"escape cut", []*SM{part(0, udh8(3, 2, 1, 'x', 0x1B)), part(0, udh8(3, 2, 2, 0x65))}, "x€"},
		{"codings differ", []*SM{part(0, udh8(4, 2, 1, 'a')), part(8, udh8(4, 2, 2, 0x04, 0x36))}, "aж"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAssembler(time.Minute, 10)
			for i, p := range tt.parts {
				in, done := a.add(p, now)
				if last := i == len(tt.parts)-1; done != last {
					t.Fatalf("part %d: complete = %v", i+1, done)
				}
				if done && (in.Text != tt.want || in.Source != src || in.Dest != dst) {
					t.Fatalf("joined %+v, want text %q", in, tt.want)
				}
			}
			if len(a.groups) != 0 {
				t.Errorf("%d texts left waiting", len(a.groups))
			}
		})
	}
}

func TestAssemblerForgetsOldAndExcessParts(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	a := newAssembler(time.Minute, 2)
	p := func(ref byte) *SM { return &SM{ESMClass: ESMClassUDHI, ShortMessage: []byte{5, 0, 3, ref, 2, 1, 'a'}} }
	a.add(p(1), now)
	a.add(p(2), now.Add(time.Second))
	a.add(p(3), now.Add(2*time.Second)) // over the limit: ref 1, the oldest, goes
	if _, ok := a.groups[groupKey{ref: 1, total: 2}]; ok || len(a.groups) != 2 {
		t.Fatalf("groups after the limit: %v", a.groups)
	}
	a.add(p(4), now.Add(2*time.Minute)) // the others are now too old
	if len(a.groups) != 1 {
		t.Fatalf("%d groups after expiry, want 1", len(a.groups))
	}
}
