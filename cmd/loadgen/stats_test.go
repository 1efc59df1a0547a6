package main

import (
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	// 1..100 ms and 1..1000 ms: nearest rank makes pN exactly N% of the way.
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	thousand := make([]int, 1000)
	for i := range thousand {
		thousand[i] = i + 1
	}

	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"single p50", ms(7), 50, 7 * time.Millisecond},
		{"single p99", ms(7), 99, 7 * time.Millisecond},
		{"two p50 takes lower", ms(1, 2), 50, 1 * time.Millisecond},
		{"two p51 takes upper", ms(1, 2), 51, 2 * time.Millisecond},
		{"odd p50 is median", ms(1, 2, 3, 4, 5), 50, 3 * time.Millisecond},
		{"even p50 does not interpolate", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p100 is max", ms(1, 2, 3, 4), 100, 4 * time.Millisecond},
		{"tiny p is min", ms(1, 2, 3, 4), 0.0001, 1 * time.Millisecond},
		{"p0 clamps to min", ms(1, 2, 3), 0, 1 * time.Millisecond},
		{"p above 100 clamps to max", ms(1, 2, 3), 150, 3 * time.Millisecond},
		{"100 values p50", ms(hundred...), 50, 50 * time.Millisecond},
		{"100 values p95", ms(hundred...), 95, 95 * time.Millisecond},
		{"100 values p99", ms(hundred...), 99, 99 * time.Millisecond},
		{"1000 values p99 no float drift", ms(thousand...), 99, 990 * time.Millisecond},
		{"1000 values p99.9", ms(thousand...), 99.9, 999 * time.Millisecond},
		{"1000 values p95", ms(thousand...), 95, 950 * time.Millisecond},
		// One slow outlier in 100: p99 must not see it, max must.
		{"outlier below p99", append(ms(hundred[:99]...), time.Second), 99, 99 * time.Millisecond},
		{"outlier is max", append(ms(hundred[:99]...), time.Second), 100, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(n=%d, %v) = %v, want %v", len(tt.sorted), tt.p, got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	// Unsorted input; 4 successes out of 6 requests over 2s.
	lat := []time.Duration{4 * time.Millisecond, 1 * time.Millisecond, 3 * time.Millisecond, 2 * time.Millisecond}
	s := summarize(lat, 6, 2, 2*time.Second, 4000)
	want := Summary{
		Requests: 6, Errors: 2, Elapsed: 2 * time.Second,
		RPS:  2, // successful only
		Mean: 2500 * time.Microsecond,
		P50:  2 * time.Millisecond, P95: 4 * time.Millisecond, P99: 4 * time.Millisecond, Max: 4 * time.Millisecond,
		MeanBytes: 1000,
	}
	if s != want {
		t.Errorf("summarize = %+v\nwant        %+v", s, want)
	}
	if z := summarize(nil, 3, 3, time.Second, 0); z.RPS != 0 || z.P99 != 0 || z.MeanBytes != 0 {
		t.Errorf("all-failed summary = %+v, want zero rate and latencies", z)
	}
}
