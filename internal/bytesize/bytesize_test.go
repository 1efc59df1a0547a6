package bytesize

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1048576": 1 << 20, "500MiB": 500 << 20, "1GiB": 1 << 30, "1gib": 1 << 30, "750MB": 750e6,
		"2 KiB": 2048, "3kb": 3000, "5B": 5, " 1TiB ": 1 << 40, "4GB": 4e9,
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"": "not a size", "-1": "not a size", "1.5GiB": "whole number", "2,5MB": "whole number", "GiB": "not a size", "5 apples": "unknown unit",
		"9223372036854775807KiB": "too large", "99999999999999999999": "too large", "1 G": "unknown unit",
	} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): error %v, want one saying %q", in, err, want)
		}
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0 B", 900: "900 B", 1024: "1 KiB", 1536: "1.5 KiB", 500 << 20: "500 MiB", 1 << 30: "1 GiB",
		750e6: "715.2 MiB", (1 << 30) - 1: "1023.9 MiB", 5 << 40: "5 TiB",
	} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
}
