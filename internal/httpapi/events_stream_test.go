package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"switchboard/internal/apitest"
	"switchboard/internal/auth"
	"switchboard/internal/calls"
	"switchboard/internal/carrier"
	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/stream"
)

// streamed is what a test checks of an event message: its type and its
// payload's event.
func streamed(t *testing.T, m sseMessage) string {
	t.Helper()
	var body struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			Event string `json:"event"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(m.data), &body); err != nil {
		t.Fatalf("data is not JSON: %q", m.data)
	}
	if body.ID != m.id || body.Type != m.event || strings.Contains(m.data, "\n") {
		t.Errorf("message id %q event %q carries data id %q type %q (the webhook body's)", m.id, m.event, body.ID, body.Type)
	}
	return m.event + "/" + body.Data.Event
}

func streamedAll(t *testing.T, ms []sseMessage) []string {
	var out []string
	for _, m := range ms {
		out = append(out, streamed(t, m))
	}
	return out
}

// A send (and its receipt), an inbound text, a resolve by another user and
// a call ingest each reach the streams of the credentials that may read
// them, and no other: line rules for a person's token, scopes for keys,
// call reports for calls, and never another account's.
func TestEventStreamVisibility(t *testing.T) {
	forEachEvents(t, eventsOpts{}, func(t *testing.T, f *eventsFixture) {
		key := f.openStream(t, f.key, "", "")
		smsKey := f.openStream(t, f.smsKey, "", "")
		reports := f.openStream(t, f.reportsKey, "", "")
		max := f.openStream(t, f.maxTok, "", "")
		agnes := f.openStream(t, f.agnesTok, "", "")
		beta := f.openStream(t, f.betaKey, "", "")
		onlyDesk := f.openStream(t, f.key, "?lines="+lineBob, "")
		onlyCalls := f.openStream(t, f.key, "?types=AccountEndedCalls", "")

		// A send from the main line, which Agnes may not use.
		status, _, raw := f.do(t, "POST", sendPath, f.key, jsonBody(t, sendBody{From: lineMain, To: []string{usA}, Message: "hi"}))
		if status != 200 && status != 201 {
			t.Fatalf("send: %d %s", status, raw)
		}
		sent := []string{"AccountSMS/message.sent", "AccountSMS/message.delivery"}
		for name, c := range map[string]*sseClient{"key": key, "sms:read key": smsKey, "manager": max} {
			if got := streamedAll(t, c.collect(t, 2)); !slices.Equal(got, sent) {
				t.Errorf("%s: %v, want %v", name, got, sent)
			}
		}
		// An inbound text on Agnes's line.
		must(t, f.svc.Inbound(ctx, carrier.Inbound{From: usA, To: lineBob, Text: "hello"}))
		for name, c := range map[string]*sseClient{"key": key, "sms:read key": smsKey, "manager": max, "agent": agnes, "lines=desk": onlyDesk} {
			if got := streamed(t, c.next(t, eventWait)); got != "AccountSMS/message.received" {
				t.Errorf("%s: %s, want the inbound text", name, got)
			}
		}
		// The manager resolves Agnes's conversation: her screen follows.
		status, _, raw = f.do(t, "POST", "/api/public/v1/sms/conversations/"+lineBob+"/"+usA+"/resolve", f.maxTok, `{}`)
		if status != 200 {
			t.Fatalf("resolve: %d %s", status, raw)
		}
		for name, c := range map[string]*sseClient{"key": key, "manager": max, "agent": agnes, "lines=desk": onlyDesk} {
			if got := streamed(t, c.next(t, eventWait)); got != "AccountConversations/conversation.resolved" {
				t.Errorf("%s: %s, want the resolve", name, got)
			}
		}
		if got := streamed(t, smsKey.next(t, eventWait)); got != "AccountConversations/conversation.resolved" {
			t.Errorf("sms:read key: %s, want the resolve", got)
		}
		// A call.
		it, err := calls.Parse(f.acme, []byte(`{"id":"1772323200.1","direction":"inbound","status":"answered","callerNumber":"12125550000","startTime":"2026-03-01T00:00:00Z"}`))
		must(t, err)
		_, err = f.calls.Ingest(ctx, f.acme, it)
		must(t, err)
		for name, c := range map[string]*sseClient{"key": key, "reports:read key": reports, "manager": max, "types=AccountEndedCalls": onlyCalls} {
			if got := streamed(t, c.next(t, eventWait)); got != "AccountEndedCalls/call.ended" {
				t.Errorf("%s: %s, want the call", name, got)
			}
		}
		// Beta's own inbound text reaches Beta only.
		must(t, f.svc.Inbound(ctx, carrier.Inbound{From: usA, To: lineBeta, Text: "hello beta"}))
		if got := streamed(t, beta.next(t, eventWait)); got != "AccountSMS/message.received" {
			t.Errorf("beta: %s", got)
		}
		for name, c := range map[string]*sseClient{"key": key, "sms:read key": smsKey, "reports:read key": reports, "manager": max,
			"agent": agnes, "beta": beta, "lines=desk": onlyDesk, "types=AccountEndedCalls": onlyCalls} {
			t.Run(name, func(t *testing.T) { c.none(t, 200*time.Millisecond) })
		}
	})
}

// A client that reconnects with the last id it received gets exactly the
// events written meanwhile, in order, then the live ones: no gap and no
// duplicate at the seam. after= does the same for a first connection.
func TestEventStreamResume(t *testing.T) {
	forEachEvents(t, eventsOpts{}, func(t *testing.T, f *eventsFixture) {
		c := f.openStream(t, f.key, "", "")
		for range 3 {
			f.addEvent(t, f.acme, lineMain)
		}
		first := c.collect(t, 3)
		c.close()
		// Written while disconnected, some of another account's among them.
		for i := range 5 {
			f.addEvent(t, f.acme, lineMain)
			if i%2 == 0 {
				f.addEvent(t, f.beta, lineBeta)
			}
		}
		resumed := f.openStream(t, f.key, "", first[1].id)
		f.addEvent(t, f.acme, lineMain) // live, after the replay
		got := resumed.collect(t, 1+5+1)
		if got[0].id != first[2].id {
			t.Errorf("resume after %s starts with %s, want %s", first[1].id, got[0].id, first[2].id)
		}
		seen := map[string]bool{}
		var prev int64
		for _, m := range got {
			var n int64
			fmt.Sscanf(m.id, "evt_%d", &n)
			if seen[m.id] || n <= prev {
				t.Errorf("ids %v: a duplicate or out of order", sseIDs(got))
			}
			seen[m.id], prev = true, n
		}
		resumed.none(t, 200*time.Millisecond)

		// after= in the query resumes the same way.
		again := f.openStream(t, f.key, "?after="+got[5].id, "")
		if m := again.next(t, eventWait); m.id != got[6].id {
			t.Errorf("after=%s: first %s, want %s", got[5].id, m.id, got[6].id)
		}
		again.none(t, 200*time.Millisecond)
	})
}

// A new stream's first message is an id alone: where it joined the live
// events (the account's last event then, evt_0 before its first). A client
// that loses the stream before any event came resumes with it, misses
// nothing written meanwhile and receives nothing from before it joined.
func TestEventStreamJoinID(t *testing.T) {
	forEachEvents(t, eventsOpts{}, func(t *testing.T, f *eventsFixture) {
		lastOf := func(account int64) string {
			evs, err := f.st.Events(ctx, account, 0, 1000)
			must(t, err)
			return domain.EventID(evs[len(evs)-1].ID)
		}
		b := f.openStream(t, f.betaKey, "", "")
		if id := b.joinedAt(t); id != "evt_0" {
			t.Errorf("an account without events: joined at %s, want evt_0", id)
		}
		b.close()
		f.addEvent(t, f.beta, lineBeta)
		r := f.openStream(t, f.betaKey, "", "evt_0")
		if got := r.collect(t, 1); got[0].id != lastOf(f.beta) {
			t.Errorf("resumed at evt_0: %s, want %s", got[0].id, lastOf(f.beta))
		}
		r.none(t, 200*time.Millisecond)

		// watch has each event once the hub has handed it out: a stream
		// opened then joins after it.
		watch := f.openStream(t, f.key, "", "")
		for range 2 {
			f.addEvent(t, f.acme, lineMain)
		}
		watch.collect(t, 2)
		// Twice, with events written in between.
		for range 2 {
			want := lastOf(f.acme)
			c := f.openStream(t, f.key, "", "")
			if id := c.joinedAt(t); id != want {
				t.Fatalf("joined at %s, want %s (the account's last event)", id, want)
			}
			c.close()
			f.addEvent(t, f.acme, lineMain)
			f.addEvent(t, f.beta, lineBeta)
			f.addEvent(t, f.acme, lineBob)
			watch.collect(t, 2)
			resumed := f.openStream(t, f.key, "", want)
			got := resumed.collect(t, 2)
			evs, err := f.st.Events(ctx, f.acme, 0, 1000)
			must(t, err)
			if w := []string{domain.EventID(evs[len(evs)-2].ID), domain.EventID(evs[len(evs)-1].ID)}; !slices.Equal(sseIDs(got), w) {
				t.Errorf("resumed at the join id %s: %v, want %v", want, sseIDs(got), w)
			}
			resumed.none(t, 200*time.Millisecond)
			resumed.close()
		}
	})
}

// An id the server no longer holds (pruned), or never did for this
// account, answers one reset carrying an id to resume from, then the live
// events; resuming from the reset's id misses nothing written after it.
func TestEventStreamReset(t *testing.T) {
	forEachEvents(t, eventsOpts{clock: true}, func(t *testing.T, f *eventsFixture) {
		c := f.openStream(t, f.key, "", "")
		f.addEvent(t, f.acme, lineMain)
		old := c.next(t, eventWait)
		c.close()
		// Fanned out and past a zero retention: pruned.
		for {
			n, _, err := f.st.FanOutEvents(ctx, 100)
			must(t, err)
			if n == 0 {
				break
			}
		}
		f.clock.Advance(time.Second)
		_, pruned, err := f.st.PruneWebhookHistory(ctx, 0, 100)
		must(t, err)
		if pruned == 0 {
			t.Fatal("nothing pruned")
		}
		f.addEvent(t, f.beta, lineBeta)
		for _, last := range []string{old.id, "evt_999999999"} {
			r := f.openStream(t, f.key, "", last)
			m := r.next(t, eventWait)
			if m.event != "reset" || !strings.HasPrefix(m.id, "evt_") {
				t.Fatalf("resume after %s: %+v, want a reset", last, m)
			}
			f.addEvent(t, f.acme, lineMain)
			live := r.next(t, eventWait)
			r.close()
			// Resuming from the reset's id gets the event written after it.
			again := f.openStream(t, f.key, "", m.id)
			if got := again.next(t, eventWait); got.id != live.id {
				t.Errorf("resume from the reset's %s: %s, want %s", m.id, got.id, live.id)
			}
			again.close()
		}
		// Another account's event id is a reset too: nothing of it leaks.
		b := f.openStream(t, f.betaKey, "", "")
		f.addEvent(t, f.beta, lineBeta)
		theirs := b.next(t, eventWait)
		if m := f.openStream(t, f.key, "", theirs.id).next(t, eventWait); m.event != "reset" {
			t.Errorf("resume after another account's event: %+v, want a reset", m)
		}
	})
}

// The answers before a stream starts: each in the error envelope the
// document describes.
func TestEventStreamRefusals(t *testing.T) {
	forEachEvents(t, eventsOpts{}, func(t *testing.T, f *eventsFixture) {
		for _, tc := range []struct {
			name, key, query, accept, lastID, wantType string
			want                                       int
		}{
			{"json only", f.key, "", "application/json", "", "invalid_request", 406},
			{"unknown type", f.key, "?types=AccountSMS,Nope", "", "", "invalid_request", 400},
			{"empty type", f.key, "?types=", "", "", "invalid_request", 400},
			{"unknown parameter", f.key, "?since=1", "", "", "invalid_request", 400},
			{"malformed id", f.key, "", "", "42", "invalid_request", 400},
			{"malformed after", f.key, "?after=evt_x", "", "", "invalid_request", 400},
			{"another account's line", f.key, "?lines=" + lineBeta, "", "", "not_found", 404},
			{"a line the agent may not use", f.agnesTok, "?lines=" + lineMain, "", "", "not_found", 404},
			{"no scope that shows events", f.hooksKey, "", "", "", "insufficient_scope", 403},
			{"no credential", "", "", "", "", "unauthenticated", 401},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req, _ := http.NewRequest("GET", f.url+eventsPath+tc.query, nil)
				if tc.key != "" {
					req.Header.Set("Authorization", "Bearer "+tc.key)
				}
				if tc.accept != "" {
					req.Header.Set("Accept", tc.accept)
				}
				if tc.lastID != "" {
					req.Header.Set("Last-Event-ID", tc.lastID)
				}
				resp, err := f.client.Do(req)
				must(t, err)
				defer resp.Body.Close()
				var e errorEnvelope
				json.NewDecoder(resp.Body).Decode(&e)
				if resp.StatusCode != tc.want || e.Error.Type != tc.wantType {
					t.Errorf("%d %s (%s), want %d %s", resp.StatusCode, e.Error.Type, e.Error.Message, tc.want, tc.wantType)
				}
			})
		}
	})
}

// A key revoked while its stream is open is cut off within a second.
func TestEventStreamRevocation(t *testing.T) {
	forEachEvents(t, eventsOpts{}, func(t *testing.T, f *eventsFixture) {
		id, secret := storetestKey(t, f)
		c := f.openStream(t, secret, "", "")
		must(t, f.st.RevokeAPIKey(ctx, f.acme, id))
		start := time.Now()
		c.ended(t, 3*time.Second)
		// The recheck runs every second; the margin is for a loaded machine.
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("cut off after %v, want within about a second", d)
		}
	})
}

// Past the per-account limit: 429 rate_limited with Retry-After; another
// account is not affected, and a closed stream frees its place.
func TestEventStreamLimit(t *testing.T) {
	forEachEvents(t, eventsOpts{limit: 2}, func(t *testing.T, f *eventsFixture) {
		a := f.openStream(t, f.key, "", "")
		f.openStream(t, f.maxTok, "", "")
		resp, e := f.refusedStream(t, f.smsKey, "")
		if resp.StatusCode != 429 || e.Error.Type != "rate_limited" || resp.Header.Get("Retry-After") == "" || !strings.Contains(e.Error.Message, "account") {
			t.Fatalf("third stream: %d %s Retry-After %q, want 429 rate_limited with Retry-After", resp.StatusCode, e.Error.Type, resp.Header.Get("Retry-After"))
		}
		f.openStream(t, f.betaKey, "", "")
		a.close()
		if got := f.hub.TestSignals.Closed.WaitOrTimeout(t); got != f.acme {
			t.Fatalf("closed a stream of account %d, want Acme's", got)
		}
		f.openStream(t, f.key, "", "")
	})
}

// The server's ReadTimeout and WriteTimeout do not cut a stream (each write
// sets its own deadline).
func TestEventStreamOutlivesServerTimeouts(t *testing.T) {
	forEachEvents(t, eventsOpts{timing: streamTiming(100 * time.Millisecond), server: func(s *http.Server) {
		s.ReadTimeout, s.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond
	}}, func(t *testing.T, f *eventsFixture) {
		// Open past both timeouts, as its keepalives show.
		c := f.openStream(t, f.key, "", "")
		for start := time.Now(); time.Since(start) < time.Second; {
			c.comment(t)
		}
		f.addEvent(t, f.acme, lineMain)
		c.next(t, eventWait)
	})
}

// An idle stream gets a keepalive comment at the configured interval.
func TestEventStreamKeepalive(t *testing.T) {
	forEachEvents(t, eventsOpts{timing: streamTiming(50 * time.Millisecond)}, func(t *testing.T, f *eventsFixture) {
		c := f.openStream(t, f.key, "", "")
		deadline := time.After(2 * time.Second)
		for {
			select {
			case m := <-c.msgs:
				if m.comment && m.data == ": keepalive" {
					return
				}
			case <-deadline:
				t.Fatal("no keepalive comment")
			}
		}
	})
}

// The server's graceful shutdown ends open streams at once instead of
// waiting for its deadline.
func TestEventStreamShutdown(t *testing.T) {
	forEachEvents(t, eventsOpts{}, func(t *testing.T, f *eventsFixture) {
		c := f.openStream(t, f.key, "", "")
		start := time.Now()
		sctx, cancel := contextWithTimeout(5 * time.Second)
		defer cancel()
		must(t, f.srv.Config.Shutdown(sctx))
		c.ended(t, 2*time.Second)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("shutdown took %v with a stream open", d)
		}
	})
}

// On PostgreSQL an event whose transaction took its id first but committed
// last is neither skipped nor sent twice: live, and across a resume from
// each event received.
func TestEventStreamOutOfOrderCommits(t *testing.T) {
	for _, e := range storetestEngines(t) {
		if e != store.Postgres {
			continue
		}
		f := setupEvents(t, e, eventsOpts{})
		c := f.openStream(t, f.key, "", "")
		db := rawDB(t, f)
		older, err := db.Begin()
		must(t, err)
		defer older.Rollback()
		_, err = older.Exec(`INSERT INTO events (account_id, type, payload, created_at) VALUES ($1, 'AccountSMS', '{"event":"message.received","line":"`+lineMain+`"}', 0)`, f.acme)
		must(t, err)
		f.addEvent(t, f.acme, lineMain) // a higher id, committed first
		c.none(t, 300*time.Millisecond) // held back behind the open transaction
		must(t, older.Commit())
		f.addEvent(t, f.acme, lineMain)
		got := c.collect(t, 3)
		c.none(t, 200*time.Millisecond)
		for i, m := range got {
			r := f.openStream(t, f.key, "", m.id)
			rest := r.collect(t, len(got)-i-1)
			if want := sseIDs(got[i+1:]); !slices.Equal(sseIDs(rest), want) {
				t.Errorf("resume after %s: %v, want %v", m.id, sseIDs(rest), want)
			}
			r.none(t, 100*time.Millisecond)
			r.close()
		}
	}
}

// A read-state change is personal: its user's streams and API keys' get
// it, another user's do not. The metrics count streams, events and replays.
func TestEventStreamPersonalEventsAndMetrics(t *testing.T) {
	forEachEvents(t, eventsOpts{}, func(t *testing.T, f *eventsFixture) {
		key := f.openStream(t, f.key, "", "")
		max := f.openStream(t, f.maxTok, "", "")
		agnes := f.openStream(t, f.agnesTok, "", "")
		must(t, f.svc.Inbound(ctx, carrier.Inbound{From: usA, To: lineBob, Text: "hello"}))
		for _, c := range []*sseClient{key, max, agnes} {
			c.next(t, eventWait)
		}
		status, _, raw := f.do(t, "GET", "/api/public/v1/sms/conversations/"+lineBob+"/"+usA+"?markRead=true", f.agnesTok, "")
		if status != 200 {
			t.Fatalf("read: %d %s", status, raw)
		}
		for name, c := range map[string]*sseClient{"key": key, "agent": agnes} {
			if got := streamed(t, c.next(t, eventWait)); got != "AccountConversations/conversation.read" {
				t.Errorf("%s: %s, want her read", name, got)
			}
		}
		max.none(t, 300*time.Millisecond)

		last := f.openStream(t, f.key, "", "evt_0") // replays both
		last.collect(t, 2)
		// The replay is counted once it has joined the live events, just
		// after the client has what it replayed.
		metrics := f.scrape(t)
		for deadline := time.Now().Add(5 * time.Second); !strings.Contains(metrics, "switchboard_event_stream_replay_events_count 1") && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
			metrics = f.scrape(t)
		}
		for _, want := range []string{"switchboard_event_streams_open 4", "switchboard_event_stream_replay_events_count 1", "switchboard_event_stream_slow_drops_total 0"} {
			if !strings.Contains(metrics, want) {
				t.Errorf("metrics lack %q", want)
			}
		}
		if strings.Contains(metrics, "switchboard_event_stream_events_sent_total 0\n") || !strings.Contains(metrics, "switchboard_event_stream_events_sent_total") {
			t.Error("no events counted as sent")
		}
	})
}

// HEAD answers the stream's headers and ends instead of streaming nothing
// until the client leaves.
func TestEventStreamHead(t *testing.T) {
	forEachEvents(t, eventsOpts{}, func(t *testing.T, f *eventsFixture) {
		req, _ := http.NewRequest(http.MethodHead, f.url+eventsPath, nil)
		req.Header.Set("Authorization", "Bearer "+f.key)
		client := &http.Client{Timeout: 5 * time.Second}
		resp, err := client.Do(req)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Errorf("HEAD: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	})
}

// An event older than the retention is a reset even while it is still in
// the outbox: its successors may have been pruned, and a replay from it
// would skip them silently.
func TestEventStreamResetPastRetention(t *testing.T) {
	forEachEvents(t, eventsOpts{retention: time.Second, clock: true}, func(t *testing.T, f *eventsFixture) {
		c := f.openStream(t, f.key, "", "")
		f.addEvent(t, f.acme, lineMain)
		old := c.next(t, eventWait)
		f.addEvent(t, f.acme, lineMain)
		fresh := c.next(t, eventWait)
		c.close()
		if m := f.openStream(t, f.key, "", old.id).next(t, eventWait); m.id != fresh.id {
			t.Fatalf("resume within the retention: %+v, want %s", m, fresh.id)
		}
		f.clock.Advance(1200 * time.Millisecond)
		if m := f.openStream(t, f.key, "", old.id).next(t, eventWait); m.event != "reset" {
			t.Errorf("resume after an event past the retention: %+v, want a reset", m)
		}
	})
}

// With a small buffer: a client that keeps reading gets every event of
// bursts larger than its buffer exactly once (it catches up from the
// database), and a client that stopped reading is disconnected, so the
// server holds no more for it than the buffer.
func TestEventStreamSlowAndBurstyClients(t *testing.T) {
	forEachEvents(t, eventsOpts{buffer: 4}, func(t *testing.T, f *eventsFixture) {
		reader := f.openStream(t, f.key, "", "")
		// The stopped client: a raw connection that reads the answer's head
		// (the stream has joined the live events) and nothing more.
		rawStream(t, f, f.key)
		pad := strings.Repeat("x", 16<<10)
		const bursts, per = 40, 50
		for range bursts {
			var evs []domain.Event
			for range per {
				evs = append(evs, domain.Event{Type: domain.EventAccountSMS, Payload: []byte(`{"event":"message.received","line":"` + lineMain + `","pad":"` + pad + `"}`)})
			}
			must(t, f.st.AddEvents(ctx, f.acme, evs))
		}
		got := reader.collect(t, bursts*per)
		seen := map[string]bool{}
		for _, m := range got {
			if seen[m.id] {
				t.Fatalf("event %s twice", m.id)
			}
			seen[m.id] = true
		}
		reader.none(t, 200*time.Millisecond)
		f.hub.TestSignals.Closed.WaitOrTimeout(t) // the stopped client's
		if m := f.scrape(t); !strings.Contains(m, "switchboard_event_streams_open 1\n") || strings.Contains(m, "switchboard_event_stream_slow_drops_total 0\n") {
			t.Errorf("the stopped client's stream is not the one closed, or was not counted as slow:\n%s", grepLines(m, "switchboard_event_stream"))
		}
	})
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// What a stream may see is read again every second: a line assigned to
// the user after the stream opened is streamed from then on.
func TestEventStreamFollowsLineChanges(t *testing.T) {
	forEachEvents(t, eventsOpts{}, func(t *testing.T, f *eventsFixture) {
		agnes := f.openStream(t, f.agnesTok, "", "")
		const late = "14155550108"
		storetest.Line(t, f.st, f.acme, &storetest.LineOpts{Number: late, Name: "Late", UserIDs: []int64{f.agnes.ID}})
		stream.WaitRound(t, &f.hub.TestSignals.Recheck, time.Now()) // the stream's recheck reads it
		must(t, f.svc.Inbound(ctx, carrier.Inbound{From: usA, To: late, Text: "hello"}))
		if got := streamed(t, agnes.next(t, eventWait)); got != "AccountSMS/message.received" {
			t.Errorf("agent: %s, want the text on her new line", got)
		}
	})
}

// rawStream sends GET /events on a plain connection and returns it with a
// reader past the answer's head, and the head's lines.
func rawStream(t *testing.T, f *eventsFixture, key string) (net.Conn, *bufio.Reader, []string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
	must(t, err)
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", eventsPath, key)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(conn)
	var head []string
	for {
		line, err := br.ReadString('\n')
		must(t, err)
		if line == "\r\n" {
			break
		}
		head = append(head, line)
	}
	return conn, br, head
}

// A stream taken from net/http answers the head net/http writes for the
// same stream, byte for byte, but for the body's framing: Connection:
// close (the body ends with the connection) in place of chunked. The log
// and the HTTP metrics count it as the 200 it is.
func TestEventStreamDirectHead(t *testing.T) {
	heads := map[bool][]string{}
	var direct *eventsFixture
	for _, netHTTP := range []bool{false, true} {
		f := setupEvents(t, store.SQLite, eventsOpts{timing: stream.ServeConfig{NetHTTP: netHTTP}})
		_, br, head := rawStream(t, f, f.key)
		for i, l := range head {
			switch {
			case strings.HasPrefix(l, "Date: "):
				if _, err := http.ParseTime(strings.TrimSpace(strings.TrimPrefix(l, "Date: "))); err != nil {
					t.Errorf("%s", l)
				}
				head[i] = "Date: *\r\n"
			case strings.HasPrefix(l, "X-Request-Id: "):
				head[i] = "X-Request-Id: *\r\n"
			}
		}
		heads[netHTTP] = head
		if !netHTTP {
			direct = f
			// Unframed: the body's first bytes follow the head.
			if first, err := br.ReadString('\n'); err != nil || first != "retry: 1000\n" {
				t.Errorf("body starts %q %v", first, err)
			}
		}
	}
	want := slices.Clone(heads[true])
	want[slices.Index(want, "Transfer-Encoding: chunked\r\n")] = "Connection: close\r\n"
	if !slices.Equal(heads[false], want) {
		t.Errorf("taken from net/http:\n%q\nwant (net/http's, unframed):\n%q", heads[false], want)
	}
	for _, h := range []string{"Cache-Control: no-store\r\n", "X-Content-Type-Options: nosniff\r\n", "Content-Type: text/event-stream\r\n"} {
		if !slices.Contains(heads[false], h) {
			t.Errorf("head lacks %q", h)
		}
	}
	if m := direct.scrape(t); !strings.Contains(m, `switchboard_http_requests_total{route="GET /api/public/v1/events",status="200"} 1`) {
		t.Errorf("the stream is not counted as a 200:\n%s", grepLines(m, "switchboard_http_requests_total"))
	}
}

// A stream taken from net/http holds no goroutine: net/http's two per
// connection (the handler's and its background read) are gone, and so is
// the stream's own. Events, keepalives and a client's close still reach it.
func TestEventStreamDirectHoldsNoGoroutine(t *testing.T) {
	// The write timeout shorter than the keepalive: a blocking write's
	// deadline must not outlive it and fail the non-blocking ones.
	f := setupEvents(t, store.SQLite, eventsOpts{timing: stream.ServeConfig{Keepalive: 300 * time.Millisecond, WriteWait: 50 * time.Millisecond}})
	const n = 40
	before := runtime.NumGoroutine()
	var conns []net.Conn
	var readers []*bufio.Reader
	for range n {
		c, br, _ := rawStream(t, f, f.key)
		conns, readers = append(conns, c), append(readers, br)
	}
	// The handlers return just after the head: give them a moment.
	var grew int
	for deadline := time.Now().Add(5 * time.Second); ; {
		if grew = runtime.NumGoroutine() - before; grew < n/4 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if grew >= n/4 {
		t.Errorf("%d streams hold %d goroutines", n, grew)
	}
	f.addEvent(t, f.acme, lineMain)
	for i, br := range readers {
		conns[i].SetReadDeadline(time.Now().Add(5 * time.Second))
		var sawEvent, sawKeepalive bool
		for !sawEvent || !sawKeepalive {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("stream %d: %v (event %v, keepalive %v)", i, err, sawEvent, sawKeepalive)
			}
			sawEvent = sawEvent || strings.HasPrefix(line, "event: AccountSMS")
			sawKeepalive = sawKeepalive || line == ": keepalive\n"
		}
	}
	for _, c := range conns {
		c.Close()
	}
	for range n {
		f.hub.TestSignals.Closed.WaitOrTimeout(t)
	}
	if m := f.scrape(t); !strings.Contains(m, "switchboard_event_streams_open 0\n") {
		t.Fatalf("closed streams still counted open:\n%s", grepLines(m, "switchboard_event_streams_open"))
	}
}

// Many streams of one credential are cut together when it is revoked (the
// recheck runs once for all of them), and a stream of another credential
// is not.
func TestEventStreamRevocationOfManyStreams(t *testing.T) {
	forEachEvents(t, eventsOpts{}, func(t *testing.T, f *eventsFixture) {
		id, secret := storetestKey(t, f)
		var cs []*sseClient
		for range 5 {
			cs = append(cs, f.openStream(t, secret, "", ""))
		}
		cs = append(cs, f.openStream(t, secret, "?types=AccountSMS", ""))
		other := f.openStream(t, f.key, "", "")
		must(t, f.st.RevokeAPIKey(ctx, f.acme, id))
		for _, c := range cs {
			c.ended(t, 3*time.Second)
		}
		f.addEvent(t, f.acme, lineMain)
		other.next(t, eventWait)
	})
}

// refusedStream opens GET /events expecting a refusal, through the client
// that checks answers against the document, and returns it.
func (f *eventsFixture) refusedStream(t *testing.T, key, lastID string) (*http.Response, errorEnvelope) {
	t.Helper()
	// A stream that is not refused never ends: bound the wait for the
	// answer the client reads whole.
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, "GET", f.url+eventsPath, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := f.client.Do(req)
	must(t, err)
	defer resp.Body.Close()
	var e errorEnvelope
	json.NewDecoder(resp.Body).Decode(&e)
	return resp, e
}

// One credential holds at most half the account's streams (limit 6: 3
// each): an API key past its share is refused while the account has room,
// and so is a person past theirs whatever grant each token comes from;
// others are not, and a closed stream frees its credential's place.
func TestEventStreamCredentialShare(t *testing.T) {
	forEachEvents(t, eventsOpts{limit: 6}, func(t *testing.T, f *eventsFixture) {
		share := func(who, key string) {
			t.Helper()
			resp, e := f.refusedStream(t, key, "")
			if resp.StatusCode != 429 || e.Error.Type != "rate_limited" || resp.Header.Get("Retry-After") == "" || !strings.Contains(e.Error.Message, "credential") {
				t.Fatalf("%s past its share: %d %s %q Retry-After %q, want 429 rate_limited naming the credential, with Retry-After",
					who, resp.StatusCode, e.Error.Type, e.Error.Message, resp.Header.Get("Retry-After"))
			}
		}
		first := f.openStream(t, f.key, "", "")
		f.openStream(t, f.key, "?types=AccountSMS", "")
		f.openStream(t, f.key, "", "")
		share("the API key", f.key)
		otherGrant, err := userAccessToken(ctx, f.st, f.max.ID, auth.AllScopes...)
		must(t, err)
		f.openStream(t, f.maxTok, "", "")
		f.openStream(t, f.maxTok, "", "")
		f.openStream(t, otherGrant, "", "")
		share("the person (another grant)", otherGrant)
		// The account's 6 are open: anyone else meets the account's limit.
		resp, e := f.refusedStream(t, f.smsKey, "")
		if resp.StatusCode != 429 || !strings.Contains(e.Error.Message, "account") {
			t.Errorf("a fifth stream: %d %q, want the account's 429", resp.StatusCode, e.Error.Message)
		}
		first.close()
		f.hub.TestSignals.Closed.WaitOrTimeout(t)
		f.openStream(t, f.key, "", "")
	})
}

// A malformed Last-Event-ID or after= is not echoed whole: the 400 quotes
// its start and says how long it was.
func TestEventStreamBadIDNotEchoed(t *testing.T) {
	forEachEvents(t, eventsOpts{}, func(t *testing.T, f *eventsFixture) {
		long := "evt_" + strings.Repeat("x", 60<<10)
		for name, send := range map[string]func(*http.Request){
			"header": func(r *http.Request) { r.Header.Set("Last-Event-ID", long) },
			"after":  func(r *http.Request) { r.URL.RawQuery = "after=" + long },
		} {
			req, _ := http.NewRequest("GET", f.url+eventsPath, nil)
			req.Header.Set("Authorization", "Bearer "+f.key)
			send(req)
			resp, err := f.client.Do(req)
			must(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var e errorEnvelope
			must(t, json.Unmarshal(body, &e))
			want := fmt.Sprintf(`"evt_xxxxxxxxxxxxxxxxxxxxxxxxxxxx"… (the first 32 of %d bytes)`, len(long))
			if resp.StatusCode != 400 || len(body) > 1024 || !strings.HasSuffix(e.Error.Message, want) {
				t.Errorf("%s: %d, %d bytes, message %.200q; want 400 under 1 KB ending %s", name, resp.StatusCode, len(body), e.Error.Message, want)
			}
		}
	})
}

// Replays are budgeted per account: with one at a time, a resume that
// finds it taken (by a client that stopped reading its replay) waits
// replayWait, then is refused with 429 and Retry-After; a stream that does
// not resume is not held up, and the slot is free again once the replay
// ends.
func TestEventStreamReplayBudget(t *testing.T) {
	forEachEvents(t, eventsOpts{replays: 1, replayWait: 200 * time.Millisecond}, func(t *testing.T, f *eventsFixture) {
		// More than the sockets' buffers hold: the replay's write blocks.
		pad := strings.Repeat("x", 32<<10)
		for range 4 {
			var evs []domain.Event
			for range 64 {
				evs = append(evs, domain.Event{Type: domain.EventAccountSMS, Payload: []byte(`{"event":"message.received","line":"` + lineMain + `","pad":"` + pad + `"}`)})
			}
			must(t, f.st.AddEvents(ctx, f.acme, evs))
		}
		// The replay must have them all to send: on PostgreSQL another
		// test's transaction may hold the stream's head back a moment, and
		// a replay up to a head short of them ends at once.
		apitest.Eventually(t, "the padded events to be readable", func() bool {
			all, _, err := f.st.StreamEvents(ctx, store.EventPos{}, 100000)
			must(t, err)
			n := 0
			for _, e := range all {
				if e.AccountID == f.acme && strings.Contains(string(e.Payload), `"pad"`) {
					n++
				}
			}
			return n == 4*64
		})
		conn := stoppedClient(t, f, f.key, "evt_0")
		f.hub.TestSignals.ReplayStarted.WaitOrTimeout(t)
		resp, e := f.refusedStream(t, f.smsKey, "evt_0")
		if resp.StatusCode != 429 || e.Error.Type != "rate_limited" || resp.Header.Get("Retry-After") == "" || !strings.Contains(e.Error.Message, "replaying") {
			t.Fatalf("a resume while the replay is taken: %d %s %q Retry-After %q, want 429 rate_limited with Retry-After",
				resp.StatusCode, e.Error.Type, e.Error.Message, resp.Header.Get("Retry-After"))
		}
		f.openStream(t, f.smsKey, "", "").close() // live: no replay
		conn.Close()
		apitest.Eventually(t, "the replay's slot to be free", func() bool {
			req, _ := http.NewRequest("GET", f.url+eventsPath, nil)
			req.Header.Set("Authorization", "Bearer "+f.smsKey)
			req.Header.Set("Last-Event-ID", "evt_0")
			resp, err := http.DefaultClient.Do(req)
			must(t, err)
			resp.Body.Close()
			return resp.StatusCode == 200
		})
	})
}

// stoppedClient sends GET /events (resuming after lastID when set) on a
// connection with a small receive buffer, and never reads.
func stoppedClient(t *testing.T, f *eventsFixture, key, lastID string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
	must(t, err)
	t.Cleanup(func() { conn.Close() })
	resume := ""
	if lastID != "" {
		resume = "Last-Event-ID: " + lastID + "\r\n"
	}
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n%s\r\n", eventsPath, key, resume)
	return conn
}
