// Command pollstream compares two ways twenty people keep an inbox screen
// current (issue 26): polling the first page of the list every 2 s, or
// holding one event stream each and reading the first page again only after
// an event. Meanwhile texts are sent through the API at -rate per second, so
// there is something to follow. It reports the server's CPU (from
// /proc/PID/stat, over the run) and the requests each way made.
//
//	go run ./bench/pollstream -url http://127.0.0.1:8080 -pid PID -key KEY -line LINE -tokens FILE -mode poll
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type options struct {
	base, key, line, tokens, mode string
	pid                           int
	rate                          float64
	every, dur                    time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.base, "url", "", "the server's base URL (required)")
	flag.IntVar(&o.pid, "pid", 0, "the server's process id, for its CPU time (required)")
	flag.StringVar(&o.key, "key", "", "an API key that may send from -line (required)")
	flag.StringVar(&o.line, "line", "", "the line the texts are sent from (required)")
	flag.StringVar(&o.tokens, "tokens", "", "a file of OAuth access tokens, one per line: one person each (required)")
	flag.StringVar(&o.mode, "mode", "poll", "poll (the first page every -every) or stream (GET /events; the first page again after events)")
	flag.Float64Var(&o.rate, "rate", 2, "texts sent per second during the run")
	flag.DurationVar(&o.every, "every", 2*time.Second, "the polling period")
	flag.DurationVar(&o.dur, "d", 30*time.Second, "how long to run")
	flag.Parse()
	if o.base == "" || o.pid == 0 || o.key == "" || o.line == "" || o.tokens == "" || (o.mode != "poll" && o.mode != "stream") {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "pollstream:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	raw, err := os.ReadFile(o.tokens)
	if err != nil {
		return err
	}
	tokens := strings.Fields(string(raw))
	if len(tokens) == 0 {
		return fmt.Errorf("no tokens in %s", o.tokens)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.dur)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * len(tokens)}}
	var reads, events, failures atomic.Int64
	firstPage := func(token string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, o.base+"/api/public/v1/sms/conversations?limit=50", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				failures.Add(1)
			}
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			failures.Add(1)
			return
		}
		reads.Add(1)
	}

	cpu0, err := cpuTicks(o.pid)
	if err != nil {
		return err
	}
	began := time.Now()
	var wg sync.WaitGroup
	for i, token := range tokens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Spread over the period, as twenty people's screens are.
			select {
			case <-time.After(time.Duration(i) * o.every / time.Duration(len(tokens))):
			case <-ctx.Done():
				return
			}
			firstPage(token) // every screen starts by reading the list
			if o.mode == "poll" {
				t := time.NewTicker(o.every)
				defer t.Stop()
				for {
					select {
					case <-t.C:
						firstPage(token)
					case <-ctx.Done():
						return
					}
				}
			}
			follow(ctx, client, o.base, token, &events, &failures, func() { firstPage(token) })
		}()
	}
	sent, err := sendAtRate(ctx, client, o)
	wg.Wait()
	elapsed := time.Since(began)
	cpu1, err2 := cpuTicks(o.pid)
	if err != nil {
		return err
	}
	if err2 != nil {
		return err2
	}
	cpu := time.Duration(cpu1-cpu0) * time.Second / time.Duration(clockTicks)
	fmt.Printf("%-6s %d people, %.0f s: server CPU %.2f s (%.1f%% of one core); %d texts sent; %d list reads (%.1f/s); %d events received; %d failures\n",
		o.mode, len(tokens), elapsed.Seconds(), cpu.Seconds(), 100*cpu.Seconds()/elapsed.Seconds(), sent, reads.Load(),
		float64(reads.Load())/elapsed.Seconds(), events.Load(), failures.Load())
	return nil
}

// follow holds one event stream and calls reread after each burst of
// events that change the list (100 ms quiet), as the app does, until ctx
// ends.
func follow(ctx context.Context, client *http.Client, base, token string, events, failures *atomic.Int64, reread func()) {
	kick := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-kick:
				// Let a burst settle, then read once.
				select {
				case <-time.After(100 * time.Millisecond):
				case <-ctx.Done():
					return
				}
				reread()
			case <-ctx.Done():
				return
			}
		}
	}()
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/public/v1/events?types=AccountSMS,AccountConversations", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := client.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			if ctx.Err() == nil {
				failures.Add(1)
				time.Sleep(time.Second)
			}
			if err == nil {
				resp.Body.Close()
			}
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if bytes.HasPrefix(sc.Bytes(), []byte("data:")) {
				events.Add(1)
				// A receipt changes no row of the list (it shows no
				// delivery status): the app reads nothing for it.
				if bytes.Contains(sc.Bytes(), []byte(`"event":"message.delivery"`)) {
					continue
				}
				select {
				case kick <- struct{}{}:
				default:
				}
			}
		}
		resp.Body.Close()
	}
}

// sendAtRate sends texts from the line to a few numbers at o.rate per second.
func sendAtRate(ctx context.Context, client *http.Client, o options) (int, error) {
	if o.rate <= 0 {
		<-ctx.Done()
		return 0, nil
	}
	t := time.NewTicker(time.Duration(float64(time.Second) / o.rate))
	defer t.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			return n, nil
		case <-t.C:
		}
		body, _ := json.Marshal(map[string]any{"from": o.line, "to": []string{fmt.Sprintf("+1 212 555 01%02d", n%20)},
			"message": fmt.Sprintf("Reminder %d: your appointment is tomorrow.", n)})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, o.base+"/api/public/v1/sms/messages", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+o.key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return n, nil
			}
			return n, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return n, fmt.Errorf("send: %s", resp.Status)
		}
		n++
	}
}

const clockTicks = 100 // USER_HZ on Linux

// cpuTicks is the process's user+system time in clock ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces: count fields after its ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s, nil
}
