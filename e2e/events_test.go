package e2e

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// sseEvent is one event message of a stream, read with an SSE parser of
// this package's own.
type sseEvent struct {
	id, event string
	data      struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			Event     string `json:"event"`
			MessageID int64  `json:"messageId"`
		} `json:"data"`
	}
}

// eventStream is an open GET /events.
type eventStream struct {
	resp   *http.Response
	events chan sseEvent
	done   chan struct{}
	// joined is the id of a message with an id and no data: where a new
	// stream joined the live events (read once done is closed).
	joined string
}

func openEvents(t *testing.T, base, key, lastID string) *eventStream {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+apiPrefix+"/events", nil)
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET %s/events: %d", base, resp.StatusCode)
	}
	s := &eventStream{resp: resp, events: make(chan sseEvent, 100000), done: make(chan struct{})}
	t.Cleanup(func() { resp.Body.Close() })
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		var data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if data != "" {
					if err := json.Unmarshal([]byte(data), &ev.data); err != nil {
						t.Errorf("data is not one line of JSON: %q", data)
					}
					s.events <- ev
				} else if ev.id != "" {
					s.joined = ev.id // where a new stream joined
				}
				ev, data = sseEvent{}, ""
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return s
}

func (s *eventStream) close() { s.resp.Body.Close() }

// sentIDs reads events until every message id in want has been seen as a
// message.sent, failing on a duplicate of any event id; it returns the last
// event id read.
func (s *eventStream) sentIDs(t *testing.T, what string, want map[int64]bool) string {
	t.Helper()
	seen := map[string]bool{}
	got := map[int64]bool{}
	last := ""
	deadline := time.After(30 * time.Second)
	for len(got) < len(want) {
		select {
		case ev := <-s.events:
			if seen[ev.id] {
				t.Errorf("%s: event %s twice", what, ev.id)
			}
			seen[ev.id], last = true, ev.id
			if ev.data.ID != ev.id || ev.data.Type != ev.event {
				t.Errorf("%s: message id %s event %s, data id %s type %s", what, ev.id, ev.event, ev.data.ID, ev.data.Type)
			}
			if ev.data.Data.Event == "message.sent" {
				if got[ev.data.Data.MessageID] {
					t.Errorf("%s: message %d sent twice", what, ev.data.Data.MessageID)
				}
				if !want[ev.data.Data.MessageID] {
					t.Errorf("%s: message.sent of %d, not one of ours", what, ev.data.Data.MessageID)
				}
				got[ev.data.Data.MessageID] = true
			}
		case <-deadline:
			t.Fatalf("%s: %d of %d sends streamed", what, len(got), len(want))
		}
	}
	return last
}

// sendMany sends n texts through node (concurrently) and returns the ids of
// the messages sent.
func sendMany(t *testing.T, node *crashSetup, n int, tag string) map[int64]bool {
	t.Helper()
	client := crashClient(t)
	ids := map[int64]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := node.send(client, fmt.Sprintf("+1415555%04d", 7000+i), fmt.Sprintf("%s %d", tag, i))
			if out.err != nil || out.status != http.StatusCreated {
				t.Errorf("send %s %d: %d %v %s", tag, i, out.status, out.err, out.body)
				return
			}
			mu.Lock()
			ids[out.id] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	return ids
}

// clusterPool bounds each node's PostgreSQL connections in these tests: they
// run beside the other cluster tests, and nodes at the default pool (4 per
// core, with serve's GOMAXPROCS of twice the CPUs) would take more than the
// server's 100 connections between them.
var clusterPool = []string{"--db-pool", "4"}

// Two serve processes on one PostgreSQL database: a stream on either node
// receives every event, whichever node wrote it, exactly once; a client that
// leaves one node and resumes on the other with its last id misses nothing
// and gets nothing twice.
func TestEventStreamAcrossNodes(t *testing.T) {
	db := needPostgres(t)
	t.Parallel()
	fake := newCrashKannel(t)
	c := crashProvision(t, db, fake)
	c.extra = append(c.extra, clusterPool...)
	reader := createKey(t, db, c.account, "stream reader", "messages:read")
	cl := startCluster(t, c, 2, func(int) bool { return true })
	s0 := openEvents(t, cl.nodes[0].baseURL(), reader.Key, "")
	s1 := openEvents(t, cl.nodes[1].baseURL(), reader.Key, "")

	first := sendMany(t, cl.nodes[1], 20, "first")
	for id := range sendMany(t, cl.nodes[0], 20, "first") {
		first[id] = true
	}
	last := s0.sentIDs(t, "node 0", first)
	s1.sentIDs(t, "node 1", first)
	s0.close()

	// Written while the client is away; it comes back on the other node.
	second := sendMany(t, cl.nodes[0], 20, "second")
	resumed := openEvents(t, cl.nodes[1].baseURL(), reader.Key, last)
	resumed.sentIDs(t, "resumed on node 1", second)
}

// kill -9 of a SQLite node while texts are sent: a client that reconnects
// to the restarted node with its last id receives every committed send's
// event exactly once.
func TestEventStreamAcrossKill(t *testing.T) {
	t.Parallel()
	db := storetest.DSN(t, store.SQLite)
	fake := newCrashKannel(t)
	c := crashProvision(t, db, fake)
	reader := createKey(t, db, c.account, "stream reader", "messages:read")
	p := c.launch(t, false)
	s := openEvents(t, c.baseURL(), reader.Key, "")
	sent := sendMany(t, c, 20, "before")
	last := s.sentIDs(t, "before the kill", sent)

	// Sends in flight when the node dies: those answered 201 committed.
	client := crashClient(t)
	committed := map[int64]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				out := c.send(client, fmt.Sprintf("+1415556%02d%02d", i, j%100), fmt.Sprintf("during %d %d", i, j))
				if out.status != http.StatusCreated {
					return
				}
				mu.Lock()
				committed[out.id] = true
				mu.Unlock()
			}
		}()
	}
	crashWaitFor(t, "sends under way before the kill", func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(committed) < 20 {
			return fmt.Sprintf("%d sends committed", len(committed))
		}
		return ""
	})
	crashKill(t, p)
	wg.Wait()
	s.close()
	c.launch(t, true)
	// Every message the database holds as sent after the last id, whether
	// or not its client heard the 201, must be streamed: read them back.
	st := crashOpenStore(t, db)
	evs, err := st.Events(context.Background(), c.account, 0, 1000000)
	must(t, err)
	var lastN int64
	fmt.Sscanf(last, "evt_%d", &lastN)
	want := map[int64]bool{}
	for _, e := range evs {
		var p struct {
			Event     string `json:"event"`
			MessageID int64  `json:"messageId"`
		}
		json.Unmarshal(e.Payload, &p)
		if e.ID > lastN && p.Event == "message.sent" {
			want[p.MessageID] = true
		}
	}
	for id := range committed {
		if !want[id] {
			t.Errorf("message %d was answered 201 but has no event", id)
		}
	}
	resumed := openEvents(t, c.baseURL(), reader.Key, last)
	resumed.sentIDs(t, "after the restart", want)
	t.Logf("%d sends answered 201 during the kill; %d streamed after the restart", len(committed), len(want))
}

// drain reads what s received until it ended, checking each event id and
// message once (seen is shared across a client's connections); it returns
// the last event id.
func (s *eventStream) drain(t *testing.T, what string, seen map[string]bool, got map[int64]bool) string {
	t.Helper()
	last := ""
	for {
		select {
		case ev := <-s.events:
			if seen[ev.id] {
				t.Errorf("%s: event %s twice", what, ev.id)
			}
			seen[ev.id], last = true, ev.id
			if ev.data.Data.Event == "message.sent" {
				if got[ev.data.Data.MessageID] {
					t.Errorf("%s: message %d sent twice", what, ev.data.Data.MessageID)
				}
				got[ev.data.Data.MessageID] = true
			}
		case <-s.done:
			if len(s.events) == 0 {
				// A client that received no event resumes where it joined.
				return cmp.Or(last, s.joined)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the stream did not end", what)
		}
	}
}

// kill -9 of one of three PostgreSQL nodes while texts are sent through
// the proxy: the clients of the dead node reconnect to another with their
// last id, and every client ends with every committed send's event
// exactly once.
func TestEventStreamKillOneOfThree(t *testing.T) {
	db := needPostgres(t)
	t.Parallel()
	fake := newCrashKannel(t)
	c := crashProvision(t, db, fake)
	c.extra = append(c.extra, clusterPool...)
	reader := createKey(t, db, c.account, "stream reader", "messages:read")
	cl := startCluster(t, c, 3, func(node int) bool { return node != 0 })
	var streams []*eventStream
	for i := range 3 {
		streams = append(streams, openEvents(t, cl.nodes[i].baseURL(), reader.Key, ""))
	}
	client := crashClient(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var created atomic.Int64
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				if cl.via.send(client, fmt.Sprintf("+1415557%02d%02d", i, j%100), fmt.Sprintf("load %d %d", i, j)).status == http.StatusCreated {
					created.Add(1)
				}
			}
		}()
	}
	stopLoad := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopLoad) // however the test ends, before the cluster stops
	sends := func(what string, n int64) {
		t.Helper()
		crashWaitFor(t, what, func() string {
			if k := created.Load(); k < n {
				return fmt.Sprintf("%d of %d sends answered 201", k, n)
			}
			return ""
		})
	}
	sends("sends under way before the kill", 40)
	crashKill(t, cl.procs[0])
	sends("sends through the other nodes after the kill", created.Load()+40)
	stopLoad()

	// What was committed: every message.sent in the outbox.
	st := crashOpenStore(t, db)
	evs, err := st.Events(context.Background(), c.account, 0, 1000000)
	must(t, err)
	want := map[int64]bool{}
	for _, e := range evs {
		var p struct {
			Event     string `json:"event"`
			MessageID int64  `json:"messageId"`
		}
		json.Unmarshal(e.Payload, &p)
		if p.Event == "message.sent" {
			want[p.MessageID] = true
		}
	}
	if len(want) == 0 {
		t.Fatal("nothing was sent")
	}
	// The dead node's client: what it got, then the rest from node 1.
	seen, got := map[string]bool{}, map[int64]bool{}
	last := streams[0].drain(t, "node 0 until the kill", seen, got)
	t.Logf("node 0's client had %d sends before the kill, the last id %q", len(got), last)
	if last == "" {
		t.Fatal("node 0's client has no id to resume with")
	}
	resumed := openEvents(t, cl.nodes[1].baseURL(), reader.Key, last)
	rest := map[int64]bool{}
	for id := range want {
		if !got[id] {
			rest[id] = true
		}
	}
	if len(rest) > 0 {
		resumed.sentIDs(t, "node 0's client resumed on node 1", rest)
	}
	resumed.none(t)
	for i := 1; i < 3; i++ {
		streams[i].sentIDs(t, fmt.Sprintf("node %d", i), want)
		streams[i].none(t)
	}
	t.Logf("%d sends committed; node 0's client had %d before the kill", len(want), len(got))
}

// none checks that no more message.sent arrives within a short wait (a
// duplicate would).
func (s *eventStream) none(t *testing.T) {
	t.Helper()
	deadline := time.After(300 * time.Millisecond)
	for {
		select {
		case ev := <-s.events:
			if ev.data.Data.Event == "message.sent" {
				t.Errorf("message.sent of %d again (%s)", ev.data.Data.MessageID, ev.id)
			}
		case <-deadline:
			return
		}
	}
}

// SIGTERM with streams open: the server ends them at once and exits
// instead of draining until its 30 s deadline.
func TestEventStreamShutdown(t *testing.T) {
	t.Parallel()
	db := storetest.DSN(t, store.SQLite)
	fake := newCrashKannel(t)
	c := crashProvision(t, db, fake)
	reader := createKey(t, db, c.account, "stream reader", "messages:read")
	p := c.launch(t, false)
	s := openEvents(t, c.baseURL(), reader.Key, "")
	resumed := openEvents(t, c.baseURL(), reader.Key, "evt_0")
	start := time.Now()
	crashStopGracefully(t, p)
	// Well under the 30 s drain the server would wait for open requests,
	// with room for a loaded machine.
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("shutdown with open streams took %v, as if it drained them", d)
	}
	for _, st := range []*eventStream{s, resumed} {
		select {
		case <-st.done:
		case <-time.After(5 * time.Second):
			t.Error("a stream is still open after the server stopped")
		}
	}
}
