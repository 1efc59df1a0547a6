package main

import (
	"math"
	"slices"
	"time"
)

// Summary is the figures reported for one measured server.
type Summary struct {
	Requests  int64         // completed requests, successful or not
	Errors    int64         // requests that failed or had an unexpected status
	Elapsed   time.Duration // wall time of the measured phase
	RPS       float64       // successful requests per second
	Mean      time.Duration // latencies are over successful requests only
	P50       time.Duration
	P95       time.Duration
	P99       time.Duration
	Max       time.Duration
	MeanBytes float64 // mean response body size of successful requests
}

// summarize computes a Summary. latencies holds one entry per successful
// request and is sorted in place.
//
// We keep every latency rather than a histogram: at a few tens of thousands
// of requests per second a run of seconds to minutes is a few MB, and exact
// percentiles leave no bucket error to argue about.
//
// Only successful requests count towards req/s and the percentiles: a target
// answering fast 500s or 401s must not look fast.
func summarize(latencies []time.Duration, requests, errors int64, elapsed time.Duration, bodyBytes int64) Summary {
	slices.Sort(latencies)
	s := Summary{
		Requests: requests,
		Errors:   errors,
		Elapsed:  elapsed,
		P50:      Percentile(latencies, 50),
		P95:      Percentile(latencies, 95),
		P99:      Percentile(latencies, 99),
		Max:      Percentile(latencies, 100),
	}
	if n := len(latencies); n > 0 {
		var sum time.Duration
		for _, d := range latencies {
			sum += d
		}
		s.Mean = sum / time.Duration(n)
		s.MeanBytes = float64(bodyBytes) / float64(n)
		if elapsed > 0 {
			s.RPS = float64(n) / elapsed.Seconds()
		}
	}
	return s
}

// Percentile returns the p-th percentile (0 < p <= 100) of sorted, which
// must be in ascending order, using the nearest-rank method: the smallest
// value such that at least p% of the values are less than or equal to it.
// Nearest-rank never interpolates, so every reported figure is a latency
// that some request actually had. It returns 0 for an empty slice.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	// p*n/100 rather than p/100*n: for whole p the product is exact, so
	// p=99 of n=1000 is rank 990, not 991 from 990.0000000000001. The small
	// tolerance covers fractional p such as 99.9.
	rank := int(math.Ceil(p*float64(n)/100 - 1e-9))
	return sorted[min(max(rank, 1), n)-1]
}
