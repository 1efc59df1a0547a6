package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// report is everything printed at the end of a run.
type report struct {
	opts    *options
	ceiling *Result // nil with -ceiling=false
	target  *Result // nil with -url ceiling
}

func (r *report) failed() bool {
	for _, res := range []*Result{r.ceiling, r.target} {
		if res != nil && res.Errors > 0 {
			return true
		}
	}
	return false
}

// ratio is target/ceiling requests/s, or false if there is nothing to divide.
func (r *report) ratio() (float64, bool) {
	if r.ceiling == nil || r.target == nil || r.ceiling.RPS == 0 {
		return 0, false
	}
	return r.target.RPS / r.ceiling.RPS, true
}

func (r *report) interrupted() bool {
	return (r.ceiling != nil && r.ceiling.Interrupted) || (r.target != nil && r.target.Interrupted)
}

func (r *report) writeTable(out io.Writer) error {
	// Build the whole table first so there is one write, and one error, to check.
	w := new(bytes.Buffer)
	o := r.opts
	if o.label != "" {
		fmt.Fprintf(w, "label: %s\n", o.label)
	}
	target := o.url
	if o.ceilingOnly {
		target = "(ceiling only)"
	}
	amount := fmt.Sprintf("d=%s", o.duration)
	if o.requests > 0 {
		amount = fmt.Sprintf("n=%d", o.requests)
	}
	fmt.Fprintf(w, "%s %s  c=%d %s warmup=%s", o.method, target, o.concurrency, amount, o.warmup)
	if o.ceiling {
		fmt.Fprintf(w, " ceiling-bytes=%d", o.ceilingBytes)
	}
	fmt.Fprint(w, "\n\n")

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\trequests\terrors\tduration\treq/s\tmean\tp50\tp95\tp99\tmax\tbytes/resp\t")
	for _, row := range []struct {
		name string
		res  *Result
	}{{"ceiling", r.ceiling}, {"target", r.target}} {
		s := row.res
		if s == nil {
			continue
		}
		lat, size := "-\t-\t-\t-\t-", "-" // no successful response to describe
		if s.Requests > s.Errors {
			lat = fmt.Sprintf("%s\t%s\t%s\t%s\t%s", fmtLatency(s.Mean), fmtLatency(s.P50),
				fmtLatency(s.P95), fmtLatency(s.P99), fmtLatency(s.Max))
			size = fmt.Sprintf("%.0f", s.MeanBytes)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2fs\t%.0f\t%s\t%s\t\n",
			row.name, s.Requests, s.Errors, s.Elapsed.Seconds(), s.RPS, lat, size)
	}
	tw.Flush()
	if ratio, ok := r.ratio(); ok {
		fmt.Fprintf(w, "\ntarget/ceiling req/s: %.3f (%.1f%%)\n", ratio, 100*ratio)
	}

	for _, row := range []struct {
		name string
		res  *Result
	}{{"ceiling", r.ceiling}, {"target", r.target}} {
		if row.res == nil || row.res.Errors == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s errors (first %d distinct):\n", row.name, maxErrorSamples)
		for _, e := range row.res.ErrorSamples {
			fmt.Fprintf(w, "  %8d  %s\n", e.Count, e.Message)
		}
		if row.res.OtherErrors > 0 {
			fmt.Fprintf(w, "  %8d  (other errors)\n", row.res.OtherErrors)
		}
	}
	if r.failed() {
		fmt.Fprintln(w, "\nnote: req/s and latencies count successful responses only")
	}
	if r.interrupted() {
		fmt.Fprintln(w, "\ninterrupted: figures cover only the part that ran")
	}
	_, err := out.Write(w.Bytes())
	return err
}

// fmtLatency prints three significant digits, which is all a noisy
// machine's latencies deserve.
func fmtLatency(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}

// The JSON form is for scripts: units are in the field names (seconds,
// milliseconds as floats) so no duration strings need parsing.
type jsonReport struct {
	Label       string      `json:"label,omitempty"`
	Config      jsonConfig  `json:"config"`
	Ceiling     *jsonResult `json:"ceiling,omitempty"`
	Target      *jsonResult `json:"target,omitempty"`
	RatioRPS    *float64    `json:"ratio_rps,omitempty"` // target/ceiling requests/s
	Interrupted bool        `json:"interrupted,omitempty"`
}

type jsonConfig struct {
	URL          string  `json:"url"` // "ceiling" for a ceiling-only run
	Method       string  `json:"method"`
	Concurrency  int     `json:"concurrency"`
	Requests     int     `json:"requests,omitempty"`
	DurationS    float64 `json:"duration_s,omitempty"`
	WarmupS      float64 `json:"warmup_s"`
	Expect       int     `json:"expect,omitempty"`
	Ceiling      bool    `json:"ceiling"`
	CeilingBytes int     `json:"ceiling_bytes"`
}

type jsonResult struct {
	Requests       int64       `json:"requests"`
	Errors         int64       `json:"errors"`
	DurationS      float64     `json:"duration_s"`
	RequestsPerSec float64     `json:"requests_per_sec"` // successful only
	MeanMs         float64     `json:"mean_ms"`
	P50Ms          float64     `json:"p50_ms"`
	P95Ms          float64     `json:"p95_ms"`
	P99Ms          float64     `json:"p99_ms"`
	MaxMs          float64     `json:"max_ms"`
	MeanBytes      float64     `json:"mean_bytes"`
	ErrorSamples   []jsonError `json:"error_samples,omitempty"`
	OtherErrors    int64       `json:"other_errors,omitempty"`
}

type jsonError struct {
	Message string `json:"message"`
	Count   int64  `json:"count"`
}

func toJSONResult(r *Result) *jsonResult {
	if r == nil {
		return nil
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	j := &jsonResult{
		Requests:       r.Requests,
		Errors:         r.Errors,
		DurationS:      r.Elapsed.Seconds(),
		RequestsPerSec: r.RPS,
		MeanMs:         ms(r.Mean),
		P50Ms:          ms(r.P50),
		P95Ms:          ms(r.P95),
		P99Ms:          ms(r.P99),
		MaxMs:          ms(r.Max),
		MeanBytes:      r.MeanBytes,
		OtherErrors:    r.OtherErrors,
	}
	for _, e := range r.ErrorSamples {
		j.ErrorSamples = append(j.ErrorSamples, jsonError(e))
	}
	return j
}

// writeJSON prints one object on one line, so runs can be appended to a
// JSON-lines file and compared later.
func (r *report) writeJSON(w io.Writer) error {
	o := r.opts
	url := o.url
	if o.ceilingOnly {
		url = ceilingOnlyURL
	}
	out := jsonReport{
		Label: o.label,
		Config: jsonConfig{
			URL:          url,
			Method:       o.method,
			Concurrency:  o.concurrency,
			Requests:     o.requests,
			DurationS:    o.duration.Seconds(),
			WarmupS:      o.warmup.Seconds(),
			Expect:       o.expect,
			Ceiling:      o.ceiling,
			CeilingBytes: o.ceilingBytes,
		},
		Ceiling:     toJSONResult(r.ceiling),
		Target:      toJSONResult(r.target),
		Interrupted: r.interrupted(),
	}
	if ratio, ok := r.ratio(); ok {
		out.RatioRPS = &ratio
	}
	return json.NewEncoder(w).Encode(out)
}
