package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Every bucket holds the values between the previous bucket's upper bound
// and its own.
func TestBucketsContiguous(t *testing.T) {
	for i := 1; i < histBuckets-1; i++ {
		lo := upper(i-1) + 1
		if bucketOf(lo) != i || bucketOf(upper(i)) != i {
			t.Fatalf("bucket %d: [%d, %d] maps to %d and %d", i, lo, upper(i), bucketOf(lo), bucketOf(upper(i)))
		}
	}
	if bucketOf(-5) != 0 || bucketOf(1<<62) != histBuckets-1 {
		t.Fatal("out-of-range values not clamped")
	}
}

// Quantiles are the nearest-rank ones of the exact samples, within the
// buckets' 0.2%, and never below them.
func TestQuantilesMatchExact(t *testing.T) {
	var h hist
	r := rand.New(rand.NewPCG(1, 2))
	var exact []time.Duration
	for range 100000 {
		// Log-uniform from 10 µs to 10 s: every bucket range gets used.
		d := time.Duration(10e3 * math.Pow(10, r.Float64()*6))
		exact = append(exact, d)
		h.add(d)
	}
	slices.Sort(exact)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		rank := int(q*float64(len(exact))+0.999999) - 1
		want := exact[rank]
		got := h.quantile(q)
		if got < want.Truncate(time.Microsecond) || float64(got-want) > 0.002*float64(want)+float64(time.Microsecond) {
			t.Errorf("q%.3f = %v, exact %v", q, got, want)
		}
	}
	if h.quantile(1) != exact[len(exact)-1] {
		t.Errorf("max = %v, want %v", h.quantile(1), exact[len(exact)-1])
	}
	if h.count() != 100000 {
		t.Errorf("count = %d", h.count())
	}
}

func TestEmptyHist(t *testing.T) {
	var h hist
	if h.quantile(.5) != 0 || h.summary() != "no samples" {
		t.Fatal("empty histogram reports samples")
	}
}

func TestSmallSample(t *testing.T) {
	var h hist
	const us = time.Microsecond
	for _, d := range []time.Duration{300 * us, 100 * us, 200 * us} {
		h.add(d)
	}
	// Below 1,024 µs every microsecond has its bucket.
	if h.quantile(.5) != 200*us || h.quantile(.99) != 300*us || h.quantile(.01) != 100*us {
		t.Fatalf("p1 %v p50 %v p99 %v", h.quantile(.01), h.quantile(.5), h.quantile(.99))
	}
}
