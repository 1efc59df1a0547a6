package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// sender writes events through the API at a fixed rate: each POST
// /sms/messages to one recipient writes one message.sent event (the server
// runs with the sim carrier's receipts delayed past the run, so that no
// message.delivery event doubles the rate).
type sender struct {
	client *http.Client
	url    string // …/api/public/v1/sms/messages
	key    string
	from   string
	ledger *ledger

	seq      atomic.Int64 // the next send's sequence number
	ok       atomic.Int64 // 201s
	failed   atomic.Int64
	late     atomic.Int64 // sends that found every worker busy and waited
	errOnce  sync.Once
	firstErr string
	post     hist // the POSTs' own latency
}

// sendWorkers bounds the POSTs in flight. The schedule is open-loop (events
// are written at the rate whatever the server's latency), so enough are
// kept for the server's worst stalls: with 2,000 streams on two cores a
// send took up to 2 s, and 64 workers held the rate to 117/s of 200.
const sendWorkers = 512

// run sends at rate per second for d, tagging each send with phase, and
// returns how many were accepted (201).
func (s *sender) run(ctx context.Context, phase int32, rate int, d time.Duration) int64 {
	okBefore := s.ok.Load()
	work := make(chan int64, sendWorkers)
	var wg sync.WaitGroup
	for range sendWorkers {
		wg.Go(func() {
			for seq := range work {
				s.send(ctx, phase, seq)
			}
		})
	}
	// Sends are due at start + i/rate; each tick sends every one due, so a
	// late tick catches up instead of lowering the rate.
	start := time.Now()
	tick := time.NewTicker(min(time.Second/time.Duration(rate), 10*time.Millisecond))
	var issued int64
	total := int64(float64(rate) * d.Seconds())
	for issued < total && ctx.Err() == nil {
		<-tick.C
		due := min(int64(time.Since(start).Seconds()*float64(rate)), total)
		for ; issued < due; issued++ {
			seq := s.seq.Add(1) - 1
			if int(seq) >= len(s.ledger.sent) {
				issued = total
				break
			}
			select {
			case work <- seq:
			default:
				s.late.Add(1)
				work <- seq
			}
		}
	}
	tick.Stop()
	close(work)
	wg.Wait()
	return s.ok.Load() - okBefore
}

func (s *sender) send(ctx context.Context, phase int32, seq int64) {
	body := `{"from":"` + s.from + `","to":["` + recipient(seq) + `"],"message":"Streams benchmark ` + strconv.FormatInt(seq, 10) + `"}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader([]byte(body)))
	if err != nil {
		s.fail(err.Error())
		return
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Content-Type", "application/json")
	began := time.Now()
	s.ledger.record(seq, phase, began)
	resp, err := s.client.Do(req)
	if err != nil {
		s.fail(err.Error())
		return
	}
	s.ledger.answered(seq, time.Now())
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		s.fail(fmt.Sprintf("status %d: %.200s", resp.StatusCode, b))
		return
	}
	s.post.add(time.Since(began))
	s.ok.Add(1)
}

func (s *sender) fail(msg string) {
	s.failed.Add(1)
	s.errOnce.Do(func() { s.firstErr = msg })
}
