// Package bytesize reads and writes sizes in bytes the way operators type
// them: 500MiB, 1GiB, 750MB, or plain bytes.
package bytesize

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// units maps each accepted suffix (lowercased) to its multiplier: the
// binary ones (KiB … TiB) are powers of 1024, the decimal ones (KB … TB)
// powers of 1000, as their names say. "B" or no suffix is bytes.
var units = map[string]int64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// Parse reads a size: a whole number, optionally followed (with or without
// a space) by one of B, KB, MB, GB, TB, KiB, MiB, GiB, TiB, in any case.
// Fractions are refused, not rounded, so that the bytes are exactly the ones
// typed.
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("%q is not a size: want a whole number of bytes or of KB, MB, GB, KiB, MiB, GiB (e.g. 500MiB, 1GiB, 750MB)", s)
	}
	if i < len(t) && (t[i] == '.' || t[i] == ',') {
		return 0, fmt.Errorf("%q: use a whole number, in a smaller unit if need be (1536MiB, not 1.5GiB)", s)
	}
	unit, ok := units[strings.ToLower(strings.TrimSpace(t[i:]))]
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q (want B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)", s, strings.TrimSpace(t[i:]))
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil || n > math.MaxInt64/unit {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n * unit, nil
}

// Format writes n bytes in the largest binary unit it reaches, with at most
// one decimal, dropped when it is zero: 1 GiB, 512 MiB, 1.5 KiB, 900 B.
func Format(n int64) string {
	if n < 1<<10 && n > -1<<10 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, unit := float64(n), "B"
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"} {
		if math.Abs(v) < 1024 {
			break
		}
		v, unit = v/1024, u
	}
	s := strconv.FormatFloat(math.Floor(v*10)/10, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + " " + unit
}
