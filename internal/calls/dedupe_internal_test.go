package calls

import (
	"strconv"
	"testing"
	"time"
)

// TestCallListDedupeIsLinear: de-duplicating 100,000 distinct values (the audit's
// search body) takes milliseconds with a set; the scan per value it replaced
// took seconds. The bound leaves two orders of magnitude for a slow machine.
func TestCallListDedupeIsLinear(t *testing.T) {
	in := make([]string, 100_000)
	for i := range in {
		in[i] = strconv.Itoa(i)
	}
	in = append(in, in[:10]...)
	start := time.Now()
	out := dedupe(in)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("dedupe of %d values took %v", len(in), d)
	}
	if len(out) != 100_000 || out[0] != "0" || out[99_999] != "99999" {
		t.Errorf("dedupe kept %d values", len(out))
	}
}
