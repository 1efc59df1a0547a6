// Command kannel measures Kannel's own sendsms throughput: the baseline that
// Switchboard's send endpoint is compared to.
//
//	go run ./bench/kannel -c 64 -d 10s
//
// It starts the kanneltest stack (bearerbox, smsbox, fakesmsc on loopback;
// Debian packages kannel and kannel-extras), drives smsbox's
// /cgi-bin/sendsms with -c concurrent clients for -d, and prints sends/s
// and latency percentiles. A send counts when smsbox answers 202
// "0: Accepted for delivery", i.e. once bearerbox has queued it for the
// SMSC. Afterwards it waits for the fake SMSC to have received every
// accepted message and reports how many did.
//
// Nothing throttles the stack: the fake SMSC groups set no throughput, and
// the fakesmsc on the MT side runs with -m 0 (it only reads, blocking, and
// sends nothing), so its -i interval never applies. With -dlr every send
// also asks for all five DLR types with a dlr-url on a local stub that
// answers 200, as Switchboard's driver does.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/carrier/kannel/kanneltest"
)

func main() {
	concurrency := flag.Int("c", 64, "concurrent clients")
	duration := flag.Duration("d", 10*time.Second, "measured duration")
	warmup := flag.Duration("warmup", time.Second, "unmeasured warm-up before -d")
	text := flag.String("text", "Your code is 123456. It expires in 10 minutes.", "message text")
	withDLR := flag.Bool("dlr", false, "request delivery reports (dlr-mask=31) to a local stub")
	keep := flag.Bool("keep", false, "keep the Kannel directory (logs) after the run")
	flag.Parse()
	if *concurrency < 1 || *duration <= 0 {
		fmt.Fprintln(os.Stderr, "kannel bench: -c must be >= 1 and -d > 0")
		os.Exit(2)
	}
	if err := run(*concurrency, *duration, *warmup, *text, *withDLR, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "kannel bench:", err)
		os.Exit(1)
	}
}

func run(concurrency int, duration, warmup time.Duration, text string, withDLR, keep bool) error {
	dir, err := os.MkdirTemp("", "kannel-bench-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(dir)
	}
	// Warnings only: Kannel's debug log costs it throughput.
	stack, err := kanneltest.StartStack(dir, kanneltest.Config{LogLevel: 2})
	if err != nil {
		return err
	}
	defer stack.Close()

	base := url.Values{
		"username": {stack.Username},
		"password": {stack.Password},
		"from":     {"15550001"},
		"text":     {text},
		"charset":  {"UTF-8"},
	}
	var dlrs atomic.Int64
	if withDLR {
		stub, err := dlrStub(&dlrs)
		if err != nil {
			return err
		}
		defer stub.Close()
		base.Set("dlr-mask", "31")
		base.Set("dlr-url", "http://"+stub.Addr().String()+"/dlr?id=1&type=%d")
	}

	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = concurrency
	tr.MaxConnsPerHost = concurrency
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	var phase atomic.Int32 // 0 warm-up, 1 measuring, 2 done
	var accepted, failed atomic.Int64
	var acceptedAll atomic.Int64 // warm-up included, to check delivery
	lat := make([][]time.Duration, concurrency)
	var wg sync.WaitGroup
	for w := range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := url.Values{}
			for k, v := range base {
				q[k] = v
			}
			for i := 0; ; i++ {
				p := phase.Load()
				if p == 2 {
					return
				}
				q.Set("to", strconv.Itoa(16000000000+w*1000000+i))
				start := time.Now()
				ok := send(client, stack.SendURL+"?"+q.Encode())
				took := time.Since(start)
				if ok {
					acceptedAll.Add(1)
				}
				if p != 1 {
					continue
				}
				if ok {
					accepted.Add(1)
					lat[w] = append(lat[w], took)
				} else {
					failed.Add(1)
				}
			}
		}()
	}
	fmt.Printf("Kannel sendsms: %d clients, %s warm-up, measuring %s (dlr=%v)\n", concurrency, warmup, duration, withDLR)
	time.Sleep(warmup) // the load generator's clock, not a test wait
	phase.Store(1)
	start := time.Now()
	time.Sleep(duration)
	phase.Store(2)
	elapsed := time.Since(start)
	wg.Wait()

	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	n := accepted.Load()
	fmt.Printf("accepted %d, failed %d in %.2fs: %.0f sends/s\n", n, failed.Load(), elapsed.Seconds(), float64(n)/elapsed.Seconds())
	if len(all) > 0 {
		fmt.Printf("latency p50 %s  p95 %s  p99 %s  max %s\n",
			pct(all, 50), pct(all, 95), pct(all, 99), all[len(all)-1])
	}

	// Everything Kannel accepted should reach the fake SMSC; wait for it,
	// bounded.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	want := int(acceptedAll.Load())
	for stack.MTCount() < want && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Printf("fake SMSC received %d of %d accepted (warm-up included)\n", stack.MTCount(), want)
	if withDLR {
		fmt.Printf("delivery reports fetched so far: %d\n", dlrs.Load())
	}
	if keep {
		fmt.Println("logs kept in", stack.Dir)
	}
	return nil
}

func send(client *http.Client, u string) bool {
	resp, err := client.Get(u)
	if err != nil {
		return false
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	resp.Body.Close()
	return resp.StatusCode == http.StatusAccepted && string(body) == "0: Accepted for delivery"
}

// pct returns the p-th percentile of sorted durations (nearest rank).
func pct(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	if i < 1 {
		i = 1
	}
	return sorted[i-1]
}

// dlrStub answers every delivery report with 200 and counts them.
func dlrStub(count *atomic.Int64) (net.Listener, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		count.Add(1)
		w.WriteHeader(http.StatusOK)
	})}
	go func() { _ = srv.Serve(l) }()
	return l, nil
}
