package smpp

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// data_coding values (SMPP 3.4 section 5.2.19) this package sends or reads.
const (
	CodingDefault byte = 0x00 // SMSC default alphabet: GSM 03.38 here
	CodingIA5     byte = 0x01 // IA5 (CCITT T.50), in practice ASCII
	CodingBinary  byte = 0x02 // octet unspecified (8-bit binary)
	CodingLatin1  byte = 0x03 // ISO-8859-1
	CodingBinary2 byte = 0x04 // octet unspecified (8-bit binary)
	CodingUCS2    byte = 0x08 // ISO/IEC 10646 UCS-2; sent as UTF-16BE
)

// gsmBasic is the GSM 03.38 default alphabet by septet value. 0x1B is the
// escape to the extension table, not a character.
var gsmBasic = [128]rune{
	'@', '£', '$', '¥', 'è', 'é', 'ù', 'ì', 'ò', 'Ç', '\n', 'Ø', 'ø', '\r', 'Å', 'å',
	'Δ', '_', 'Φ', 'Γ', 'Λ', 'Ω', 'Π', 'Ψ', 'Σ', 'Θ', 'Ξ', 0x1B, 'Æ', 'æ', 'ß', 'É',
	' ', '!', '"', '#', '¤', '%', '&', '\'', '(', ')', '*', '+', ',', '-', '.', '/',
	'0', '1', '2', '3', '4', '5', '6', '7', '8', '9', ':', ';', '<', '=', '>', '?',
	'¡', 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J', 'K', 'L', 'M', 'N', 'O',
	'P', 'Q', 'R', 'S', 'T', 'U', 'V', 'W', 'X', 'Y', 'Z', 'Ä', 'Ö', 'Ñ', 'Ü', '§',
	'¿', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o',
	'p', 'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y', 'z', 'ä', 'ö', 'ñ', 'ü', 'à',
}

const gsmEscape = 0x1B

// gsmExtension is the extension table: the septet after ESC and the
// character it stands for.
var gsmExtension = map[byte]rune{
	0x0A: '\f', 0x14: '^', 0x28: '{', 0x29: '}', 0x2F: '\\',
	0x3C: '[', 0x3D: '~', 0x3E: ']', 0x40: '|', 0x65: '€',
}

// gsmEncode maps a character to its septets (one, or ESC and one).
var gsmEncode = func() map[rune][]byte {
	m := make(map[rune][]byte, 140)
	for i, r := range gsmBasic {
		if i != gsmEscape {
			m[r] = []byte{byte(i)}
		}
	}
	for c, r := range gsmExtension {
		m[r] = []byte{gsmEscape, c}
	}
	return m
}()

// gsmSeptets returns r's septets, or nil if r is not in GSM 03.38.
func gsmSeptets(r rune) []byte { return gsmEncode[r] }

// decodeGSM reads unpacked GSM 03.38 septets, one per octet. An escape
// followed by a septet the extension table does not hold stands for the
// basic table's character, as 3GPP TS 23.038 asks of a receiver; a trailing
// escape is dropped.
func decodeGSM(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b))
	for i := 0; i < len(b); i++ {
		c := b[i] & 0x7F
		if c == gsmEscape {
			if i+1 >= len(b) {
				break
			}
			i++
			n := b[i] & 0x7F
			if r, ok := gsmExtension[n]; ok {
				sb.WriteRune(r)
			} else if n != gsmEscape {
				sb.WriteRune(gsmBasic[n])
			}
			continue
		}
		sb.WriteRune(gsmBasic[c])
	}
	return sb.String()
}

// encodeUCS2 is UTF-16BE: characters beyond the Basic Multilingual Plane
// (most emoji) become surrogate pairs, which every handset that shows them
// expects although SMPP calls the coding UCS-2.
func encodeUCS2(r rune) []byte {
	if r >= 0x10000 {
		hi, lo := utf16.EncodeRune(r)
		return []byte{byte(hi >> 8), byte(hi), byte(lo >> 8), byte(lo)}
	}
	if !utf8.ValidRune(r) {
		r = utf8.RuneError
	}
	return []byte{byte(r >> 8), byte(r)}
}

func decodeUCS2(b []byte) string {
	units := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		units = append(units, uint16(b[i])<<8|uint16(b[i+1]))
	}
	s := string(utf16.Decode(units))
	if len(b)%2 == 1 {
		s += string(utf8.RuneError)
	}
	return s
}

func decodeLatin1(b []byte) string {
	rs := make([]rune, len(b))
	for i, c := range b {
		rs[i] = rune(c)
	}
	return string(rs)
}

// DecodeText turns a short message's octets (without its user data header)
// into text according to data_coding. GSM 03.38 is read unpacked; octets
// above 0x7F under data_coding 0 cannot be septets, so such a text is read
// as Latin-1, which is what SMSCs that send 8-bit text as "default" mean.
// IA5 (data_coding 1) is ASCII, except that some SMSCs (node-smpp among
// them) send GSM 03.38 septets under it: an escape or a NUL, which ASCII
// text never holds and GSM uses for its extension table and '@', marks
// those.
// Binary and unknown codings are read as UTF-8 when they are valid UTF-8,
// otherwise as Latin-1, so nothing is silently dropped.
func DecodeText(dataCoding byte, b []byte) string {
	switch {
	case dataCoding == CodingDefault || dataCoding&0xF4 == 0xF0:
		for _, c := range b {
			if c >= 0x80 {
				return decodeLatin1(b)
			}
		}
		return decodeGSM(b)
	case dataCoding == CodingUCS2:
		return decodeUCS2(b)
	case dataCoding == CodingIA5 && looksGSM(b):
		return decodeGSM(b)
	case dataCoding == CodingIA5 || dataCoding == CodingLatin1:
		return decodeLatin1(b)
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return decodeLatin1(b)
}

// looksGSM reports whether IA5 octets hold GSM 03.38 septets instead.
func looksGSM(b []byte) bool {
	for _, c := range b {
		if c == gsmEscape || c == 0 {
			return true
		}
	}
	return false
}
