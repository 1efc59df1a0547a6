package segment

import (
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// gsm7Basic is the 3GPP TS 23.038 default alphabet written out by code
// point, independently of the implementation's table, so the two can be
// checked against each other. Index 0x1B is ESC, which is not a character.
var gsm7Basic = [128]rune{
	'@', '£', '$', '¥', 'è', 'é', 'ù', 'ì', 'ò', 'Ç', '\n', 'Ø', 'ø', '\r', 'Å', 'å',
	'Δ', '_', 'Φ', 'Γ', 'Λ', 'Ω', 'Π', 'Ψ', 'Σ', 'Θ', 'Ξ', -1, 'Æ', 'æ', 'ß', 'É',
	' ', '!', '"', '#', '¤', '%', '&', '\'', '(', ')', '*', '+', ',', '-', '.', '/',
	'0', '1', '2', '3', '4', '5', '6', '7', '8', '9', ':', ';', '<', '=', '>', '?',
	'¡', 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J', 'K', 'L', 'M', 'N', 'O',
	'P', 'Q', 'R', 'S', 'T', 'U', 'V', 'W', 'X', 'Y', 'Z', 'Ä', 'Ö', 'Ñ', 'Ü', '§',
	'¿', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o',
	'p', 'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y', 'z', 'ä', 'ö', 'ñ', 'ü', 'à',
}

// gsm7Extension is the extension table (characters reached through ESC).
var gsm7Extension = []rune{'\f', '^', '{', '}', '\\', '[', '~', ']', '|', '€'}

func TestTablesMatchStandard(t *testing.T) {
	want := map[rune]int{}
	for _, r := range gsm7Basic {
		if r >= 0 {
			want[r] = 1
		}
	}
	for _, r := range gsm7Extension {
		want[r] = 2
	}
	if len(want) != 127+10 {
		t.Fatalf("reference table has %d distinct characters, want 137", len(want))
	}
	// Every code point of the BMP plus a slice of the astral planes.
	for r := rune(0); r < 0x20000; r++ {
		if got := gsm7Cost(r); got != want[r] {
			t.Errorf("gsm7Cost(%U %q) = %d, want %d", r, r, got, want[r])
		}
	}
}

func TestOf(t *testing.T) {
	rep := strings.Repeat
	tests := []struct {
		name     string
		text     string
		enc      Encoding
		units    int
		segments int
	}{
		{"empty", "", GSM7, 0, 0},
		{"single char", "a", GSM7, 1, 1},
		{"hello", "Hello, world!", GSM7, 13, 1},

		// GSM-7 boundaries: 160 in one, then 153 per segment.
		{"gsm 159", rep("a", 159), GSM7, 159, 1},
		{"gsm 160", rep("a", 160), GSM7, 160, 1},
		{"gsm 161", rep("a", 161), GSM7, 161, 2},
		{"gsm 306", rep("a", 306), GSM7, 306, 2},
		{"gsm 307", rep("a", 307), GSM7, 307, 3},
		{"gsm 459", rep("a", 459), GSM7, 459, 3},
		{"gsm 460", rep("a", 460), GSM7, 460, 4},
		{"gsm long, no cap", rep("a", 153*40), GSM7, 6120, 40},

		// Extension characters count 2 and keep GSM-7.
		{"euro", "€", GSM7, 2, 1},
		{"80 euro", rep("€", 80), GSM7, 160, 1},
		{"81 euro", rep("€", 81), GSM7, 162, 2},
		{"159 a + euro straddles 160", rep("a", 159) + "€", GSM7, 161, 2},
		{"158 a + euro fits", rep("a", 158) + "€", GSM7, 160, 1},
		{"152 brackets", rep("[", 152), GSM7, 304, 2},
		// A part of 153 septets holds 76 brackets: the 77th would be cut.
		{"153 brackets", rep("[", 153), GSM7, 306, 3},
		{"euro straddles 153, no extra part", rep("a", 152) + "€" + rep("a", 10), GSM7, 164, 2},
		{"euro straddles 153, extra part", rep("a", 152) + "€" + rep("a", 152), GSM7, 306, 3},
		{"euro ends part 1 exactly", rep("a", 151) + "€" + rep("a", 153), GSM7, 306, 2},
		{"all extension", "€[]{}\\^~|\f", GSM7, 20, 1},
		{"braces in code", "if (x) { y[0] = ~z | w; }", GSM7, 31, 1},
		{"form feed", "a\fb", GSM7, 4, 1},

		// Whole basic table (127 characters, ESC excluded).
		{"basic table", basicTableString(), GSM7, 127, 1},
		{"Greek capitals", "ΔΦΓΛΩΠΨΣΘΞ", GSM7, 10, 1},
		{"accents in table", "èéùìòÇØøÅåÆæßÉÄÖÑÜäöñüà¡¿£¥§¤", GSM7, 29, 1},
		{"newlines", "a\r\nb\n", GSM7, 5, 1},

		// Look-alikes outside GSM-7 force UCS-2.
		{"c cedilla lower", "ç", UCS2, 1, 1},
		{"C cedilla upper", "Ç", GSM7, 1, 1},
		{"backtick", "`", UCS2, 1, 1},
		{"tab", "a\tb", UCS2, 3, 1},
		{"nbsp", "a\u00a0b", UCS2, 3, 1},
		{"a acute", "á", UCS2, 1, 1},
		{"E grave upper", "È", UCS2, 1, 1},
		{"Greek Alpha", "Α", UCS2, 1, 1},
		{"Greek lower delta", "δ", UCS2, 1, 1},
		{"combining acute", "e\u0301", UCS2, 2, 1},
		{"escape control", "\x1b", UCS2, 1, 1},
		{"NUL", "\x00", UCS2, 1, 1},
		{"invalid utf8", "ab\xff", UCS2, 3, 1},

		// Typography the spec names as non-GSM-7.
		{"left double quote", "“", UCS2, 1, 1},
		{"right double quote", "”", UCS2, 1, 1},
		{"curly apostrophe", "It’s", UCS2, 4, 1},
		{"curly quotes sentence", "He said “hi”", UCS2, 12, 1},
		{"en dash", "1–2", UCS2, 3, 1},
		{"em dash", "wait—what", UCS2, 9, 1},
		{"bullet", "• item", UCS2, 6, 1},
		{"ellipsis", "so…", UCS2, 3, 1},

		// Non-Latin scripts.
		{"Cyrillic", "Привет", UCS2, 6, 1},
		{"Chinese", "你好世界", UCS2, 4, 1},
		{"Arabic", "مرحبا", UCS2, 5, 1},

		// Emoji: astral-plane runes are surrogate pairs.
		{"grinning face", "😀", UCS2, 2, 1},
		{"flag", "🇺🇸", UCS2, 4, 1},
		{"heart BMP", "♥", UCS2, 1, 1},
		{"heart with VS16", "❤️", UCS2, 2, 1},
		{"family ZWJ", "👨‍👩‍👧", UCS2, 8, 1},
		{"text then emoji", "Hi 😀", UCS2, 5, 1},
		{"35 emoji", rep("😀", 35), UCS2, 70, 1},
		{"36 emoji", rep("😀", 36), UCS2, 72, 2},

		// UCS-2 boundaries: 70 in one, then 67 per segment. GSM-7 characters
		// before the trigger count one unit each once the message is UCS-2,
		// and extension characters lose their double weight.
		{"ucs2 70", "ç" + rep("a", 69), UCS2, 70, 1},
		{"ucs2 71", "ç" + rep("a", 70), UCS2, 71, 2},
		{"ucs2 134", rep("a", 133) + "ç", UCS2, 134, 2},
		{"ucs2 135", rep("a", 134) + "ç", UCS2, 135, 3},
		{"ucs2 201", rep("a", 200) + "ç", UCS2, 201, 3},
		{"ucs2 202", rep("a", 201) + "ç", UCS2, 202, 4},
		{"euro in ucs2 counts 1", rep("€", 69) + "ç", UCS2, 70, 1},
		{"late trigger", rep("a", 160) + "…", UCS2, 161, 3},
		{"emoji straddles 70", rep("a", 69) + "😀", UCS2, 71, 2},
		// A surrogate pair is never cut: one straddling 67 starts part 2.
		{"emoji straddles 67, extra part", rep("ж", 66) + "😀" + rep("ж", 66), UCS2, 134, 3},
		{"emoji ends part 1 exactly", rep("ж", 65) + "😀" + rep("ж", 67), UCS2, 134, 2},
		// Only a surrogate pair is kept whole, not a grapheme: a flag (two
		// regional indicators) may end part 1 with its first half.
		{"flag split between its indicators", rep("ж", 65) + "🇺🇸" + rep("ж", 65), UCS2, 134, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Of(tt.text)
			want := Count{Encoding: tt.enc, Units: tt.units, Segments: tt.segments}
			if got != want {
				t.Errorf("Of(%q) = %+v, want %+v", tt.text, got, want)
			}
		})
	}
}

func basicTableString() string {
	var b strings.Builder
	for _, r := range gsm7Basic {
		if r >= 0 {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestOfAllocationFree(t *testing.T) {
	for _, s := range []string{benchGSM, benchUCS2, benchLateUCS2} {
		if n := testing.AllocsPerRun(100, func() { _ = Of(s) }); n != 0 {
			t.Errorf("Of allocated %v times per call for %.20q…", n, s)
		}
	}
}

func FuzzOf(f *testing.F) {
	for _, s := range []string{"", "a", "€", "ç", "😀", "🇺🇸", benchGSM, benchUCS2, "\xff", strings.Repeat("[", 81)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := Of(s)

		// Units must match an independent measurement for the encoding.
		switch c.Encoding {
		case GSM7:
			want := 0
			for _, r := range s {
				k := gsm7Cost(r)
				if k == 0 {
					t.Fatalf("Of(%q) chose GSM-7 despite %U", s, r)
				}
				want += k
			}
			if c.Units != want {
				t.Fatalf("Of(%q).Units = %d, want %d septets", s, c.Units, want)
			}
		case UCS2:
			if want := len(utf16.Encode([]rune(s))); c.Units != want {
				t.Fatalf("Of(%q).Units = %d, want %d UTF-16 units", s, c.Units, want)
			}
		default:
			t.Fatalf("Of(%q).Encoding = %q", s, c.Encoding)
		}

		// Segments must match a reference that builds the parts: runes
		// appended to the current part until the next would not fit.
		single, multi := gsm7Single, gsm7Multi
		cost := func(r rune) int { return gsm7Cost(r) }
		if c.Encoding == UCS2 {
			single, multi = ucs2Single, ucs2Multi
			cost = func(r rune) int { return len(utf16.Encode([]rune{r})) }
		}
		var parts [][]rune
		if c.Units > single {
			used := multi // no part open yet
			for _, r := range []rune(s) {
				if used+cost(r) > multi {
					parts, used = append(parts, nil), 0
				}
				parts[len(parts)-1] = append(parts[len(parts)-1], r)
				used += cost(r)
			}
		} else if c.Units > 0 {
			parts = [][]rune{[]rune(s)}
		}
		if c.Segments != len(parts) {
			t.Fatalf("Of(%q) = %+v, want %d segments", s, c, len(parts))
		}
		if c.Units < utf8.RuneCountInString(s) {
			t.Fatalf("Of(%q).Units = %d, fewer than its runes", s, c.Units)
		}
	})
}

var (
	benchGSM      = strings.Repeat("Your code is 123456. Reply STOP to opt out. ", 4)[:160]
	benchUCS2     = strings.Repeat("Привет 😀 “hi” — ", 5)
	benchLateUCS2 = strings.Repeat("a", 300) + "…"
)

func BenchmarkOf(b *testing.B) {
	for _, bc := range []struct{ name, text string }{
		{"GSM7", benchGSM},
		{"UCS2", benchUCS2},
		{"LateUCS2", benchLateUCS2},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.text)))
			for b.Loop() {
				_ = Of(bc.text)
			}
		})
	}
}

func TestUCS2Characters(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"empty", "", []string{}},
		{"gsm-7 basic and extension", basicTableString() + "€[]{}\\^~|ΔΞ", []string{}},
		{"one curly quote", "it’s", []string{"’"}},
		{"distinct, first appearance", "a–b—c–d😀e—😀", []string{"–", "—", "😀"}},
		{"lowercase greek, not capitals", "Δα", []string{"α"}},
		// An emoji of several code points lists each one; the joiner is
		// invisible but forces UCS-2 on its own.
		{"zwj sequence", "👩\u200d💻", []string{"👩", "\u200d", "💻"}},
		{"no-break space", "a\u00a0b", []string{"\u00a0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := UCS2Characters(tc.text)
			if got == nil || strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
				t.Errorf("UCS2Characters(%q) = %q, want %q", tc.text, got, tc.want)
			}
			// The list is empty exactly when Of says GSM-7.
			if gsm := Of(tc.text).Encoding == GSM7; gsm != (len(got) == 0) {
				t.Errorf("Of(%q) is %s but UCS2Characters lists %q", tc.text, Of(tc.text).Encoding, got)
			}
		})
	}
}
