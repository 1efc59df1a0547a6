// Command sender posts texts at a steady rate, for bench/inbox.sh's
// second-tenant mode: the first account's sends (POST /sms/messages) while
// another account's reads are measured. loadgen drives as fast as its
// clients can; this holds a rate instead, the load a busy tenant puts on a
// shared server whatever the reads measured beside it do.
//
// Each send goes to one of the threads inboxgen wrote (its description,
// -desc): thread i's customer on thread i's line, i walking threads 2 and
// up in turn, so that the sends land in existing conversations, most of
// them read, some unread by every user, as a tenant's replies do.
//
// It runs until -d has passed or it is interrupted (SIGINT, SIGTERM), then
// prints one JSON object: sends accepted (201) and refused, the seconds,
// the rate achieved, the slowest answer, the first refusal's answer.
//
//	go run ./bench/inboxgen/sender -url http://127.0.0.1:8080/api/public/v1/sms/messages -key sbk_… -desc inbox.json -rate 500
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// desc is what the sender reads of inboxgen's description.
type desc struct {
	Numbers   []string `json:"lineNumbers"`
	Customers string   `json:"customers"`
	Threads   int      `json:"conversations"`
}

type summary struct {
	Sent      int64          `json:"sent"`
	Refused   int64          `json:"refused"`
	Statuses  map[string]int `json:"statuses"`
	Seconds   float64        `json:"seconds"`
	Rate      float64        `json:"rate"`
	Target    float64        `json:"target"`
	SlowestMs float64        `json:"slowestMs"`
	FirstFail string         `json:"firstRefusal,omitempty"`
}

func main() {
	url := flag.String("url", "", "the send endpoint, POST /api/public/v1/sms/messages (required)")
	key := flag.String("key", "", "an sms:send API key of the account (required)")
	descPath := flag.String("desc", "", "inboxgen's description of the account's inbox (required)")
	rate := flag.Float64("rate", 500, "sends a second")
	conc := flag.Int("c", 64, "sends in flight at most: when all wait, the rate falls behind and catches up after")
	dur := flag.Duration("d", 0, "how long to send (0: until interrupted)")
	text := flag.String("message", "Your appointment is tomorrow at 9:00. Reply STOP to opt out.", "the text")
	flag.Parse()
	d, err := readDesc(*descPath)
	if *url == "" || *key == "" || *rate <= 0 || *conc < 1 || err != nil {
		fmt.Fprintln(os.Stderr, "usage: sender -url URL -key KEY -desc FILE [-rate N -c N -d DURATION]", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *dur > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *dur)
		defer cancel()
	}
	s := newSender(*url, *key, *text, d, *conc)
	sum := s.run(ctx, *rate, *conc)
	json.NewEncoder(os.Stdout).Encode(sum)
}

func readDesc(path string) (desc, error) {
	var d desc
	b, err := os.ReadFile(path)
	if err != nil {
		return d, err
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, err
	}
	if len(d.Numbers) == 0 || d.Customers == "" || d.Threads < 3 {
		return d, fmt.Errorf("%s: no lineNumbers, customers or conversations: written by an older inboxgen?", path)
	}
	return d, nil
}

type sender struct {
	url, key, text string
	d              desc
	client         *http.Client
	sent, refused  atomic.Int64
	mu             sync.Mutex
	statuses       map[string]int
	slowest        time.Duration
	firstFail      string
}

func newSender(url, key, text string, d desc, conc int) *sender {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = conc
	return &sender{url: url, key: key, text: text, d: d, statuses: map[string]int{},
		client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// run sends at rate until ctx ends: send k is due at k/rate seconds from
// the start, handed to one of conc workers; one late (every worker busy)
// goes as soon as a worker is free, and those after it follow at once
// until the schedule is met again.
func (s *sender) run(ctx context.Context, rate float64, conc int) summary {
	due := make(chan int, conc)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range due {
				s.send(k)
			}
		}()
	}
	start := time.Now()
	interval := time.Duration(float64(time.Second) / rate)
schedule:
	for k := 0; ; k++ {
		if wait := time.Until(start.Add(time.Duration(k) * interval)); wait > 0 {
			select {
			case <-ctx.Done():
				break schedule
			case <-time.After(wait):
			}
		}
		select {
		case <-ctx.Done():
			break schedule
		case due <- k:
		}
	}
	close(due)
	wg.Wait()
	elapsed := time.Since(start)
	return summary{Sent: s.sent.Load(), Refused: s.refused.Load(), Statuses: s.statuses, Seconds: elapsed.Seconds(),
		Rate: float64(s.sent.Load()) / elapsed.Seconds(), Target: rate, SlowestMs: float64(s.slowest.Microseconds()) / 1000,
		FirstFail: s.firstFail}
}

// send posts send k: to thread i's customer from thread i's line, as
// inboxgen placed them (threads 0 and 1, the compared ones, are left be).
func (s *sender) send(k int) {
	i := 2 + k%(s.d.Threads-2)
	body, _ := json.Marshal(map[string]any{
		"from":    s.d.Numbers[i%len(s.d.Numbers)],
		"to":      []string{"+" + fmt.Sprintf(s.d.Customers, i)},
		"message": s.text,
	})
	req, _ := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Content-Type", "application/json")
	began := time.Now()
	resp, err := s.client.Do(req)
	took := time.Since(began)
	status, answer := "error", ""
	if err != nil {
		answer = err.Error()
	} else {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		status, answer = fmt.Sprint(resp.StatusCode), string(b)
	}
	ok := status == "201"
	if ok {
		s.sent.Add(1)
	} else {
		s.refused.Add(1)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses[status]++
	s.slowest = max(s.slowest, took)
	if !ok && s.firstFail == "" {
		s.firstFail = status + ": " + answer
	}
}
