package sms

import (
	"strings"
	"testing"
)

func TestKeyword(t *testing.T) {
	for _, tt := range []struct {
		text string
		stop bool
	}{
		{"STOP", true},
		{"stop", true},
		{"  Stop.\r\n", true},
		{"STOP !", true},
		{"STOP .", true},
		{"'stop'", true},
		{`"STOP"`, true},
		{"¡STOP!", true},
		{"ＳＴＯＰ", true},       // full-width letters
		{"STOP\u200b", true}, // zero-width space
		{"\ufeffSTOP", true}, // byte-order mark
		{"STOP\x00", true},   // NUL
		{"unsubscribe", true},
		{"quit", true},
		{"Please STOP texting me", false},
		{"STOP please", false},
		{"STOPP", false},
		{"ST OP", false},
		{"", false},
		{strings.Repeat(" ", 70) + "STOP", false},
	} {
		if got := stopWords[keyword(tt.text)]; got != tt.stop {
			t.Errorf("keyword(%q) = %q: opt-out %t, want %t", tt.text, keyword(tt.text), got, tt.stop)
		}
	}
	for _, text := range []string{"START", "unstop.", "Ｓｔａｒｔ"} {
		if !startWords[keyword(text)] {
			t.Errorf("keyword(%q) = %q: not an opt-in", text, keyword(text))
		}
	}
}
