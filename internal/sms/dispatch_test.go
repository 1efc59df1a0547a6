package sms_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/background"
	"switchboard/internal/carrier/sim"
	"switchboard/internal/sms"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// signalTB lets a goroutine wait on a test signal: a timeout is recorded
// instead of failing the test from outside its goroutine.
type signalTB struct{ timedOut atomic.Bool }

func (*signalTB) Helper()                 {}
func (s *signalTB) Fatalf(string, ...any) { s.timedOut.Store(true) }

// TestDispatchTwoNodes runs two dispatchers, each on its own Store (two
// nodes) over one PostgreSQL database, with 1,000 messages due in the same
// second: each is sent exactly once, and charged once.
func TestDispatchTwoNodes(t *testing.T) {
	if storetest.PostgresURL(t) == "" {
		t.Skip("needs PostgreSQL")
	}
	t.Parallel()
	ctx := context.Background()
	dsn := storetest.DSN(t, store.Postgres)
	// The nodes' clock: the messages fall due when it is advanced, not when
	// the wall clock gets there.
	const lead = time.Hour
	clock := storetest.NewClock(time.Now())
	var nodes []*store.Store
	for range 2 {
		st, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		st.SetClock(clock.Now)
		nodes = append(nodes, st)
	}
	if err := nodes[0].Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	acct := storetest.Account(t, nodes[0], nil)
	storetest.Line(t, nodes[0], acct.ID, &storetest.LineOpts{Number: "14155550100"})
	storetest.Rate(t, nodes[0], acct.ID, "1", "0.0079", "0.02")
	p := auth.Principal{AccountID: acct.ID}

	const n = 1000
	var (
		sims  []*sim.Sim
		svcs  []*sms.Service
		disps []*sms.Dispatcher
	)
	for _, st := range nodes {
		c := sim.New(sim.Config{})
		t.Cleanup(func() { c.Close() })
		svc := sms.New(sms.Config{Store: st, Carrier: c, Now: clock.Now})
		c.Attach(svc)
		d := svc.ScheduledDispatcher(sms.DispatcherConfig{Interval: 20 * time.Millisecond, Batch: 50, Workers: 8})
		d.TestSignals.Init()
		sims, svcs, disps = append(sims, c), append(svcs, svc), append(disps, d)
	}

	// 1,000 messages due in the same second, scheduled through both nodes,
	// all before they are due.
	sendAt := clock.Now().Add(lead).Truncate(time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				to := fmt.Sprintf("1415555%04d", 1000+i%1000)
				_, err := svcs[i%2].Schedule(ctx, p, "14155550100", sms.ScheduleRequest{To: []string{to}, Message: fmt.Sprintf("m%d", i), SendAt: sendAt}, nil)
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if clock.Now().After(sendAt) {
		t.Fatal("scheduling took longer than the lead time")
	}

	for _, d := range disps {
		if err := d.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer d.Stop()
	}
	clock.Advance(lead) // all due at once, while both dispatchers run
	// Gather both dispatchers' reports until every message is settled.
	reports := make(chan sms.Dispatched, 2*n)
	var tb signalTB
	for _, d := range disps {
		go func() {
			for !tb.timedOut.Load() {
				reports <- d.TestSignals.Dispatched.WaitOrTimeout(&tb)
			}
		}()
	}
	seen := map[int64]string{}
	for len(seen) < n {
		select {
		case r := <-reports:
			if tb.timedOut.Load() {
				t.Fatalf("no dispatch for %v; %d of %d done", background.SignalTimeout, len(seen), n)
			}
			if r.Outcome != sms.DispatchSent {
				t.Fatalf("scheduled %d: %+v", r.ID, r)
			}
			if prev, dup := seen[r.ID]; dup {
				t.Fatalf("scheduled %d dispatched twice (%s, then %s)", r.ID, prev, r.Outcome)
			}
			seen[r.ID] = r.Outcome
		case <-time.After(background.SignalTimeout):
			t.Fatalf("%d of %d dispatched", len(seen), n)
		}
	}
	for _, d := range disps {
		d.Stop()
	}

	// The carriers got each message once, between them, and each node took a share.
	texts := map[string]int{}
	for _, c := range sims {
		if c.Count() == 0 {
			t.Errorf("a node sent nothing: the test did not exercise two claimers")
		}
		for _, m := range c.Sent() {
			texts[m.Text]++
		}
	}
	if len(texts) != n {
		t.Errorf("%d distinct messages reached the carriers, want %d", len(texts), n)
	}
	for text, k := range texts {
		if k != 1 {
			t.Errorf("%s sent %d times", text, k)
		}
	}
	total, charges, err := nodes[0].LedgerTotal(ctx, acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	if charges != n || total != n*7900 {
		t.Errorf("ledger: %d charges, %d micros; want %d and %d", charges, total, n, n*7900)
	}
}
