package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// runReplay resumes one stream after c.replay and reads c.replayN events:
// the rate at which the server replays stored events to a client that
// reconnects (goal: 50,000 a second). Every event must come once, in id
// order, with no reset.
func runReplay(ctx context.Context, c config, out io.Writer) error {
	from, ok := eventNumber([]byte(c.replay))
	if !ok {
		return fmt.Errorf("-replay %q is not an event id evt_N", c.replay)
	}
	server := probe{pid: c.pid, hz: c.hz}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	o := streamOpts{url: c.eventsURL(), key: c.key, lastID: c.replay, transport: newTransport(1, 64<<10)}
	cpu0, t0 := server.cpu(), time.Now()
	resp, err := dialStream(ctx, &http.Client{Transport: o.transport}, o)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	headers := time.Since(t0)
	p := newParser(resp.Body, 64<<10)
	var n, gaps int64
	// A replay that stops short (a reset sent without a data line is not
	// dispatched, per WHATWG; a replay that ends at a stale cursor) would
	// otherwise wait for live events that never come.
	var progress atomic.Int64
	stalled := make(chan struct{})
	stall := cmp.Or(c.stall, 10*time.Second)
	go func() {
		t := time.NewTicker(stall)
		defer t.Stop()
		for last := int64(-1); ; {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			now := progress.Load()
			if now == last {
				close(stalled)
				cancel()
				return
			}
			last = now
		}
	}()
	prev := from
	var first time.Duration
	for n < int64(c.replayN) {
		ev, err := p.next()
		if err != nil {
			select {
			case <-stalled:
				return fmt.Errorf("stalled: no event for %v after %d of %d", stall, n, c.replayN)
			default:
			}
			return fmt.Errorf("after %d events: %w", n, err)
		}
		progress.Add(1)
		if string(ev.Type) == "reset" {
			return fmt.Errorf("the server answered reset to %s: it no longer holds that event", c.replay)
		}
		id, ok := eventNumber(ev.ID)
		if !ok || id <= prev {
			return fmt.Errorf("event %d: id %q after evt_%d", n+1, ev.ID, prev)
		}
		if id != prev+1 {
			gaps++ // ids are not dense when other accounts write too
		}
		prev = id
		if n++; n == 1 {
			first = time.Since(t0)
		}
	}
	el := time.Since(t0)
	fmt.Fprintf(out, "replay after %s: %d events in %.2fs = %.0f events/s (headers after %.1f ms, first event after %.1f ms; last evt_%d; %d gaps in the ids)\n",
		c.replay, n, el.Seconds(), float64(n)/el.Seconds(), ms1(headers), ms1(first), prev, gaps)
	if c.pid != 0 {
		fmt.Fprintf(out, "  server CPU: %.2f s, %.2f µs per replayed event\n", (server.cpu() - cpu0).Seconds(), 1e6*(server.cpu()-cpu0).Seconds()/float64(n))
	}
	return nil
}

func ms1(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
