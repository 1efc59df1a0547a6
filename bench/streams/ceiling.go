package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/sms/smsevent"
	"switchboard/internal/webhooks"
)

// ceilingMain serves the ceiling (see ceiling) until killed, after printing
// "listening on ADDR" to stdout.
func ceilingMain(args []string) error {
	fs := flag.NewFlagSet("ceiling", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	key := fs.String("key", "", "the API key accepted; empty: any Bearer token")
	fs.Parse(args)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	c := newCeiling(*key)
	defer c.close()
	fmt.Printf("listening on %s\n", ln.Addr())
	srv := &http.Server{Handler: c.handler(), ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}

// ceiling is the cheapest server that does the live scenario's work on the
// wire: the same requests answered, the same frames (a real message.sent
// event's id, type and data, built by the server's own smsevent and
// webhooks.Body) written to every open stream, the same payloads POSTed to
// the subscribed webhook. No database, no authentication beyond a Bearer
// header, no filtering: what the client measures against it is the most
// this machine allows a Go server on net/http, with the client beside it.
//
// A send appends its frame to every stream's pending bytes under the
// stream's lock and wakes the stream's handler, which writes all that is
// pending in one Write and one Flush: frames that arrive while it writes go
// out together in the next.
type ceiling struct {
	key   string
	mu    sync.Mutex // subs, nextID, hook; held through a send's fan-out, so every stream sees ids in order
	subs  map[*ceilingSub]struct{}
	next  int64
	hook  string // the webhook receiver's URL; "" when none is subscribed
	hooks chan hookDelivery
	stop  chan struct{}
	wg    sync.WaitGroup
}

// ceilingSub is one open stream.
type ceilingSub struct {
	mu      sync.Mutex
	pending []byte
	active  bool // written to since the last keepalive tick
	dropped bool // fell more than ceilingMaxPending behind
	wake    chan struct{}
}

type hookDelivery struct {
	url  string
	body []byte
}

const (
	// ceilingMaxPending bounds what a stream may have unwritten (about
	// 3,000 events): past it the stream is ended, as a slow client is by
	// the real server, instead of holding memory without limit.
	ceilingMaxPending = 1 << 20
	// ceilingHookWorkers deliver the webhooks, one POST each at a time.
	ceilingHookWorkers = 16
	// ceilingKeepalive is the real server's default keepalive period.
	ceilingKeepalive = 15 * time.Second
)

func newCeiling(key string) *ceiling {
	c := &ceiling{key: key, subs: map[*ceilingSub]struct{}{}, next: 1,
		hooks: make(chan hookDelivery, 10000), stop: make(chan struct{})}
	client := &http.Client{Transport: newTransport(ceilingHookWorkers, 4096), Timeout: 10 * time.Second}
	for range ceilingHookWorkers {
		c.wg.Go(func() {
			for d := range c.hooks {
				resp, err := client.Post(d.url, "application/json", bytes.NewReader(d.body))
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		})
	}
	c.wg.Go(c.keepalives)
	return c
}

// close stops the webhook workers (after the deliveries queued) and the
// keepalives; the streams end with the HTTP server.
func (c *ceiling) close() {
	close(c.stop)
	close(c.hooks)
	c.wg.Wait()
}

func (c *ceiling) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/public/v1/events", c.events)
	mux.HandleFunc("POST /api/public/v1/sms/messages", c.send)
	mux.HandleFunc("POST /api/public/v1/webhooks", c.subscribe)
	mux.HandleFunc("DELETE /api/public/v1/webhooks/{id}", c.unsubscribe)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" || (c.key != "" && token != c.key) {
			http.Error(w, `{"error":{"type":"unauthorized"}}`, http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func (c *ceiling) events(w http.ResponseWriter, r *http.Request) {
	s := &ceilingSub{wake: make(chan struct{}, 1)}
	// Joined before the headers go out: a client that has them misses no
	// event sent after.
	c.mu.Lock()
	c.subs[s] = struct{}{}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.subs, s)
		c.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	if _, err := io.WriteString(w, "retry: 1000\n\n"); err != nil || rc.Flush() != nil {
		return
	}
	var spare []byte // the buffer last written, reused for the next pending frames
	for {
		select {
		case <-s.wake:
		case <-r.Context().Done():
			return
		}
		s.mu.Lock()
		out, dropped := s.pending, s.dropped
		s.pending = spare[:0]
		s.mu.Unlock()
		if dropped {
			return
		}
		if _, err := w.Write(out); err != nil || rc.Flush() != nil {
			return
		}
		spare = out
	}
}

// post appends frame to s and wakes its handler; a keepalive goes only to
// a stream nothing was written to since the last one.
func (s *ceilingSub) post(frame []byte, keepalive bool) {
	s.mu.Lock()
	switch {
	case keepalive && s.active:
		s.active = false
		s.mu.Unlock()
		return
	case len(s.pending)+len(frame) > ceilingMaxPending:
		s.dropped = true
	default:
		s.pending = append(s.pending, frame...)
		s.active = !keepalive
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default: // already woken: the handler takes this frame with the others
	}
}

func (c *ceiling) send(w http.ResponseWriter, r *http.Request) {
	var req struct {
		From string   `json:"from"`
		To   []string `json:"to"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.To) != 1 {
		http.Error(w, `{"error":{"type":"invalid_request"}}`, http.StatusBadRequest)
		return
	}
	// The server stores numbers as digits, without the +.
	to := strings.Map(func(r rune) rune {
		if r < '0' || r > '9' {
			return -1
		}
		return r
	}, req.To[0])

	c.mu.Lock()
	id := c.next
	c.next++
	ev, err := smsevent.Sent(id, req.From, []string{to})
	var body []byte
	if err == nil {
		body, err = webhooks.Body(domain.EventID(id), ev.Type, time.Now(), ev.Payload)
	}
	if err != nil {
		c.mu.Unlock()
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	frame := make([]byte, 0, len(body)+64)
	frame = append(frame, "id: "+domain.EventID(id)+"\nevent: "+ev.Type+"\ndata: "...)
	frame = append(append(frame, body...), "\n\n"...)
	for s := range c.subs {
		s.post(frame, false)
	}
	hook := c.hook
	c.mu.Unlock()
	if hook != "" {
		c.hooks <- hookDelivery{url: hook, body: body} // waits when the workers are 10,000 behind
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{"data":{"id":`+strconv.FormatInt(id, 10)+`,"status":"sent"}}`)
}

// keepalives writes a comment to every quiet stream each period.
func (c *ceiling) keepalives() {
	t := time.NewTicker(ceilingKeepalive)
	defer t.Stop()
	comment := []byte(": keepalive\n\n")
	for {
		select {
		case <-t.C:
		case <-c.stop:
			return
		}
		c.mu.Lock()
		for s := range c.subs {
			s.post(comment, true)
		}
		c.mu.Unlock()
	}
}

// subscribe takes one webhook (the latest replaces any other).
func (c *ceiling) subscribe(w http.ResponseWriter, r *http.Request) {
	var req struct {
		URL string `json:"url"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.URL == "" {
		http.Error(w, `{"error":{"type":"invalid_request"}}`, http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.hook = req.URL
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{"data":{"id":1}}`)
}

func (c *ceiling) unsubscribe(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.hook = ""
	c.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}
