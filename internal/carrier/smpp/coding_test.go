package smpp

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"switchboard/internal/segment"
)

// The septet table and package segment's alphabet must be the same set,
// or a text could be priced as GSM-7 and then fail (or go as UCS-2).
func TestGSMTableMatchesSegment(t *testing.T) {
	for r := rune(0); r < 0x20000; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		c := segment.Of(string(r))
		septets := gsmSeptets(r)
		if (septets != nil) != (c.Encoding == segment.GSM7) {
			t.Errorf("%U %q: table says %v, segment says %s", r, r, septets, c.Encoding)
		}
		if septets != nil && len(septets) != c.Units {
			t.Errorf("%U %q: %d septets, segment counts %d", r, r, len(septets), c.Units)
		}
	}
}

func TestGSMRoundTrip(t *testing.T) {
	var all strings.Builder
	for i, r := range gsmBasic {
		if i != gsmEscape {
			all.WriteRune(r)
		}
	}
	for _, r := range gsmExtension {
		all.WriteRune(r)
	}
	text := all.String()
	var enc []byte
	for _, r := range text {
		enc = append(enc, gsmSeptets(r)...)
	}
	if got := decodeGSM(enc); got != text {
		t.Errorf("decodeGSM(encode(table)) = %q, want %q", got, text)
	}
	// 3GPP TS 23.038: an escape to a septet the extension table lacks
	// shows the basic character; a trailing escape shows nothing.
	if got := decodeGSM([]byte{0x1B, 0x41, 0x42, 0x1B}); got != "AB" {
		t.Errorf("unknown extension = %q, want %q", got, "AB")
	}
}

func TestSplitGolden(t *testing.T) {
	src := Address{TON: 1, NPI: 1, Addr: "15551234567"}
	dst := Address{TON: 1, NPI: 1, Addr: "447700900123"}
	tests := []struct {
		name   string
		text   string
		coding byte
		parts  []string // hex of each short_message
	}{
		{"ASCII", "Hi @ 5€", CodingDefault, []string{"48 69 20 00 20 35 1B65"}},
		{"extension table", "{[~]}|^\\\f", CodingDefault, []string{"1B28 1B3C 1B3D 1B3E 1B29 1B40 1B14 1B2F 1B0A"}},
		{"UCS-2 with a surrogate pair", "ç😀", CodingUCS2, []string{"00E7 D83D DE00"}},
		{"empty", "", CodingDefault, []string{""}},
		{"two GSM parts", strings.Repeat("a", 160) + "bc", CodingDefault, []string{
			"05 00 03 2A 02 01" + strings.Repeat("61", 153),
			"05 00 03 2A 02 02" + strings.Repeat("61", 7) + "62 63"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sms, err := Split(Message{Source: src, Dest: dst, Text: tt.text, RegisteredDelivery: ReceiptFinal}, 0x2A)
			if err != nil {
				t.Fatal(err)
			}
			if len(sms) != len(tt.parts) {
				t.Fatalf("%d parts, want %d", len(sms), len(tt.parts))
			}
			for i, sm := range sms {
				want := pdu(t, tt.parts[i])
				if !bytes.Equal(sm.ShortMessage, want) {
					t.Errorf("part %d short_message\n got % X\nwant % X", i+1, sm.ShortMessage, want)
				}
				wantESM := byte(0)
				if len(sms) > 1 {
					wantESM = ESMClassUDHI
				}
				if sm.DataCoding != tt.coding || sm.ESMClass != wantESM || sm.RegisteredDelivery != ReceiptFinal ||
					sm.Source != src || sm.Dest != dst {
					t.Errorf("part %d: data_coding %d esm_class %#x registered_delivery %d %v→%v", i+1,
						sm.DataCoding, sm.ESMClass, sm.RegisteredDelivery, sm.Source, sm.Dest)
				}
			}
		})
	}
}

// randomText draws from pools that exercise every rule: plain ASCII,
// extension characters (two septets), Latin letters outside GSM-7,
// non-Latin scripts and emoji (surrogate pairs).
func randomText(rng *rand.Rand) string {
	pools := []string{
		"abcdefghijklmnopqrstuvwxyz ABC 0123456789.,!?",
		"€[]{}|^~\\",
		"éèàÄÖÑÜß£¥§¿¡ΔΦΓΛΩΠΨΣΘΞ",
		"çáíóúÈ“”’–…",
		"Приветжж你好世界مرحبا",
		"😀🇺🇸👍🏽❤️",
	}
	use := pools[:1+rng.IntN(3)]
	if rng.IntN(3) == 0 {
		use = append(use, pools[3+rng.IntN(3)])
	}
	n := rng.IntN(700)
	var b strings.Builder
	for range n {
		p := []rune(use[rng.IntN(len(use))])
		b.WriteRune(p[rng.IntN(len(p))])
	}
	return b.String()
}

// For many texts, the parts agree with the quote: as many as package
// segment counts, in its encoding, every part within one SMS (140 octets
// on the air), and the parts put back together are the text.
func TestSplitAgreesWithSegment(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 34))
	texts := []string{
		strings.Repeat("a", 160), strings.Repeat("a", 161), strings.Repeat("€", 80), strings.Repeat("€", 81),
		strings.Repeat("a", 152) + "€" + strings.Repeat("a", 152),
		strings.Repeat("ж", 70), strings.Repeat("ж", 71), strings.Repeat("ж", 66) + "😀" + strings.Repeat("ж", 66),
		strings.Repeat("😀", 35), strings.Repeat("😀", 36), strings.Repeat("a", 153*255),
	}
	for range 3000 {
		texts = append(texts, randomText(rng))
	}
	for _, text := range texts {
		count := segment.Of(text)
		sms, err := Split(Message{Text: text}, 7)
		if err != nil {
			t.Fatalf("Split(%.40q…): %v", text, err)
		}
		want := max(count.Segments, 1)
		if len(sms) != want {
			t.Fatalf("Split(%.40q…) made %d parts, segment counts %d", text, len(sms), count.Segments)
		}
		wantCoding := CodingDefault
		if count.Encoding == segment.UCS2 {
			wantCoding = CodingUCS2
		}
		var joined []byte
		for i, sm := range sms {
			if sm.DataCoding != wantCoding {
				t.Fatalf("part %d data_coding %d, want %d (%s)", i+1, sm.DataCoding, wantCoding, count.Encoding)
			}
			body := sm.ShortMessage
			if len(sms) > 1 {
				h := body[:6]
				if h[0] != 5 || h[1] != 0 || h[2] != 3 || h[3] != 7 || int(h[4]) != len(sms) || int(h[5]) != i+1 {
					t.Fatalf("part %d UDH % X", i+1, h)
				}
				body = body[6:]
			}
			airOctets := len(sm.ShortMessage) // UCS-2 as is
			if wantCoding == CodingDefault {
				septets := len(body)
				if len(sms) > 1 {
					septets += 7 // the header and its fill bits
				}
				airOctets = (septets*7 + 7) / 8
			}
			if airOctets > 140 {
				t.Fatalf("part %d takes %d octets on the air", i+1, airOctets)
			}
			joined = append(joined, body...)
		}
		if got := DecodeText(wantCoding, joined); got != strings.ToValidUTF8(text, "\uFFFD") {
			t.Fatalf("parts decode to %.60q…, want %.60q…", got, text)
		}
	}
}

func TestSplitRefusesMoreThan255Parts(t *testing.T) {
	if _, err := Split(Message{Text: strings.Repeat("a", 153*255+1)}, 1); err == nil {
		t.Fatal("a 256-part text was split")
	}
}

func TestDecodeText(t *testing.T) {
	tests := []struct {
		coding byte
		in     []byte
		want   string
	}{
		{CodingDefault, []byte{0x48, 0x00, 0x1B, 0x65, 0x11}, "H@€_"},
		{CodingDefault, []byte("caf\xe9"), "café"}, // 8-bit under "default": Latin-1
		{0xF1, []byte{0x48, 0x49}, "HI"},           // message class group, GSM
		{CodingLatin1, []byte("\xe7a"), "ça"},
		{CodingIA5, []byte("plain @$_"), "plain @$_"},
		{CodingIA5, []byte{'H', 'i', 0x1B, 0x28, 0x00, 0x1B, 0x65}, "Hi{@€"}, // GSM sent as IA5
		{CodingUCS2, []byte{0x00, 0xE7, 0xD8, 0x3D, 0xDE, 0x00}, "ç😀"},
		{CodingUCS2, []byte{0x00, 0x41, 0x00}, "A\uFFFD"},
		{CodingBinary2, []byte("utf-8 ✓"), "utf-8 ✓"},
	}
	for _, tt := range tests {
		if got := DecodeText(tt.coding, tt.in); got != tt.want {
			t.Errorf("DecodeText(%#x, % X) = %q, want %q", tt.coding, tt.in, got, tt.want)
		}
	}
}

func TestDefaultAddress(t *testing.T) {
	tests := map[string]Address{
		"+15551234567": {TON: 1, NPI: 1, Addr: "15551234567"},
		"447700900123": {TON: 1, NPI: 1, Addr: "447700900123"},
		"+44":          {TON: 1, NPI: 1, Addr: "44"},
		"12345":        {TON: 3, NPI: 0, Addr: "12345"},
		"Switchbrd":    {TON: 5, NPI: 0, Addr: "Switchbrd"},
		"":             {},
	}
	for in, want := range tests {
		if got := DefaultAddress(in); got != want {
			t.Errorf("DefaultAddress(%q) = %+v, want %+v", in, got, want)
		}
	}
}
