package main

import (
	"fmt"
	"math/bits"
	"sync/atomic"
	"time"
)

// hist is a latency histogram that many goroutines add to at once. Unlike
// cmd/loadgen, which keeps every latency, it buckets: 2,000 streams at 200
// events/s are 400,000 samples a second, hundreds of MB in a run. Buckets
// are log-linear in microseconds: exact below 1,024 µs, then 512 per power
// of two, so a reported quantile is within 0.2% of the true one (and never
// below it: a bucket reports its upper bound). The maximum is kept exactly.
type hist struct {
	counts [histBuckets]atomic.Int64
	max    atomic.Int64 // ns
	// No shared sample count: every stream adding to one counter would make
	// its cache line bounce between the cores on each event; count sums.
}

const (
	histExact   = 1024 // µs values below this have a bucket each
	histSub     = 512  // buckets per power of two above
	histBuckets = histExact + 44*histSub
)

func bucketOf(us int64) int {
	if us < histExact {
		if us < 0 {
			return 0 // a clock step: counted as no latency, not lost
		}
		return int(us)
	}
	e := bits.Len64(uint64(us)) - 10 // ≥ 1: us>>e is in [512, 1024)
	i := histExact + (e-1)*histSub + int(us>>e) - histSub
	return min(i, histBuckets-1)
}

// upper is the largest µs value bucket i holds.
func upper(i int) int64 {
	if i < histExact {
		return int64(i)
	}
	e := (i-histExact)/histSub + 1
	m := int64((i-histExact)%histSub + histSub)
	return (m+1)<<e - 1
}

func (h *hist) add(d time.Duration) {
	h.counts[bucketOf(d.Microseconds())].Add(1)
	for {
		m := h.max.Load()
		if int64(d) <= m || h.max.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

func (h *hist) count() int64 {
	var n int64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	return n
}

// quantile is the nearest-rank q-quantile (0 < q ≤ 1): the smallest bucket
// bound at or below which at least q of the samples lie; 0 with no samples.
func (h *hist) quantile(q float64) time.Duration {
	n := h.count()
	if n == 0 {
		return 0
	}
	rank := int64(q*float64(n) + 0.999999) // ceil, tolerant of float error
	rank = max(rank, 1)
	var seen int64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			d := time.Duration(upper(i)) * time.Microsecond
			return min(d, time.Duration(h.max.Load()))
		}
	}
	return time.Duration(h.max.Load())
}

// summary is "p50 X p99 Y max Z (N)" in milliseconds.
func (h *hist) summary() string {
	if h.count() == 0 {
		return "no samples"
	}
	return fmt.Sprintf("p50 %s  p99 %s  max %s  (%d samples)", ms(h.quantile(.5)), ms(h.quantile(.99)), ms(time.Duration(h.max.Load())), h.count())
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
