package main

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Names, numbers and versions the CLI prints come from the database or a
// backup, written by whoever could create an account, a user or a line. A
// terminal obeys some characters instead of showing them: ESC starts
// sequences that retitle the window or clear the screen, the C1 controls do
// the same in one byte, and the bidi overrides and isolates reorder what
// follows. termSafe and jsonSafe show them as escapes instead, applied where
// the CLI prints (cli.print and run's error line) so no command can forget.

// unsafeRune reports whether a terminal would act on r rather than show it.
// Tab and newline are the text's own layout (tables, lists) and pass.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20:
		return r != '\n' && r != '\t'
	case r == 0x7f, r >= 0x80 && r <= 0x9f: // DEL, C1
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidi overrides and isolates
		return true
	}
	return false
}

// termSafe returns s with every unsafe character, and every byte that is
// not UTF-8, written as a visible escape: \x1b, \x9b, \u202e.
func termSafe(s string) string {
	return escapeUnsafe(s, func(b *strings.Builder, r rune, invalid byte) {
		switch {
		case r == utf8.RuneError:
			fmt.Fprintf(b, `\x%02x`, invalid)
		case r < 0x80:
			fmt.Fprintf(b, `\x%02x`, r)
		default:
			fmt.Fprintf(b, `\u%04x`, r)
		}
	})
}

// jsonSafe escapes, in JSON that encoding/json wrote, the unsafe characters
// it leaves as they are (DEL, C1, bidi): \u009b decodes to the same string.
// The encoder already escaped the C0 controls and replaced invalid UTF-8.
func jsonSafe(s string) string {
	return escapeUnsafe(s, func(b *strings.Builder, r rune, _ byte) { fmt.Fprintf(b, `\u%04x`, r) })
}

// escapeUnsafe is s with each unsafe rune (or, as utf8.RuneError, invalid
// byte) replaced by what esc writes.
func escapeUnsafe(s string, esc func(b *strings.Builder, r rune, invalid byte)) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			esc(&b, r, s[i])
		case unsafeRune(r):
			esc(&b, r, 0)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
