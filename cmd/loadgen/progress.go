package main

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// progress redraws one status line on a terminal every 200ms. A nil
// *progress is valid and does nothing, which is what run uses when stderr is
// not a terminal: logs and CI output then get only the final result.
type progress struct {
	w    io.Writer
	cur  atomic.Pointer[livePhase]
	quit chan struct{}
	done sync.WaitGroup
	once sync.Once
}

type livePhase struct {
	name  string
	start time.Time
	c     *Counters
}

func startProgress(w io.Writer) *progress {
	p := &progress{w: w, quit: make(chan struct{})}
	p.done.Go(p.loop)
	return p
}

// watch is the engine's OnPhase hook. It is a method value even on a nil
// *progress, so Config.OnPhase can always be set to it.
func (p *progress) watch(name string, start time.Time, c *Counters) {
	if p != nil {
		p.cur.Store(&livePhase{name: name, start: start, c: c})
	}
}

// stop erases the status line, so the final output starts on a clean line.
func (p *progress) stop() {
	if p == nil {
		return
	}
	p.once.Do(func() { close(p.quit) })
	p.done.Wait()
}

func (p *progress) loop() {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	var last *livePhase
	var lastDone int64
	var lastAt time.Time
	for {
		select {
		case <-p.quit:
			fmt.Fprint(p.w, "\r\x1b[K")
			return
		case now := <-t.C:
			l := p.cur.Load()
			if l == nil {
				continue
			}
			if l != last { // new phase: rate restarts from its start
				last, lastDone, lastAt = l, 0, l.start
			}
			done := l.c.Done.Load()
			// The current rate over the last tick, not the average so far,
			// so a server that slows down mid-run is visible.
			rate := 0.0
			if dt := now.Sub(lastAt).Seconds(); dt > 0 {
				rate = float64(done-lastDone) / dt
			}
			lastDone, lastAt = done, now
			// \x1b[K clears the rest of a longer previous line. Kept well
			// under 80 columns so it never wraps and breaks the redraw.
			fmt.Fprintf(p.w, "\r%-14s %6.1fs %10d req %9.0f req/s %7d err\x1b[K",
				l.name, now.Sub(l.start).Seconds(), done, rate, l.c.Errors.Load())
		}
	}
}
