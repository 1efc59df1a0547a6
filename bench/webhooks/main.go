// Command webhooks measures webhook delivery in process: a real store (SQLite
// by default, PostgreSQL with -db postgres://…), the real dispatcher and a
// local receiver. See docs/benchmarks.md.
//
//	go run ./bench/webhooks [-db URL] [-events 300] [-rate 200] [-latency-secs 10] [-cpuprofile FILE]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/webhooks"
)

func main() {
	dsn := flag.String("db", "", "database URL (default: a fresh SQLite file)")
	events := flag.Int("events", 300, "events per throughput run (each goes to every subscription)")
	rate := flag.Int("rate", 200, "events per second in the latency run")
	latencySecs := flag.Int("latency-secs", 10, "length of the latency run")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		must(err)
		must(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()

	var ok, gone atomic.Int64
	var lat latencies
	fast := serve(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var p struct {
			Data struct{ T int64 } `json:"data"`
		}
		json.Unmarshal(b, &p)
		if p.Data.T != 0 {
			lat.add(time.Since(time.Unix(0, p.Data.T)))
		}
		ok.Add(1)
	})
	failing := serve(func(w http.ResponseWriter, r *http.Request) { gone.Add(1); w.WriteHeader(500) })
	hanging := serve(func(w http.ResponseWriter, r *http.Request) { gone.Add(1); <-r.Context().Done() })

	run := func(name string, healthy, failingN int) {
		st := open(ctx, *dsn)
		defer st.Close()
		acct := domain.Account{Name: "bench"}
		must(st.CreateAccount(ctx, &acct))
		for i := range healthy + failingN {
			url := fast
			if i >= healthy {
				url = failing
				if (i-healthy)%2 == 0 {
					url = hanging // times out (10 s)
				}
			}
			w := domain.Webhook{AccountID: acct.ID, URL: url, Type: domain.EventAccountSMS, Enabled: true, Secret: webhooks.NewSecret()}
			must(st.CreateWebhook(ctx, &w))
		}
		d := webhooks.New(webhooks.Config{Store: st, AllowHosts: webhooks.ParseAllowList("127.0.0.1")}).Dispatcher(webhooks.DispatcherConfig{})
		ok.Store(0)
		// All events first, then the dispatcher: throughput of the backlog.
		batch := make([]domain.Event, 0, 50)
		for i := range *events {
			batch = append(batch, event(map[string]any{"event": "message.sent", "messageId": i}))
			if len(batch) == cap(batch) || i == *events-1 {
				must(st.AddEvents(ctx, acct.ID, batch))
				batch = batch[:0]
			}
		}
		want := int64(*events * healthy)
		began := time.Now()
		must(d.Start(ctx))
		for ok.Load() < want {
			time.Sleep(5 * time.Millisecond)
			if time.Since(began) > 5*time.Minute {
				log.Fatalf("%s: only %d of %d deliveries after 5 minutes", name, ok.Load(), want)
			}
		}
		el := time.Since(began)
		d.Stop()
		fmt.Printf("%-34s %6d successful deliveries in %6.2fs = %7.0f/s (healthy subscriptions %d, failing %d)\n", name, want, el.Seconds(), float64(want)/el.Seconds(), healthy, failingN)
	}
	run("throughput, all healthy", 100, 0)
	run("throughput, 10 of 100 failing", 90, 10)
	run("throughput, all healthy (again)", 100, 0)
	run("throughput, 10 of 100 failing (again)", 90, 10)

	// Latency: events written at a steady rate to one healthy subscription.
	st := open(ctx, *dsn)
	defer st.Close()
	acct := domain.Account{Name: "bench"}
	must(st.CreateAccount(ctx, &acct))
	w := domain.Webhook{AccountID: acct.ID, URL: fast, Type: domain.EventAccountSMS, Enabled: true, Secret: webhooks.NewSecret()}
	must(st.CreateWebhook(ctx, &w))
	d := webhooks.New(webhooks.Config{Store: st, AllowHosts: webhooks.ParseAllowList("127.0.0.1")}).Dispatcher(webhooks.DispatcherConfig{})
	must(d.Start(ctx))
	lat.reset()
	tick := time.NewTicker(time.Second / time.Duration(*rate))
	n := *rate * *latencySecs
	for i := range n {
		<-tick.C
		must(st.AddEvents(ctx, acct.ID, []domain.Event{event(map[string]any{"event": "message.sent", "messageId": i, "t": time.Now().UnixNano()})}))
	}
	tick.Stop()
	for lat.count() < n {
		time.Sleep(10 * time.Millisecond)
	}
	d.Stop()
	p50, p95, p99 := lat.quantiles()
	fmt.Printf("event-to-delivery at %d events/s for %ds: p50 %v p95 %v p99 %v (%d events)\n", *rate, *latencySecs, p50, p95, p99, n)
}

func open(ctx context.Context, dsn string) *store.Store {
	if dsn == "" {
		dir, err := os.MkdirTemp("", "webhook-bench-")
		must(err)
		dsn = "sqlite://" + filepath.Join(dir, "bench.db")
	}
	st, err := store.Open(ctx, dsn)
	must(err)
	must(st.Migrate(ctx))
	return st
}

func serve(h http.HandlerFunc) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	go http.Serve(ln, h)
	return "http://" + ln.Addr().String() + "/"
}

type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) { l.mu.Lock(); l.d = append(l.d, d); l.mu.Unlock() }
func (l *latencies) reset()              { l.mu.Lock(); l.d = nil; l.mu.Unlock() }
func (l *latencies) count() int          { l.mu.Lock(); defer l.mu.Unlock(); return len(l.d) }
func (l *latencies) quantiles() (p50, p95, p99 time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := slices.Clone(l.d)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[int(q*float64(len(s)-1))] }
	return at(.5).Round(100 * time.Microsecond), at(.95).Round(100 * time.Microsecond), at(.99).Round(100 * time.Microsecond)
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

// event is an AccountSMS event with payload.
func event(payload any) domain.Event {
	ev, err := domain.NewEvent(domain.EventAccountSMS, payload)
	must(err)
	return ev
}
