package kannel

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// codingUCS2 is Kannel's %c for UCS-2 texts (0 is 7-bit, 1 is 8-bit).
const codingUCS2 = 2

// decodeText turns the bytes of an inbound text (%b) into a string, given
// Kannel's coding (%c, -1 when absent) and charset (%C). Kannel 1.4 keeps
// 7-bit texts as UTF-8 internally; UCS-2 texts arrive as UTF-16BE unless
// smsbox's mo-recode turned them into UTF-8 first. The result is always
// valid UTF-8.
func decodeText(b []byte, coding int, charset string) string {
	switch strings.ToUpper(strings.TrimSpace(charset)) {
	case "UTF-16BE", "UTF-16", "UCS-2", "UCS2", "UCS-2BE":
		return decodeUTF16BE(b)
	case "WINDOWS-1252", "CP1252":
		return decodeSingleByte(b, &cp1252High)
	case "ISO-8859-1", "ISO8859-1", "LATIN1":
		return decodeSingleByte(b, nil)
	case "UTF-8", "UTF8":
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	if coding == codingUCS2 {
		return decodeUTF16BE(b)
	}
	// 7-bit without a charset, or 8-bit binary: UTF-8 if it is, otherwise
	// read the bytes as Latin-1 so nothing is silently dropped.
	if utf8.Valid(b) {
		return string(b)
	}
	return decodeSingleByte(b, nil)
}

func decodeUTF16BE(b []byte) string {
	units := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		units = append(units, uint16(b[i])<<8|uint16(b[i+1]))
	}
	s := string(utf16.Decode(units))
	if len(b)%2 == 1 {
		s += "\uFFFD"
	}
	return s
}

// cp1252High maps bytes 0x80-0x9F of Windows-1252; 0 marks the five
// undefined positions. Every other byte equals its Latin-1 code point.
var cp1252High = [32]rune{
	'€', 0, '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', 0, 'Ž', 0,
	0, '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', 0, 'ž', 'Ÿ',
}

// decodeSingleByte decodes Latin-1, or Windows-1252 when high is given.
func decodeSingleByte(b []byte, high *[32]rune) string {
	var sb strings.Builder
	sb.Grow(len(b))
	for _, c := range b {
		r := rune(c)
		if high != nil && c >= 0x80 && c <= 0x9f {
			if r = high[c-0x80]; r == 0 {
				r = utf8.RuneError
			}
		}
		sb.WriteRune(r)
	}
	return sb.String()
}
