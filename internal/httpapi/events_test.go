package httpapi_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/internal/apitest"
	"switchboard/internal/auth"
	"switchboard/internal/calls"
	"switchboard/internal/carrier/sim"
	"switchboard/internal/contacts"
	"switchboard/internal/domain"
	"switchboard/internal/httpapi"
	"switchboard/internal/inbox"
	"switchboard/internal/sms"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/stream"
	"switchboard/internal/team"
	"switchboard/internal/users"
	"switchboard/internal/webhooks"
)

const eventsPath = "/api/public/v1/events"

// eventsFixture is a server with the live event stream over a real store:
// Acme with an API key, a manager (every line, call reports), an agent
// (only the line assigned to her, no call reports), keys of narrower
// scopes, and Beta with its own key.
type eventsFixture struct {
	*fixture
	srv        *httptest.Server
	dsn        string
	hub        *stream.Hub
	sim        *sim.Sim
	svc        *sms.Service
	calls      *calls.Service
	acme, beta int64
	max, agnes domain.User
	// clock is the store's and the hub's clock, with eventsOpts.clock.
	clock *storetest.Clock
	// Credentials.
	key, smsKey, reportsKey, hooksKey, betaKey, maxTok, agnesTok string
}

type eventsOpts struct {
	limit, buffer, replays int
	replayWait             time.Duration
	timing                 stream.ServeConfig
	retention              time.Duration
	server                 func(*http.Server)
	// clock: the store and the hub read a test clock (eventsFixture.clock).
	clock bool
}

func setupEvents(t *testing.T, engine store.Engine, o eventsOpts) *eventsFixture {
	t.Helper()
	dsn := storetest.DSN(t, engine)
	st, err := store.Open(ctx, dsn)
	must(t, err)
	t.Cleanup(func() { st.Close() })
	must(t, st.Migrate(ctx))
	f := &eventsFixture{dsn: dsn, fixture: &fixture{st: st, keys: map[string]string{}, users: map[string]domain.User{}, metrics: prometheus.NewRegistry()}}
	acme := storetest.Account(t, st, &storetest.AccountOpts{Name: "Acme"})
	beta := storetest.Account(t, st, &storetest.AccountOpts{Name: "Beta"})
	f.acme, f.beta = acme.ID, beta.ID
	perms := func(list string) *domain.Permissions {
		p, err := domain.ParsePermissions(list)
		must(t, err)
		return &p
	}
	f.max = storetest.User(t, st, acme.ID, &storetest.UserOpts{FirstName: "Max", LastName: "Manager", Permissions: perms("users:all,numbers:all,reports")})
	f.agnes = storetest.User(t, st, acme.ID, &storetest.UserOpts{FirstName: "Agnes", LastName: "Agent", Permissions: perms("users:self,numbers:assigned")})
	// Main is assigned to Max (a line assigned to nobody is every user's).
	storetest.Line(t, st, acme.ID, &storetest.LineOpts{Number: lineMain, Name: "Main", UserIDs: []int64{f.max.ID}})
	storetest.Line(t, st, acme.ID, &storetest.LineOpts{Number: lineBob, Name: "Desk", UserIDs: []int64{f.agnes.ID}})
	storetest.Line(t, st, beta.ID, &storetest.LineOpts{Number: lineBeta})
	storetest.Rate(t, st, acme.ID, "1", "0.0079", "0.02")
	storetest.Rate(t, st, beta.ID, "1", "0.01", "0.03")
	_, f.key = storetest.Key(t, st, acme.ID)
	_, f.smsKey = storetest.Key(t, st, acme.ID, auth.SMSRead)
	_, f.reportsKey = storetest.Key(t, st, acme.ID, auth.ReportsRead)
	_, f.hooksKey = storetest.Key(t, st, acme.ID, auth.WebhooksRead)
	_, f.betaKey = storetest.Key(t, st, beta.ID)
	f.maxTok, err = userAccessToken(ctx, st, f.max.ID, auth.AllScopes...)
	must(t, err)
	f.agnesTok, err = userAccessToken(ctx, st, f.agnes.ID, auth.AllScopes...)
	must(t, err)

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.sim = sim.New(sim.Config{ReceiptDelay: 0})
	t.Cleanup(func() { f.sim.Close() })
	f.svc = sms.New(sms.Config{Store: st, Carrier: f.sim, Log: log})
	f.sim.Attach(f.svc)
	f.calls = calls.New(calls.Config{Store: st, Log: log})
	hubCfg := stream.Config{Store: st, Log: log, Limit: o.limit, Buffer: o.buffer, Replays: o.replays, ReplayWait: o.replayWait, Metrics: stream.NewMetrics(f.metrics)}
	if o.clock {
		f.clock = storetest.NewClock(time.Now())
		st.SetClock(f.clock.Now)
		hubCfg.Now = f.clock.Now
	}
	f.hub = stream.New(hubCfg)
	f.hub.TestSignals.Init()
	must(t, f.hub.Start(ctx))
	t.Cleanup(f.hub.Stop)
	srv := httptest.NewUnstartedServer(httpapi.New(httpapi.Config{
		Store: st, Auth: &auth.Authenticator{Store: st}, Log: log, Registry: f.metrics,
		SMS: f.svc, Users: users.New(users.Config{Store: st}), Webhooks: webhooks.New(webhooks.Config{Store: st}),
		Inbox: inbox.New(inbox.Config{Store: st, Log: log}), Calls: f.calls, Team: team.New(team.Config{Store: st}), Contacts: contacts.New(st),
		Events: f.hub, EventTiming: o.timing, EventRetention: o.retention,
	}))
	srv.Config.RegisterOnShutdown(f.hub.CloseStreams)
	if o.server != nil {
		o.server(srv.Config)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	f.srv, f.url = srv, srv.URL
	f.client = apitest.Client(t)
	return f
}

// forEachEvents runs fn on each engine, with the streams on both paths:
// taken from net/http and written by the hub (HTTP/1.1, the default), and
// left on net/http's ResponseWriter (HTTP/2's and HEAD's path).
func forEachEvents(t *testing.T, o eventsOpts, fn func(t *testing.T, f *eventsFixture)) {
	for _, e := range storetest.Engines(t) {
		for _, netHTTP := range []bool{false, true} {
			name := string(e)
			if netHTTP {
				name += "/net-http"
			}
			o := o
			o.timing.NetHTTP = netHTTP
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				fn(t, setupEvents(t, e, o))
			})
		}
	}
}

// sseMessage is one SSE message as the WHATWG parser assembles it.
type sseMessage struct {
	id, event, data string
	comment         bool
}

// sseClient reads one stream with an independent SSE parser.
type sseClient struct {
	resp *http.Response
	// heldBy says, when an expected event does not come, which transactions
	// of the server hold events back (PostgreSQL; see collect).
	heldBy func() string
	msgs   chan sseMessage
	done   chan struct{} // closed at the end of the stream
	// ids are the ids of messages that carry an id and no data (SSE keeps
	// the id as the last event id and dispatches nothing).
	ids chan string
	mu  sync.Mutex
	err error
}

// openStream opens GET /events with the credential and query, and
// lastID as Last-Event-ID when set. It fails the test unless the answer is
// 200 text/event-stream.
func (f *eventsFixture) openStream(t *testing.T, key, query, lastID string) *sseClient {
	t.Helper()
	req, err := http.NewRequest("GET", f.url+eventsPath+query, nil)
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("GET /events%s: %d %s: %s", query, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	c := &sseClient{resp: resp, heldBy: f.heldBy, msgs: make(chan sseMessage, 10000), done: make(chan struct{}), ids: make(chan string, 100)}
	t.Cleanup(c.close)
	go c.read()
	return c
}

func (c *sseClient) close() { c.resp.Body.Close() }

func (c *sseClient) read() {
	defer close(c.done)
	sc := bufio.NewScanner(c.resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var m sseMessage
	var data []string
	hasData := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if hasData {
				m.data = strings.Join(data, "\n")
				c.msgs <- m
			} else if m.id != "" {
				c.ids <- m.id
			}
			m, data, hasData = sseMessage{}, nil, false
			continue
		}
		if strings.HasPrefix(line, ":") {
			c.msgs <- sseMessage{comment: true, data: line}
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			m.id = value
		case "event":
			m.event = value
		case "data":
			data, hasData = append(data, value), true
		}
	}
	c.mu.Lock()
	c.err = sc.Err()
	c.mu.Unlock()
}

// next returns the next event message (comments skipped) or fails after wait.
func (c *sseClient) next(t *testing.T, wait time.Duration) sseMessage {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case m := <-c.msgs:
			if !m.comment {
				return m
			}
		case <-c.done:
			select {
			case m := <-c.msgs:
				if !m.comment {
					return m
				}
				continue
			default:
			}
			t.Fatalf("the stream ended while an event was expected")
		case <-deadline:
			t.Fatalf("no event within %v%s", wait, c.heldBy())
		}
	}
}

// heldBy lists, on PostgreSQL, the server's transactions that have written
// and are still open, oldest first: what holds the streams' events back.
func (f *eventsFixture) heldBy() string {
	if !strings.HasPrefix(f.dsn, "postgres") {
		return ""
	}
	db, err := sql.Open("pgx", f.dsn)
	if err != nil {
		return ""
	}
	defer db.Close()
	rows, err := db.Query(`SELECT datname, now() - xact_start, state, left(query, 200) FROM pg_stat_activity
		WHERE backend_xid IS NOT NULL ORDER BY xact_start`)
	if err != nil {
		return "; transactions: " + err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	b.WriteString("; open transactions that have written:")
	for rows.Next() {
		var db, state, query sql.NullString
		var age sql.NullString
		if rows.Scan(&db, &age, &state, &query) == nil {
			fmt.Fprintf(&b, "\n  %s for %s (%s): %s", db.String, age.String, state.String, query.String)
		}
	}
	return b.String()
}

// comment waits for the next comment (a keepalive), failing if an event
// or the end of the stream comes first.
func (c *sseClient) comment(t *testing.T) {
	t.Helper()
	select {
	case m := <-c.msgs:
		if !m.comment {
			t.Fatalf("event %s %s, want a keepalive", m.id, m.event)
		}
	case <-c.done:
		t.Fatal("the stream ended")
	case <-time.After(eventWait):
		t.Fatalf("no keepalive within %v", eventWait)
	}
}

// joinedAt is the id of the new stream's first message: an id alone,
// where it joined the live events.
func (c *sseClient) joinedAt(t *testing.T) string {
	t.Helper()
	select {
	case id := <-c.ids:
		return id
	case <-time.After(5 * time.Second):
		t.Fatal("no id alone at the start of the stream")
		return ""
	}
}

// none checks that no event message arrives within wait.
func (c *sseClient) none(t *testing.T, wait time.Duration) {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case m := <-c.msgs:
			if !m.comment {
				t.Fatalf("unexpected event %s %s: %s", m.id, m.event, m.data)
			}
		case <-deadline:
			return
		}
	}
}

// ended waits for the stream to end.
func (c *sseClient) ended(t *testing.T, wait time.Duration) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(wait):
		t.Fatalf("the stream is still open after %v", wait)
	}
}

// collect reads n events. On PostgreSQL an event streams only once every
// older transaction of the whole server has ended (docs/operations.md, "Long
// transactions hold webhooks and event streams back"), and the suite's other
// packages run their bulk writes on the same server: 5 s per event ran out
// once in a whole CI run.
func (c *sseClient) collect(t *testing.T, n int) []sseMessage {
	t.Helper()
	var out []sseMessage
	for range n {
		out = append(out, c.next(t, eventWait))
	}
	return out
}

// eventWait is how long a test waits for an event it expects (see collect).
const eventWait = 20 * time.Second

// addEvent writes an AccountSMS event of account about line through the store.
func (f *eventsFixture) addEvent(t *testing.T, account int64, line string) {
	t.Helper()
	must(t, f.st.AddEvents(ctx, account, []domain.Event{{Type: domain.EventAccountSMS, Payload: []byte(`{"event":"message.received","line":"` + line + `"}`)}}))
}

func sseIDs(ms []sseMessage) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.id)
	}
	return out
}

func storetestKey(t *testing.T, f *eventsFixture) (int64, string) {
	return storetest.Key(t, f.st, f.acme)
}

func streamTiming(keepalive time.Duration) stream.ServeConfig {
	return stream.ServeConfig{Keepalive: keepalive}
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

func storetestEngines(t *testing.T) []store.Engine { return storetest.Engines(t) }

// rawDB is a connection pool on the fixture's database, for statements
// outside the store.
func rawDB(t *testing.T, f *eventsFixture) *sql.DB {
	db, err := sql.Open("pgx", f.dsn)
	must(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}
