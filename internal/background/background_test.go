package background_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/background"
)

var ctx = context.Background()

// TestPeriodicPasses checks the schedule: a pass at start, then one per Wake
// (an hour-long interval never fires here), then one per interval.
func TestPeriodicPasses(t *testing.T) {
	var n atomic.Int64
	p := background.NewPeriodic(background.PeriodicConfig{Interval: time.Hour, Work: func(context.Context) error {
		n.Add(1)
		return nil
	}})
	p.TestSignals.Init()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if err := p.TestSignals.Pass.WaitOrTimeout(t); err != nil || n.Load() != 1 {
		t.Fatalf("first pass: err %v, passes %d, want nil and 1", err, n.Load())
	}
	for want := int64(2); want <= 3; want++ {
		p.Wake()
		p.TestSignals.Pass.WaitOrTimeout(t)
		if got := n.Load(); got != want {
			t.Fatalf("after wake: %d passes, want %d", got, want)
		}
	}

	fast := background.NewPeriodic(background.PeriodicConfig{Interval: time.Millisecond, Work: func(context.Context) error { return nil }})
	fast.TestSignals.Init()
	if err := fast.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()
	for range 5 {
		fast.TestSignals.Pass.WaitOrTimeout(t)
	}
	if d := background.NewPeriodic(background.PeriodicConfig{}).Interval(); d != background.DefaultInterval {
		t.Fatalf("default interval = %v, want %v", d, background.DefaultInterval)
	}
}

// TestPeriodicFailures checks that a failing or panicking pass is logged
// with the service's name, signalled with its error, and does not stop the
// service.
func TestPeriodicFailures(t *testing.T) {
	var logs bytes.Buffer // read after Stop, once the loop has returned
	var n atomic.Int64
	boom := errors.New("boom")
	p := background.NewPeriodic(background.PeriodicConfig{
		Name:     "flaky",
		Interval: time.Hour,
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
		Work: func(context.Context) error {
			switch n.Add(1) {
			case 1:
				return boom
			case 2:
				panic("kaput")
			}
			return nil
		},
	})
	p.TestSignals.Init()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.TestSignals.Pass.WaitOrTimeout(t); !errors.Is(err, boom) {
		t.Fatalf("first pass: err %v, want boom", err)
	}
	p.Wake()
	if err := p.TestSignals.Pass.WaitOrTimeout(t); err == nil || !strings.Contains(err.Error(), "kaput") {
		t.Fatalf("second pass: err %v, want the panic", err)
	}
	p.Wake()
	if err := p.TestSignals.Pass.WaitOrTimeout(t); err != nil {
		t.Fatalf("third pass: err %v, want nil", err)
	}
	p.Stop()
	got := logs.String()
	if strings.Count(got, "service=flaky") != 2 || !strings.Contains(got, "boom") || !strings.Contains(got, "kaput") {
		t.Fatalf("logs = %q, want both failures of flaky", got)
	}
}

// TestPeriodicStop checks that Stop cancels the pass under way and returns
// only once it has returned, that Stop is safe twice and before Start, and
// that a stopped service starts again.
func TestPeriodicStop(t *testing.T) {
	background.NewPeriodic(background.PeriodicConfig{}).Stop() // never started

	var returned atomic.Bool
	started := make(chan struct{})
	p := background.NewPeriodic(background.PeriodicConfig{Interval: time.Hour, Work: func(ctx context.Context) error {
		close(started) // the only pass: the interval is an hour
		<-ctx.Done()
		// A slow return, which Stop must wait for. Not a wait of the test's:
		// a Stop that waits passes however long this takes; the sleep only
		// gives a Stop that does not wait the time to return first.
		time.Sleep(10 * time.Millisecond)
		returned.Store(true)
		return ctx.Err()
	}})
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(ctx); err == nil {
		t.Fatal("second Start succeeded")
	}
	select {
	case <-started:
	case <-time.After(background.SignalTimeout):
		t.Fatal("the pass never ran")
	}
	p.Stop()
	if !returned.Load() {
		t.Fatal("Stop returned before the pass did")
	}
	p.Stop()

	var n atomic.Int64
	again := background.NewPeriodic(background.PeriodicConfig{Interval: time.Hour, Work: func(context.Context) error { n.Add(1); return nil }})
	again.TestSignals.Init()
	for want := int64(1); want <= 2; want++ {
		if err := again.Start(ctx); err != nil {
			t.Fatalf("start %d: %v", want, err)
		}
		again.TestSignals.Pass.WaitOrTimeout(t)
		again.Stop()
		if n.Load() != want {
			t.Fatalf("passes = %d, want %d", n.Load(), want)
		}
	}
	if err := background.NewPeriodic(background.PeriodicConfig{Name: "idle"}).Start(ctx); err == nil || !strings.Contains(err.Error(), "idle") {
		t.Fatalf("start without Work: err %v, want one naming the service", err)
	}
}

// recorder is a Service that records its calls.
type recorder struct {
	name  string
	fail  bool
	mu    *sync.Mutex
	calls *[]string
}

func (r recorder) Start(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.calls = append(*r.calls, "start "+r.name)
	if r.fail {
		return errors.New("no")
	}
	return nil
}

func (r recorder) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.calls = append(*r.calls, "stop "+r.name)
}

func TestRunner(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failing string
		want    []string
	}{
		{"starts in order, stops in reverse", "", []string{"start a", "start b", "start c", "stop c", "stop b", "stop a"}},
		{"a failed start stops the started", "b", []string{"start a", "start b", "stop a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var calls []string
			r := background.New(background.Config{})
			for _, name := range []string{"a", "b", "c"} {
				r.Add(name, recorder{name: name, fail: name == tc.failing, mu: &mu, calls: &calls})
			}
			err := r.Start(ctx)
			if tc.failing != "" {
				if err == nil || !strings.Contains(err.Error(), "start "+tc.failing) {
					t.Fatalf("start: err %v, want one naming %s", err, tc.failing)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			r.Stop()
			r.Stop() // nothing left to stop
			if !slices.Equal(calls, tc.want) {
				t.Fatalf("calls = %v, want %v", calls, tc.want)
			}
		})
	}
}

// fakeTB records a WaitOrTimeout failure instead of ending the test.
type fakeTB struct{ failed string }

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	if f.failed == "" {
		f.failed = fmt.Sprintf(format, args...)
	}
}

func TestSignal(t *testing.T) {
	var off background.Signal[int]
	off.Signal(1) // a signal nobody initialised costs nothing and never blocks
	var tb fakeTB
	off.WaitOrTimeout(&tb)
	if !strings.Contains(tb.failed, "never initialised") {
		t.Fatalf("waiting on an uninitialised signal: %q", tb.failed)
	}
	var on background.Signal[int]
	on.Init()
	for i := range 2000 { // more than the buffer: the extra ones are dropped
		on.Signal(i)
	}
	if got := on.WaitOrTimeout(t); got != 0 {
		t.Fatalf("first signal = %d, want 0", got)
	}
}
