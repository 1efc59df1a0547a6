// Command loadgen is the project's HTTP load generator. It drives a target
// URL with a fixed number of concurrent keep-alive clients and reports
// requests/s and latency percentiles.
//
// By default it first measures a "ceiling": a trivial server that answers a
// fixed JSON document, driven with exactly the same settings. The machines we
// check speed targets on have 2 cores and are noisy, so an absolute requests/s
// figure moves by tens of percent between runs; the ratio target/ceiling,
// measured back to back in one run, is what a target such as "GET /users at
// -c 64 reaches at least 50% of the ceiling's requests/s, p99 under 10ms" is
// checked against.
//
// The ceiling runs in a separate process (loadgen re-executes itself with the
// hidden -serve-ceiling argument) so that, like the real server, it has its own
// runtime, scheduler and garbage collector and is reached over real loopback
// sockets. An in-process server would share loadgen's GC pauses and
// GOMAXPROCS and would not be a fair stand-in for a server process.
//
// Run "loadgen -h" for the flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"
)

// ceilingOnlyURL is the -url value that means "measure only the ceiling".
// It is useful for calibrating a machine and for trying the tool itself.
const ceilingOnlyURL = "ceiling"

// Exit codes. Usage errors use 2 like the flag package; a run in which any
// request failed exits 1 so that scripted speed checks cannot silently pass
// on a stream of 401s or 500s.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitInterrupted = 130
)

const usage = `usage: loadgen -url URL [flags]
       loadgen -url ceiling [flags]     (measure only the ceiling server)

Drives URL with -c concurrent keep-alive clients. Unless -ceiling=false, first
measures a trivial JSON server (a separate loadgen process) with identical
settings and prints the ratio target/ceiling of requests/s, which is stable on
noisy machines where absolute figures are not.

Flags:
  -url URL           target URL (required); "ceiling" measures only the ceiling
  -c N               concurrent clients (default 64)
  -n N               measured requests in total (excludes warmup)
  -d DURATION        measured duration, e.g. 10s (default 10s if -n is not given)
  -warmup DURATION   unmeasured warmup before each measurement (default 1s)
  -method METHOD     HTTP method (default GET)
  -H "Name: value"   request header; repeatable (-H "Host: x" sets the Host)
  -body STRING       request body; {{client}} in it becomes each client's
                     number (0 to c-1, zero-padded: 00 to 63 at -c 64), so
                     that clients send different bodies
  -body-file PATH    request body read from a file
  -expect CODE       expected status; anything else is an error (default: any 2xx)
  -timeout DURATION  per-request timeout including the body (default 10s)
  -ceiling           measure the ceiling first (default true)
  -ceiling-bytes N   size of the ceiling's JSON response (default 1024)
  -json              print one JSON object instead of the table
  -label TEXT        free text echoed into the output

req/s counts successful responses only; latency percentiles cover successful
responses only. Exit status: 0 ok, 1 some request failed or the run could not
start, 2 bad flags, 130 interrupted (partial results are still printed).
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options is the validated command line.
type options struct {
	url          string // "" when ceilingOnly
	ceilingOnly  bool
	concurrency  int
	requests     int
	duration     time.Duration
	warmup       time.Duration
	timeout      time.Duration
	method       string
	header       http.Header
	host         string
	body         []byte
	expect       int
	ceiling      bool
	ceilingBytes int
	json         bool
	label        string
}

// headerFlag collects repeated -H flags, checking each as it is given so that
// the error names the offending value.
type headerFlag [][2]string

func (h *headerFlag) String() string { return "" }

func (h *headerFlag) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || !isToken(name) {
		return errors.New(`want "Name: value"`)
	}
	*h = append(*h, [2]string{name, strings.TrimSpace(value)})
	return nil
}

// isToken reports whether s is a valid HTTP header name (RFC 9110 token).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r >= 0x80 || r <= ' ' || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) || r == 0x7f {
			return false
		}
	}
	return true
}

// parseFlags parses and validates args. Every error it returns is meant to be
// printed as one line; flag.ErrHelp is returned for -h.
func parseFlags(args []string) (*options, error) {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	// The flag package would print the full defaults on every error; we want
	// one line, so silence it and print the error ourselves.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}

	o := &options{}
	var headers headerFlag
	var bodyStr, bodyFile string
	fs.StringVar(&o.url, "url", "", "")
	fs.IntVar(&o.concurrency, "c", 64, "")
	fs.IntVar(&o.requests, "n", 0, "")
	fs.DurationVar(&o.duration, "d", 0, "")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "")
	fs.StringVar(&o.method, "method", http.MethodGet, "")
	fs.Var(&headers, "H", "")
	fs.StringVar(&bodyStr, "body", "", "")
	fs.StringVar(&bodyFile, "body-file", "", "")
	fs.IntVar(&o.expect, "expect", 0, "")
	fs.BoolVar(&o.ceiling, "ceiling", true, "")
	fs.IntVar(&o.ceilingBytes, "ceiling-bytes", 1024, "")
	fs.BoolVar(&o.json, "json", false, "")
	fs.StringVar(&o.label, "label", "", "")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (everything is a flag)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	switch {
	case o.url == "":
		return nil, errors.New("-url is required (use -url ceiling to measure only the ceiling)")
	case o.url == ceilingOnlyURL:
		if !o.ceiling {
			return nil, errors.New("-url ceiling contradicts -ceiling=false")
		}
		o.ceilingOnly, o.url = true, ""
	default:
		u, err := url.Parse(o.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("-url %q: want an absolute http:// or https:// URL", o.url)
		}
	}
	if o.concurrency < 1 {
		return nil, errors.New("-c must be at least 1")
	}
	if set["n"] && set["d"] {
		return nil, errors.New("-n and -d are exclusive: give a request count or a duration")
	}
	if set["n"] && o.requests < 1 {
		return nil, errors.New("-n must be at least 1")
	}
	if set["d"] && o.duration <= 0 {
		return nil, errors.New("-d must be positive")
	}
	if !set["n"] && !set["d"] {
		o.duration = 10 * time.Second
	}
	if o.warmup < 0 {
		return nil, errors.New("-warmup must not be negative")
	}
	if o.timeout <= 0 {
		return nil, errors.New("-timeout must be positive")
	}
	// Only final statuses make sense; 1xx responses never reach the client.
	if o.expect != 0 && (o.expect < 200 || o.expect > 599) {
		return nil, fmt.Errorf("-expect %d: want a status code between 200 and 599", o.expect)
	}
	if o.ceilingBytes < 0 {
		return nil, errors.New("-ceiling-bytes must not be negative")
	}
	if _, err := http.NewRequest(o.method, "http://127.0.0.1/", nil); err != nil || o.method == "" {
		return nil, fmt.Errorf("-method %q is not a valid HTTP method", o.method)
	}

	switch {
	case set["body"] && set["body-file"]:
		return nil, errors.New("-body and -body-file are exclusive")
	case set["body"]:
		o.body = []byte(bodyStr)
	case set["body-file"]:
		b, err := os.ReadFile(bodyFile)
		if err != nil {
			return nil, fmt.Errorf("-body-file: %v", err)
		}
		o.body = b
	}

	o.header = http.Header{}
	for _, kv := range headers {
		// net/http ignores Header["Host"]; the Host goes in Request.Host.
		if http.CanonicalHeaderKey(kv[0]) == "Host" {
			o.host = kv[1]
			continue
		}
		o.header.Add(kv[0], kv[1])
	}
	return o, nil
}

// config returns the engine settings shared by the ceiling and target runs;
// only the name and URL differ between the two.
func (o *options) config(name, url string, prog *progress) Config {
	return Config{
		Name:        name,
		URL:         url,
		Method:      o.method,
		Header:      o.header,
		Host:        o.host,
		Body:        o.body,
		Concurrency: o.concurrency,
		Requests:    o.requests,
		Duration:    o.duration,
		Warmup:      o.warmup,
		Timeout:     o.timeout,
		Expect:      o.expect,
		OnPhase:     prog.watch,
	}
}

// run is main without os.Exit, so tests can drive the whole command.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == serveCeilingArg || args[0] == "-"+serveCeilingArg) {
		return serveCeilingMain(args[1:], os.Stdin, stdout, stderr)
	}

	o, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: %v (see loadgen -h)\n", err)
		return exitUsage
	}

	// On Ctrl-C the workers stop, in-flight requests are abandoned without
	// being counted, the ceiling process is killed by its deferred stop, and
	// whatever was measured so far is still printed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var prog *progress
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		prog = startProgress(f)
	}

	rep := &report{opts: o}
	if o.ceiling {
		rep.ceiling, err = measureCeiling(ctx, o, prog)
		if err != nil {
			prog.stop()
			fmt.Fprintf(stderr, "loadgen: ceiling: %v\n", err)
			return exitFailed
		}
	}
	if !o.ceilingOnly && ctx.Err() == nil {
		rep.target, err = Run(ctx, o.config("target", o.url, prog))
		if err != nil {
			prog.stop()
			fmt.Fprintf(stderr, "loadgen: target: %v\n", err)
			return exitFailed
		}
	}
	prog.stop()

	if o.json {
		err = rep.writeJSON(stdout)
	} else {
		err = rep.writeTable(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: writing output: %v\n", err)
		return exitFailed
	}

	switch {
	case ctx.Err() != nil:
		return exitInterrupted
	case rep.failed():
		return exitFailed
	}
	return exitOK
}

// measureCeiling starts the ceiling process, measures it with the same
// settings as the target, and stops it before the target is measured so an
// idle server process is not left competing for the two cores.
func measureCeiling(ctx context.Context, o *options, prog *progress) (*Result, error) {
	status := o.expect
	if status == 0 {
		status = http.StatusOK
	}
	proc, err := startCeiling(o.ceilingBytes, status)
	if err != nil {
		return nil, err
	}
	defer proc.Stop()

	// Reuse the target's path and query so the request line has the same
	// size; the ceiling answers every path identically.
	target := "http://" + proc.Addr + "/"
	if !o.ceilingOnly {
		if u, err := url.Parse(o.url); err == nil {
			target = "http://" + proc.Addr + u.RequestURI()
		}
	}
	return Run(ctx, o.config("ceiling", target, prog))
}
