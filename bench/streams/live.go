package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// runLive is the live and the idle scenario (see the package comment).
func runLive(ctx context.Context, c config, out io.Writer) error {
	server := probe{pid: c.pid, hz: c.hz}
	self := probe{pid: os.Getpid(), hz: c.hz}
	sending := c.rate > 0
	if sending && c.from == "" {
		return fmt.Errorf("-from is needed to send")
	}
	phasesRun := 1
	if c.baseline {
		phasesRun = 2
	}
	l := newLedger(c.rate*int(c.dur.Seconds()+1)*phasesRun + 1000)
	client := newClient(sendWorkers)
	s := &sender{client: client, url: c.api() + "/sms/messages", key: c.key, from: c.from, ledger: l}

	var rcv *receiver
	if sending && c.webhook {
		var err error
		if rcv, err = startReceiver(l); err != nil {
			return err
		}
		id, err := subscribe(ctx, client, c.api(), c.key, rcv.url)
		if err != nil {
			return err
		}
		defer func() {
			if err := unsubscribe(client, c.api(), c.key, id); err != nil {
				fmt.Fprintln(out, "warning:", err)
			}
		}()
	}
	// webhookDrain waits (at most 30 s) until the receiver has every
	// accepted send of phase.
	webhookDrain := func(phase int32, want int64) {
		if rcv == nil {
			return
		}
		for end := time.Now().Add(30 * time.Second); rcv.byPhase[phase].n.Load() < want && time.Now().Before(end); {
			time.Sleep(5 * time.Millisecond)
		}
	}

	// 1. The baseline: the same sends with no stream open.
	var baseCPUPerSec float64 // server CPU seconds per second of the baseline
	if sending && c.baseline {
		cpu0, t0 := server.cpu(), time.Now()
		n := s.run(ctx, phaseBaseline, c.rate, c.dur)
		webhookDrain(phaseBaseline, n)
		cpu1, el := server.cpu(), time.Since(t0)
		baseCPUPerSec = (cpu1 - cpu0).Seconds() / el.Seconds()
		fmt.Fprintf(out, "baseline, no stream open: %d sends accepted in %.1fs (%.0f/s), %d failed", n, el.Seconds(), float64(n)/el.Seconds(), s.failed.Load())
		if s.firstErr != "" {
			fmt.Fprintf(out, " (first: %s)", s.firstErr)
		}
		fmt.Fprintln(out)
		fmt.Fprintf(out, "  POST /sms/messages latency: %s\n", s.post.summary())
		if rcv != nil {
			rcv.byPhase[phaseBaseline].lat.print(out, "webhook event-to-receiver latency")
		}
		if c.pid != 0 && n > 0 {
			fmt.Fprintf(out, "  server CPU: %.0f%% of a core, %.0f µs per send (sends and webhook deliveries)\n", 100*baseCPUPerSec, 1e6*(cpu1-cpu0).Seconds()/float64(n))
		}
	}

	// 2. Open the streams: memory per stream.
	sctx, closeStreams := context.WithCancel(ctx)
	defer closeStreams()
	var st streamStats
	opts := streamOpts{url: c.eventsURL(), key: c.key, bufSize: c.bufSize, openConc: c.openConc, ledger: l,
		transport: newTransport(c.streams+16, 2048)}
	rss0, m0 := server.rss(), c.scrape(out)
	t0 := time.Now()
	open, openErr := openStreams(sctx, opts, c.streams, &st)
	openTime := time.Since(t0)
	fmt.Fprintf(out, "opened %d streams in %.2fs\n", len(open), openTime.Seconds())
	if openErr != nil {
		fmt.Fprintln(out, " ", openErr)
		if len(open) == 0 {
			return openErr
		}
	}
	time.Sleep(c.settle)
	rss1, m1 := server.rss(), c.scrape(out)
	fan1, _ := scrapeBuckets(c.metrics, fanoutMetric)
	if c.pid != 0 && len(open) > 0 {
		fmt.Fprintf(out, "server RSS: %.1f MiB before the streams, %.1f MiB with %d open: %.1f KiB per stream\n",
			float64(rss0)/1024, float64(rss1)/1024, len(open), float64(rss1-rss0)/float64(len(open)))
	}
	if m0 != nil && m1 != nil && len(open) > 0 {
		per := func(name string) float64 { return (m1[name] - m0[name]) / float64(len(open)) }
		fmt.Fprintf(out, "  per stream (Go runtime): heap in use %+.1f KiB, stacks %+.1f KiB, %+.2f goroutines; the server counts %.0f streams open\n",
			per("go_memstats_heap_inuse_bytes")/1024, per("go_memstats_stack_inuse_bytes")/1024, per("go_goroutines"), m1["switchboard_event_streams_open"])
	}

	// 3. Idle: what holding the streams open costs.
	comments0 := st.comments.Load()
	cpuI0, selfI0, ti0 := server.cpu(), self.cpu(), time.Now()
	time.Sleep(c.idle)
	cpuI1, selfI1, idleEl := server.cpu(), self.cpu(), time.Since(ti0)
	if c.pid != 0 {
		fmt.Fprintf(out, "idle for %.1fs with %d streams open: server CPU %.1f%% of a core (this client: %.1f%%), %d keepalive comments received (%d since the streams opened)",
			idleEl.Seconds(), len(open), 100*(cpuI1-cpuI0).Seconds()/idleEl.Seconds(), 100*(selfI1-selfI0).Seconds()/idleEl.Seconds(), st.comments.Load()-comments0, st.comments.Load())
		if c.idle > 15*time.Second {
			silent := 0
			for _, s := range open {
				if s.comments.Load() == 0 {
					silent++
				}
			}
			fmt.Fprintf(out, ", %d streams with none", silent)
		}
		fmt.Fprintln(out)
	}
	if !sending {
		fmt.Fprintf(out, "server RSS after the idle period: %.1f MiB\n", float64(server.rss())/1024)
		reportEnded(out, &st)
		return nil
	}

	// 4. The same sends with the streams open.
	s.post = hist{}
	events0 := st.events.Load()
	cpu0, self0, t1 := server.cpu(), self.cpu(), time.Now()
	n := s.run(ctx, phaseStreams, c.rate, c.dur)
	sendEl := time.Since(t1)
	want := int64(len(open)) * n
	for end := time.Now().Add(30 * time.Second); st.events.Load()-events0 < want && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	delivered := st.events.Load() - events0
	cpu1, self1, el := server.cpu(), self.cpu(), time.Since(t1)
	webhookDrain(phaseStreams, n)
	rss2, m2 := server.rss(), c.scrape(out)
	fan2, _ := scrapeBuckets(c.metrics, fanoutMetric)

	fmt.Fprintf(out, "with %d streams open: %d sends accepted in %.1fs (%.0f/s), %d failed, %d found every sender busy\n",
		len(open), n, sendEl.Seconds(), float64(n)/sendEl.Seconds(), s.failed.Load(), s.late.Load())
	fmt.Fprintf(out, "  POST /sms/messages latency: %s\n", s.post.summary())
	st.lat.print(out, "stream event-to-client latency")
	if rcv != nil {
		rcv.byPhase[phaseStreams].lat.print(out, "webhook event-to-receiver latency, same events")
	}
	fmt.Fprintf(out, "  delivered %d of %d events (%d streams × %d) in %.1fs: %.0f events/s to clients\n",
		delivered, want, len(open), n, el.Seconds(), float64(delivered)/el.Seconds())
	if c.pid != 0 && delivered > 0 {
		cpu := (cpu1 - cpu0).Seconds()
		net := cpu - baseCPUPerSec*el.Seconds()
		fmt.Fprintf(out, "  server CPU: %.0f%% of a core; %.2f µs per delivered event", 100*cpu/el.Seconds(), 1e6*cpu/float64(delivered))
		if c.baseline {
			fmt.Fprintf(out, ", %.2f µs net of the baseline's sends and webhooks", 1e6*net/float64(delivered))
		}
		fmt.Fprintf(out, " (this client: %.0f%% of a core)\n", 100*(self1-self0).Seconds()/el.Seconds())
		fmt.Fprintf(out, "  server RSS after the sends: %.1f MiB\n", float64(rss2)/1024)
	}
	if m1 != nil && m2 != nil {
		fmt.Fprintf(out, "  the server's counters: %.0f stream events sent, %.0f streams dropped as slow\n",
			m2["switchboard_event_stream_events_sent_total"]-m1["switchboard_event_stream_events_sent_total"],
			m2["switchboard_event_stream_slow_drops_total"]-m1["switchboard_event_stream_slow_drops_total"])
	}
	if fan1 != nil && fan2 != nil {
		p50, n := bucketQuantile(fan1, fan2, .50)
		p99, _ := bucketQuantile(fan1, fan2, .99)
		fmt.Fprintf(out, "  the server's own fan-out (commit to the last stream's write, per pass): p50 <= %g ms, p99 <= %g ms (%.0f passes; bucket bounds)\n",
			1000*p50, 1000*p99, n)
	}
	reportEnded(out, &st)
	return nil
}

// fanoutMetric is the server's histogram of its own part of an event's
// latency (internal/stream).
const fanoutMetric = "switchboard_event_stream_fanout_seconds"

// scrape reads the server's metrics (nil without -metrics; a failure is
// reported and the figures left out).
func (c config) scrape(out io.Writer) map[string]float64 {
	m, err := scrape(c.metrics)
	if err != nil {
		fmt.Fprintln(out, "warning: metrics:", err)
		return nil
	}
	return m
}

// reportEnded states what went wrong on the streams, if anything.
func reportEnded(out io.Writer, st *streamStats) {
	if n := st.ended.Load(); n > 0 {
		fmt.Fprintf(out, "  %d streams ended before the run did (first: %v)\n", n, st.endReason.Load())
	}
	if n := st.resets.Load(); n > 0 {
		fmt.Fprintf(out, "  %d reset events\n", n)
	}
	if n := st.disorder.Load(); n > 0 {
		fmt.Fprintf(out, "  %d events whose id was not above their stream's previous one\n", n)
	}
}
