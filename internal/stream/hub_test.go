package stream_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/internal/apitest"
	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/stream"
)

var ctx = context.Background()

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func addEvent(t *testing.T, st *store.Store, account int64) {
	t.Helper()
	must(t, st.AddEvents(ctx, account, []domain.Event{{Type: domain.EventAccountSMS, Payload: []byte(`{"event":"message.received","line":"14155550100"}`)}}))
}

var everything = &stream.Filter{Messages: true, Calls: true, Transcripts: true}

func startHub(t *testing.T, st *store.Store, cfg stream.Config) *stream.Hub {
	t.Helper()
	cfg.Store = st
	h := stream.New(cfg)
	h.TestSignals.Init()
	must(t, h.Start(ctx))
	t.Cleanup(h.Stop)
	return h
}

// headPast waits until the stream's head is at or past event id: on
// PostgreSQL a transaction of another test on the same server may hold it
// back (docs/operations.md, "Long transactions hold webhooks and event
// streams back").
func headPast(t *testing.T, st *store.Store, id int64) {
	t.Helper()
	apitest.Eventually(t, fmt.Sprintf("the stream's head to pass event %d", id), func() bool {
		head, err := st.StreamHead(ctx)
		must(t, err)
		return head.ID >= id
	})
}

// next waits for s's next event: up to 30 s, as on PostgreSQL another
// test's transaction on the same server may hold events back for seconds.
func next(t *testing.T, s *stream.Sub) *stream.Event {
	t.Helper()
	select {
	case e := <-s.Events():
		return e
	case <-time.After(30 * time.Second):
		t.Fatal("no event")
		return nil
	}
}

// A stream whose buffer fills while its client is not stuck in a write (a
// burst) is detached and told to catch up, not ended; the others of the
// account keep theirs; attached again, it receives the live events.
func TestFullBufferLags(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		account := storetest.Account(t, st, nil).ID
		h := startHub(t, st, stream.Config{Buffer: 2})
		lagging, err := h.Open(account, everything)
		must(t, err)
		defer lagging.Close()
		lagging.Attach()
		fast, err := h.Open(account, everything)
		must(t, err)
		defer fast.Close()
		fast.Attach()
		for range 3 {
			addEvent(t, st, account)
			next(t, fast)
		}
		select {
		case <-lagging.Lagged():
		case <-time.After(5 * time.Second):
			t.Fatal("a full buffer did not make the stream lag")
		}
		if !lagging.Lagging() || lagging.Slow() {
			t.Errorf("lagging %v slow %v, want lagging, not ended", lagging.Lagging(), lagging.Slow())
		}
		select {
		case <-lagging.Done():
			t.Error("a stream whose client was not stuck was ended")
		default:
		}
		next(t, lagging)
		next(t, lagging)
		at := lagging.Attach()
		if lagging.Lagging() {
			t.Error("still lagging once attached again")
		}
		addEvent(t, st, account)
		if e := next(t, lagging); !e.Pos.After(at) {
			t.Errorf("after attaching at %+v got %+v", at, e.Pos)
		}
	})
}

// The per-account limit counts streams from Open to Close, per account.
func TestOpenLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		a := storetest.Account(t, st, nil).ID
		b := storetest.Account(t, st, nil).ID
		h := startHub(t, st, stream.Config{Limit: 1})
		s, err := h.Open(a, everything)
		must(t, err)
		if _, err := h.Open(a, everything); err != stream.ErrLimit {
			t.Fatalf("second stream: %v, want ErrLimit", err)
		}
		other, err := h.Open(b, everything)
		must(t, err)
		other.Close()
		s.Close()
		s.Close() // twice: counted once
		s, err = h.Open(a, everything)
		must(t, err)
		s.Close()
	})
}

// Personal events go to their user's streams and to API keys' (user 0),
// never to another user's; test deliveries' own events never.
func TestFilterAudience(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		account := storetest.Account(t, st, nil).ID
		h := startHub(t, st, stream.Config{})
		open := func(user int64) *stream.Sub {
			s, err := h.Open(account, &stream.Filter{UserID: user, Messages: true})
			must(t, err)
			t.Cleanup(s.Close)
			s.Attach()
			return s
		}
		key, mine, other := open(0), open(7), open(8)
		must(t, st.AddEvents(ctx, account, []domain.Event{
			{Type: "AccountConversations", Payload: []byte(`{"event":"conversation.read","line":"14155550100"}`), Audience: 7},
			{Type: domain.EventAccountSMS, Payload: []byte(`{"event":"test"}`)},
			{Type: domain.EventAccountSMS, Payload: []byte(`{"event":"message.received","line":"14155550100"}`)},
		}))
		first, second := next(t, key), next(t, key)
		if first.AudienceUserID != 7 || second.Type != domain.EventAccountSMS {
			t.Errorf("API key got %+v then %+v", first, second)
		}
		if e := next(t, mine); e.AudienceUserID != 7 {
			t.Errorf("the user got %+v first, want the personal event", e)
		}
		if e := next(t, other); e.AudienceUserID != 0 {
			t.Errorf("another user got %+v, want only the shared event", e)
		}
	})
}

// On PostgreSQL a node's streams receive the events every node commits:
// the hub finds other nodes' events by its short poll.
func TestOtherNodesEvents(t *testing.T) {
	if storetest.PostgresURL(t) == "" {
		t.Skip("PostgreSQL only")
	}
	dsn := storetest.DSN(t, store.Postgres)
	var nodes []*store.Store
	for range 2 {
		st, err := store.Open(ctx, dsn)
		must(t, err)
		t.Cleanup(func() { st.Close() })
		nodes = append(nodes, st)
	}
	must(t, nodes[0].Migrate(ctx))
	account := storetest.Account(t, nodes[0], nil).ID
	h := startHub(t, nodes[1], stream.Config{})
	s, err := h.Open(account, everything)
	must(t, err)
	defer s.Close()
	s.Attach()
	start := time.Now()
	addEvent(t, nodes[0], account)
	next(t, s)
	if d := time.Since(start); d > time.Second {
		t.Errorf("another node's event took %v", d)
	}
}

// Each pass that hands out events observes the server's own part of their
// latency: from the event's write to the end of the pass.
func TestFanoutObserved(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		reg := prometheus.NewRegistry()
		account := storetest.Account(t, st, nil).ID
		h := startHub(t, st, stream.Config{Metrics: stream.NewMetrics(reg)})
		s, err := h.Open(account, everything)
		must(t, err)
		defer s.Close()
		s.Attach()
		for range 3 {
			addEvent(t, st, account)
			next(t, s)
		}
		families, err := reg.Gather()
		must(t, err)
		for _, f := range families {
			if f.GetName() != "switchboard_event_stream_fanout_seconds" {
				continue
			}
			hist := f.GetMetric()[0].GetHistogram()
			if n := hist.GetSampleCount(); n < 1 || n > 3 {
				t.Errorf("fan-out observations: %d, want one per pass that handed out events (1 to 3)", n)
			}
			if sum := hist.GetSampleSum(); sum <= 0 || sum > 5 {
				t.Errorf("fan-out seconds in all: %v, want more than 0 and a few seconds at most", sum)
			}
			return
		}
		t.Fatal("no switchboard_event_stream_fanout_seconds metric")
	})
}

// While no stream is open the hub reads nothing (its cursor stays behind);
// the first stream to open attaches at the head: it receives the events
// written after it, none of those written while nobody listened, on both
// engines and after the hub has passed over the quiet events several times.
func TestFirstStreamStartsAtTheHead(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		account := storetest.Account(t, st, nil).ID
		h := startHub(t, st, stream.Config{Poll: 5 * time.Millisecond})
		before := h.Cursor()
		for range 5 {
			addEvent(t, st, account)
		}
		// Passes while nobody listens, begun after the events.
		for since := time.Now(); ; {
			if r := stream.WaitRound(t, &h.TestSignals.Pass, since); r.Err == nil {
				break
			}
		}
		if h.Cursor() != before {
			t.Errorf("cursor moved from %v to %v with no stream open; want it left behind, unread", before, h.Cursor())
		}
		evs, err := st.Events(ctx, account, 0, 100)
		must(t, err)
		headPast(t, st, evs[len(evs)-1].ID) // the stream opens past them
		s, err := h.Open(account, everything)
		must(t, err)
		defer s.Close()
		at := s.Attach()
		if !at.After(before) {
			t.Fatalf("first stream attached at %v, not past the 5 quiet events (cursor before them %v)", at, before)
		}
		addEvent(t, st, account)
		e := next(t, s)
		if !e.Pos.After(at) {
			t.Errorf("first event %v is not after the attach position %v: an event from before the stream", e.Pos, at)
		}
		if n := len(s.Events()); n != 0 {
			t.Errorf("%d more events; want only the one written after the stream opened", n)
		}
	})
}

// The id a new stream's first message carries is the account's last event
// at or before where the stream joined: written before the hub started
// (read once, then kept), read by the hub, or written since the stream
// joined (not counted). An account without events: 0.
func TestJoinID(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		a := storetest.Account(t, st, nil).ID
		b := storetest.Account(t, st, nil).ID
		last := func() int64 {
			evs, err := st.Events(ctx, a, 0, 100)
			must(t, err)
			return evs[len(evs)-1].ID
		}
		joined := func(h *stream.Hub, account int64, at store.EventPos, want int64) {
			t.Helper()
			id, err := h.JoinID(ctx, account, at)
			if err != nil || id != want {
				t.Errorf("join id of %d at %+v: %d %v, want %d", account, at, id, err, want)
			}
		}
		addEvent(t, st, a)
		addEvent(t, st, a)
		before := last()
		headPast(t, st, before) // the hub starts past them
		h := startHub(t, st, stream.Config{})
		s, err := h.Open(a, everything)
		must(t, err)
		defer s.Close()
		at := s.Attach()
		for range 2 { // read, then kept
			joined(h, a, at, before)
			joined(h, b, at, 0)
		}
		addEvent(t, st, a)
		next(t, s)
		joined(h, a, h.Cursor(), last())
		joined(h, a, at, before) // joined before the hub read the new one
		joined(h, b, h.Cursor(), 0)
	})
}

// An account's replays take its slots (Replays): one more waits for a slot
// and starts when one is given back within ReplayWait, and is refused past
// it; another account's are not held up, and an account whose replays
// have all ended keeps no slots.
func TestReplaySlots(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		a := storetest.Account(t, st, nil).ID
		b := storetest.Account(t, st, nil).ID
		h := startHub(t, st, stream.Config{Replays: 1, ReplayWait: 100 * time.Millisecond})
		end, err := h.StartReplay(ctx, a)
		must(t, err)
		if _, err := h.StartReplay(ctx, a); err != stream.ErrReplayBusy {
			t.Fatalf("a second replay of the account: %v, want ErrReplayBusy", err)
		}
		endB, err := h.StartReplay(ctx, b)
		must(t, err)
		endB()

		slow := startHub(t, st, stream.Config{Replays: 1, ReplayWait: time.Minute})
		end2, err := slow.StartReplay(ctx, a)
		must(t, err)
		got := make(chan error, 1)
		go func() {
			end3, err := slow.StartReplay(ctx, a)
			if err == nil {
				end3()
			}
			got <- err
		}()
		apitest.Eventually(t, "the second replay to wait", func() bool { return slow.ReplaysWaiting(a) == 1 })
		end2()
		end2() // twice: given back once
		if err := <-got; err != nil {
			t.Errorf("a waiting replay once the slot was given back: %v", err)
		}
		end()
		if n := h.ReplayAccounts() + slow.ReplayAccounts(); n != 0 {
			t.Errorf("%d accounts keep replay slots after their replays ended", n)
		}
	})
}
