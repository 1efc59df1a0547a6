package segment

import "unicode/utf8"

// Encoding names the character encoding a message is sent in.
type Encoding string

const (
	// GSM7 is the 3GPP TS 23.038 default alphabet plus its extension table.
	GSM7 Encoding = "GSM-7"
	// UCS2 is the 16-bit encoding used as soon as any character is outside GSM-7.
	UCS2 Encoding = "UCS-2"
)

// Per-segment capacities, in units of the chosen encoding. A split message
// loses room to the user data header that stitches segments back together,
// which is why the multi-segment figures are smaller.
const (
	gsm7Single  = 160
	gsm7Multi   = 153
	ucs2Single  = 70
	ucs2Multi   = 67
	gsm7Escaped = 2 // an extension character is ESC plus its code
)

// Count is the outcome of sizing a message body.
type Count struct {
	// Encoding is the encoding the whole message will be sent in.
	Encoding Encoding
	// Units is the length as the encoding counts it: septets for GSM-7
	// (extension characters count 2), UTF-16 code units for UCS-2.
	Units int
	// Segments is how many SMS parts the message needs; 0 for empty text.
	Segments int
}

// basicLatin1 holds the GSM-7 basic table characters that lie below U+0100,
// in table order. ESC (0x1B) is deliberately absent: it is a table switch,
// not a character. The ten Greek capitals of the basic table sit above U+0100
// and are handled in gsm7Cost.
const basicLatin1 = "@£$¥èéùìòÇ\nØø\rÅå" +
	"_" + // Δ Φ Γ Λ Ω Π Ψ Σ Θ Ξ of row 0x10 are Greek, see gsm7Cost
	"ÆæßÉ" +
	" !\"#¤%&'()*+,-./0123456789:;<=>?" +
	"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§" +
	"¿abcdefghijklmnopqrstuvwxyzäöñüà"

// extensionLatin1 holds the extension table characters below U+0100; each is
// sent as ESC plus a code, hence two septets. The euro sign is the only
// extension character above U+0100.
const extensionLatin1 = "\f[]{}\\^~|"

// latin1Cost maps a rune below U+0100 to its GSM-7 septet cost, with 0
// meaning "not representable". A table keeps the hot path to one index for
// ordinary Latin text.
var latin1Cost = func() (t [256]uint8) {
	for _, r := range basicLatin1 {
		t[r] = 1
	}
	for _, r := range extensionLatin1 {
		t[r] = gsm7Escaped
	}
	return t
}()

// gsm7Cost returns the septets r needs in GSM-7, or 0 if r forces UCS-2.
func gsm7Cost(r rune) int {
	if r < 256 {
		return int(latin1Cost[r])
	}
	switch r {
	case 'Δ', 'Φ', 'Γ', 'Λ', 'Ω', 'Π', 'Ψ', 'Σ', 'Θ', 'Ξ':
		return 1
	case '€':
		return gsm7Escaped
	}
	return 0
}

// Of reports the encoding, length and segment count of text.
//
// Invalid UTF-8 bytes decode as U+FFFD, which is outside GSM-7, so malformed
// input is sized as UCS-2 rather than undercounted.
func Of(text string) Count {
	if text == "" {
		return Count{Encoding: GSM7}
	}
	septets := 0
	for i, r := range text {
		c := gsm7Cost(r)
		if c == 0 {
			// Everything up to i is GSM-7, i.e. BMP runes of one UTF-16
			// unit each, so only the remainder needs a closer look.
			units := utf8.RuneCountInString(text[:i]) + utf16Units(text[i:])
			return Count{Encoding: UCS2, Units: units, Segments: segments(text, units, ucs2Single, ucs2Multi, utf16Cost)}
		}
		septets += c
	}
	return Count{Encoding: GSM7, Units: septets, Segments: segments(text, septets, gsm7Single, gsm7Multi, gsm7Cost)}
}

// UCS2Characters returns the characters of text outside GSM-7, each once, in
// the order they first appear: the characters that make it UCS-2 (none for
// a GSM-7 text). A character is one code point, so an emoji built of
// several (a skin tone, a zero-width joiner) lists each, invisible ones
// included, as each forces UCS-2 alone.
func UCS2Characters(text string) []string {
	out := []string{}
	var seen map[rune]bool
	for _, r := range text {
		if gsm7Cost(r) != 0 || seen[r] {
			continue
		}
		if seen == nil {
			seen = map[rune]bool{}
		}
		seen[r] = true
		out = append(out, string(r))
	}
	return out
}

// utf16Cost is the number of UTF-16 code units r needs: runes beyond the
// Basic Multilingual Plane (most emoji) are a surrogate pair.
func utf16Cost(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// utf16Units counts the UTF-16 code units of s.
func utf16Units(s string) int {
	n := 0
	for _, r := range s {
		n += utf16Cost(r)
	}
	return n
}

// segments is how many parts a text of the given length needs: one up to
// single units; beyond that, parts of at most multi units, filled the way an
// encoder fills them. A character is never cut in two, so an extension
// character (ESC and its code) or a surrogate pair that would straddle a
// boundary starts the next part, which can add a part to ceil(units/multi).
// Independent calculators (Twilio's, split-sms) and carriers count the same.
func segments(text string, units, single, multi int, cost func(rune) int) int {
	switch {
	case units == 0:
		return 0
	case units <= single:
		return 1
	}
	parts, used := 1, 0
	for _, r := range text {
		c := cost(r)
		if used+c > multi {
			parts, used = parts+1, 0
		}
		used += c
	}
	return parts
}
