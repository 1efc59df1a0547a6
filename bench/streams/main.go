// Command streams measures the live event stream (GET /api/public/v1/events,
// issue 24) of a running server, against its webhook dispatcher in the same
// run. bench/streams.sh starts the server and runs the scenarios; see
// docs/benchmarks.md ("Live events: the stream").
//
// Live (streams and events): a baseline phase sends at -rate for -d with no
// stream open (webhook latency, server CPU per send); then -streams streams
// open (server RSS before and after: memory per stream), stay idle for
// -idle (server CPU of open streams), and the same sends run again: event
// to client latency, events delivered per second, server CPU per delivered
// event, and the webhook's latency for the same events.
//
//	streams -url http://HOST:PORT -key KEY -from LINE -pid PID [-streams 2000] [-rate 200] [-d 20s]
//
// Idle: -rate 0 opens the streams and holds them for -idle: memory, CPU and
// the keepalive comments received.
//
//	streams -url … -key KEY -pid PID -streams 10000 -rate 0 -idle 20s
//
// Replay: one client resumes after an event id and reads -replay-n events.
//
//	streams -url … -key KEY -replay evt_N [-replay-n 100000]
//
// Fill writes events into a stopped server's SQLite database (see fill.go).
//
//	streams fill -db FILE -account ID -line NUMBER [-n 100001]
//
// Ceiling serves the live scenario's requests with no database behind them
// and prints "listening on ADDR": the same client against it measures the
// best this machine allows a Go server doing the same work on the wire (see
// ceiling.go; bench/streams.sh runs it with CEILING=1).
//
//	streams ceiling [-listen 127.0.0.1:0] [-key KEY]
package main

import (
	"context"
	"flag"
	"log"
	"net/http"
	"os"
	"strings"
	"time"
)

type config struct {
	url, key, from string
	pid            int
	hz             int
	streams        int
	rate           int
	dur            time.Duration
	baseline       bool
	idle           time.Duration
	settle         time.Duration
	webhook        bool
	query          string
	bufSize        int
	openConc       int
	replay         string
	replayN        int
	stall          time.Duration
	metrics        string
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("streams: ")
	if len(os.Args) > 1 && (os.Args[1] == "fill" || os.Args[1] == "ceiling") {
		run := fillMain
		if os.Args[1] == "ceiling" {
			run = ceilingMain
		}
		if err := run(os.Args[2:]); err != nil {
			log.Fatal(err)
		}
		return
	}
	var c config
	flag.StringVar(&c.url, "url", "", "the server's base URL, e.g. http://127.0.0.1:8080")
	flag.StringVar(&c.key, "key", "", "API key: messages:read for the streams, sms:send for -rate, webhooks:write for -webhook")
	flag.StringVar(&c.from, "from", "", "the account's line the sends go from")
	flag.IntVar(&c.pid, "pid", 0, "the server's process id, for its RSS and CPU time (/proc)")
	flag.IntVar(&c.hz, "hz", 100, "clock ticks per second of /proc/PID/stat (getconf CLK_TCK)")
	flag.IntVar(&c.streams, "streams", 2000, "streams to hold open")
	flag.IntVar(&c.rate, "rate", 200, "events written per second (sends); 0: the idle scenario")
	flag.DurationVar(&c.dur, "d", 20*time.Second, "length of each sending phase")
	flag.BoolVar(&c.baseline, "baseline", true, "run the sends once with no stream open first (CPU and webhook baseline)")
	flag.DurationVar(&c.idle, "idle", 5*time.Second, "how long the open streams are held with nothing sent (server CPU, keepalives)")
	flag.DurationVar(&c.settle, "settle", 3*time.Second, "wait after opening the streams before reading the server's RSS")
	flag.BoolVar(&c.webhook, "webhook", true, "subscribe a local webhook receiver and report its latency for the same events")
	flag.StringVar(&c.query, "query", "", "query string for the events endpoint, e.g. types=AccountSMS")
	flag.IntVar(&c.bufSize, "buf", 1024, "each stream's initial parse buffer, bytes")
	flag.IntVar(&c.openConc, "open-concurrency", 64, "streams being opened at once")
	flag.StringVar(&c.metrics, "metrics", "", "the server's /metrics URL: where the memory per stream goes (Go heap, stacks, goroutines) and the server's own stream counters")
	flag.StringVar(&c.replay, "replay", "", "replay mode: resume one stream after this event id (evt_N)")
	flag.IntVar(&c.replayN, "replay-n", 100000, "replay mode: events to read")
	flag.DurationVar(&c.stall, "stall", 10*time.Second, "replay mode: give up after this long without an event")
	flag.Parse()
	if c.url == "" || c.key == "" {
		flag.Usage()
		os.Exit(2)
	}
	c.url = strings.TrimSuffix(c.url, "/")
	ctx := context.Background()
	var err error
	switch {
	case c.replay != "":
		err = runReplay(ctx, c, os.Stdout)
	default:
		err = runLive(ctx, c, os.Stdout)
	}
	if err != nil {
		log.Fatal(err)
	}
}

func (c config) api() string { return c.url + "/api/public/v1" }

func (c config) eventsURL() string {
	u := c.api() + "/events"
	if c.query != "" {
		u += "?" + c.query
	}
	return u
}

// probe reads the server's RSS and CPU (zero without -pid).
type probe struct {
	pid, hz int
}

func (p probe) rss() int64 {
	if p.pid == 0 {
		return 0
	}
	kib, err := rssKiB(p.pid)
	if err != nil {
		log.Fatal(err)
	}
	return kib
}

// cpu is the process's CPU time so far (the server's, or this tool's with
// pid os.Getpid()).
func (p probe) cpu() time.Duration {
	if p.pid == 0 {
		return 0
	}
	t, err := cpuTicks(p.pid)
	if err != nil {
		log.Fatal(err)
	}
	return time.Duration(t) * time.Second / time.Duration(p.hz)
}

func newClient(conns int) *http.Client {
	return &http.Client{Transport: newTransport(conns, 4096), Timeout: 30 * time.Second}
}
