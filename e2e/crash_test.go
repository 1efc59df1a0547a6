package e2e

// Crash tests: the money guarantees of POST /sms/messages ("charged ⇔
// accepted by the carrier", "a 5xx means nothing was sent and nothing
// charged") must hold when the server is killed with SIGKILL mid-send and
// restarted on the same database. The carrier is a fake Kannel smsbox in the
// test process, which knows exactly which messages it accepted and delivers
// their reports (DLRs) the way Kannel does: asynchronously, retrying until the
// server answers 200.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"switchboard/internal/apitest"
	"switchboard/internal/domain"
	"switchboard/internal/money"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

const (
	crashKannelUser     = "sbuser"
	crashKannelPassword = "sbpass"
	crashKannelSecret   = "crash-test-secret-0123456789"
	crashLineNumber     = "14155550100"
	// crashRefusedPrefix marks destinations the fake carrier refuses (a real,
	// dialable area code, so the server does not skip them as invalid).
	crashRefusedPrefix = "1206"
	// crashSMSRate is the --sms rate set for prefix 1, in micro-dollars.
	crashSMSRate = money.Micros(7900)
	// crashSettle bounds how long the server may take to resolve every
	// message after the load: reconcile-after is 6 s (the carrier timeout is
	// 5 s) and the reconciler runs every 2.5 s, DLRs are retried every 200 ms:
	// 20 s on an idle machine, three times that for a loaded one (200 sends
	// through three nodes and PgBouncer took longer than 20 s at a load
	// average of 35). Only a failing test waits it out.
	crashSettle = 60 * time.Second
)

// ---- the fake Kannel smsbox ----

// crashKannel speaks smsbox's sendsms: GET /cgi-bin/sendsms with username,
// password, to, text and dlr-url. It answers 202 "0: Accepted for delivery"
// or, for destinations refuse selects, 403 like Kannel's black-list. After
// accepting it delivers a "delivered" DLR to the dlr-url, retrying every
// 200 ms until it gets 200.
type crashKannel struct {
	srv *httptest.Server

	// Set before the first request, never changed after.
	refuse func(to string) bool
	// before runs when a request for message id arrives, before anything is
	// recorded; false answers 503 and never accepts the message. ctx ends
	// when the server hangs up: a message whose sender was gone before
	// before returned counts as never received (see dropped).
	before func(ctx context.Context, id int64) bool
	// after runs once the message is recorded as accepted, before the 202;
	// ctx ends when the server hangs up.
	after func(ctx context.Context, id int64)
	// dlrGate runs in the DLR sender before the first attempt.
	dlrGate func(id int64)
	// dlrDelay is how long Kannel "takes" before the first DLR attempt.
	dlrDelay func() time.Duration
	// loseAnswer, if it returns true for a message's first sendsms call,
	// drops the connection once the message is accepted, without answering:
	// the answer is lost on the way back (smsbox restarted, a proxy reset).
	loseAnswer func(id int64) bool

	stop   chan struct{} // closed at cleanup: hooks and DLR senders return
	wg     sync.WaitGroup
	client *http.Client

	mu         sync.Mutex
	calls      map[int64]int    // sendsms requests per message id
	accepted   map[int64]string // message id → text, for those answered 202
	refused    map[int64]string // message id → text, for those answered 4xx/5xx
	dropped    map[int64]bool   // the server hung up before the message was taken
	dlrURLs    map[int64]string // message id → the dlr-url template
	dlrDone    map[int64]int    // DLRs answered 200 per message id
	dlrRefused map[int64]string // message id → the 4xx answer that stopped its DLR
	problems   []string
}

func newCrashKannel(t *testing.T) *crashKannel {
	t.Helper()
	f := &crashKannel{
		refuse:     func(to string) bool { return strings.HasPrefix(to, crashRefusedPrefix) },
		dlrDelay:   func() time.Duration { return 0 },
		stop:       make(chan struct{}),
		client:     &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}},
		calls:      map[int64]int{},
		accepted:   map[int64]string{},
		refused:    map[int64]string{},
		dropped:    map[int64]bool{},
		dlrURLs:    map[int64]string{},
		dlrDone:    map[int64]int{},
		dlrRefused: map[int64]string{},
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.sendsms))
	t.Cleanup(func() {
		close(f.stop)
		f.wg.Wait()
		f.srv.Close()
		f.client.CloseIdleConnections()
	})
	return f
}

func (f *crashKannel) sendURL() string { return f.srv.URL + "/cgi-bin/sendsms" }

func (f *crashKannel) problem(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.problems = append(f.problems, fmt.Sprintf(format, args...))
}

// wait blocks until ch is closed or the fake stops.
func (f *crashKannel) wait(ch <-chan struct{}) {
	select {
	case <-ch:
	case <-f.stop:
	}
}

func (f *crashKannel) sendsms(w http.ResponseWriter, r *http.Request) {
	answer := func(status int, body string) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
	if r.Method != http.MethodGet || r.URL.Path != "/cgi-bin/sendsms" {
		f.problem("fake kannel: unexpected %s %s", r.Method, r.URL.Path)
		answer(http.StatusNotFound, "Unknown request.")
		return
	}
	q := r.URL.Query()
	if q.Get("username") != crashKannelUser || q.Get("password") != crashKannelPassword {
		f.problem("fake kannel: sendsms with wrong credentials %q/%q", q.Get("username"), q.Get("password"))
		answer(http.StatusForbidden, "Authorization failed for sendsms")
		return
	}
	tmpl := q.Get("dlr-url")
	id, err := crashDLRMessageID(crashExpandDLR(tmpl))
	if err != nil {
		f.problem("fake kannel: dlr-url %q: %v", tmpl, err)
		answer(http.StatusBadRequest, "Invalid dlr-url")
		return
	}
	if q.Get("dlr-mask") != "31" {
		f.problem("fake kannel: message %d: dlr-mask %q, want 31", id, q.Get("dlr-mask"))
	}
	to, text := q.Get("to"), q.Get("text")

	f.mu.Lock()
	f.calls[id]++
	n := f.calls[id]
	f.mu.Unlock()
	if n > 1 {
		f.problem("fake kannel: message %d: sendsms call number %d: the server sent one message more than once", id, n)
	}
	if f.refuse(to) {
		f.mu.Lock()
		f.refused[id] = text
		f.mu.Unlock()
		answer(http.StatusForbidden, "Number(s) has/have been denied by white- and/or black-lists.")
		return
	}
	if f.before != nil && !f.before(r.Context(), id) {
		f.mu.Lock()
		if r.Context().Err() != nil {
			f.dropped[id] = true
		} else {
			f.refused[id] = text
		}
		f.mu.Unlock()
		answer(http.StatusServiceUnavailable, "Sending sms failed, bearerbox not available.")
		return
	}
	f.mu.Lock()
	if _, dup := f.accepted[id]; dup {
		f.problems = append(f.problems, fmt.Sprintf("fake kannel: message %d accepted twice", id))
	}
	f.accepted[id] = text
	f.dlrURLs[id] = tmpl
	f.wg.Add(1)
	f.mu.Unlock()
	go f.deliverDLR(id, tmpl)
	if f.after != nil {
		f.after(r.Context(), id)
	}
	if n == 1 && f.loseAnswer != nil && f.loseAnswer(id) {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
			return
		}
		f.problem("fake kannel: cannot drop the connection for message %d", id)
	}
	answer(http.StatusAccepted, "0: Accepted for delivery")
}

// crashExpandDLR fills in the Kannel escapes of a dlr-url as Kannel does for a
// "delivered" report: %d type, %A the SMSC's reply (URL-encoded), %T time.
func crashExpandDLR(tmpl string) string {
	return strings.NewReplacer(
		"%d", "1",
		"%A", url.QueryEscape("ACK/"),
		"%T", strconv.FormatInt(time.Now().Unix(), 10),
	).Replace(tmpl)
}

func crashDLRMessageID(u string) (int64, error) {
	parsed, err := url.Parse(u)
	if err != nil {
		return 0, err
	}
	q, err := url.ParseQuery(parsed.RawQuery)
	if err != nil {
		return 0, err
	}
	if q.Get("secret") != crashKannelSecret {
		return 0, fmt.Errorf("secret %q, want %q", q.Get("secret"), crashKannelSecret)
	}
	if !strings.HasSuffix(parsed.Path, "/carrier/kannel/dlr") {
		return 0, fmt.Errorf("path %q does not end in /carrier/kannel/dlr", parsed.Path)
	}
	id, err := strconv.ParseInt(q.Get("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, fmt.Errorf("id %q is not a positive integer", q.Get("id"))
	}
	return id, nil
}

// deliverDLR delivers message id's report like Kannel with
// http-request-retry: until the server answers 200, every 200 ms.
func (f *crashKannel) deliverDLR(id int64, tmpl string) {
	defer f.wg.Done()
	if f.dlrGate != nil {
		f.dlrGate(id)
	}
	select {
	case <-time.After(f.dlrDelay()):
	case <-f.stop:
		return
	}
	for {
		status, body, err := f.tryDLR(tmpl)
		switch {
		case err == nil && status == http.StatusOK:
			f.mu.Lock()
			f.dlrDone[id]++
			f.mu.Unlock()
			return
		case err == nil && status >= 400 && status < 500:
			// The server rejected the report itself: retrying cannot help.
			f.mu.Lock()
			f.dlrRefused[id] = fmt.Sprintf("%d %s", status, body)
			f.problems = append(f.problems, fmt.Sprintf("fake kannel: DLR for message %d answered %d %q", id, status, body))
			f.mu.Unlock()
			return
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-f.stop:
			return
		}
	}
}

// tryDLR makes one DLR request.
func (f *crashKannel) tryDLR(tmpl string) (int, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		select {
		case <-f.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, crashExpandDLR(tmpl), nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return resp.StatusCode, strings.TrimSpace(string(body)), err
}

// crashKannelState is a copy of what the fake carrier knows.
type crashKannelState struct {
	calls             map[int64]int
	dropped           map[int64]bool
	accepted, refused map[int64]string
	dlrDone           map[int64]int
	dlrRefused        map[int64]string
	problems          []string
	dlrOutstanding    int // accepted messages whose DLR is neither done nor refused
}

func (f *crashKannel) state() crashKannelState {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := crashKannelState{
		calls: crashClone(f.calls), dropped: crashClone(f.dropped), accepted: crashClone(f.accepted), refused: crashClone(f.refused),
		dlrDone: crashClone(f.dlrDone), dlrRefused: crashClone(f.dlrRefused), problems: slices.Clone(f.problems),
	}
	for id := range f.accepted {
		if f.dlrDone[id] == 0 && f.dlrRefused[id] == "" {
			s.dlrOutstanding++
		}
	}
	return s
}

func crashClone[K comparable, V any](m map[K]V) map[K]V {
	c := make(map[K]V, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// ---- the server, killable ----

type crashSetup struct {
	db       string
	account  int64
	from     string
	key      string
	port     int
	launched bool // a server started: the port is in the dlr-urls, keep it
	fake     *crashKannel
	// sim, when set, runs the server on the sim carrier with this script
	// instead of on the fake Kannel.
	sim string
	// publicURL, when set, is the server's --public-url (the carrier's
	// dlr-urls lead there) instead of its own address: a proxy in front of
	// several nodes.
	publicURL string
	// extra are more serve flags.
	extra []string
}

// crashProvision creates through the CLI an account with one SMS line, the
// rate 1 → 0.0079/0.02 and an sms:send key.
func crashProvision(t *testing.T, db string, fake *crashKannel) *crashSetup {
	t.Helper()
	account := createAccount(t, db, "Crash Test Inc")
	line := createLine(t, db, account, "--number", crashLineNumber, "--name", "Main")
	var rate struct {
		Account int64        `json:"account"`
		Prefix  string       `json:"prefix"`
		SMS     money.Micros `json:"sms"`
		MMS     money.Micros `json:"mms"`
	}
	cliJSON(t, db, &rate, "rate", "set", "--account", fmt.Sprint(account), "--prefix", "1", "--sms", "0.0079", "--mms", "0.02")
	if rate.Account != account || rate.Prefix != "1" || rate.SMS != crashSMSRate || rate.MMS != 20000 {
		t.Fatalf("rate set: got %+v, want account %d, prefix 1, sms 0.0079, mms 0.02", rate, account)
	}
	key := createKey(t, db, account, "crash sender", "sms:send")
	return &crashSetup{db: db, account: account, from: line.Number, key: key.Key, port: crashFreePort(t), fake: fake}
}

// crashFreePort returns a TCP port on 127.0.0.1 that was free a moment ago. The
// server must know its port before it starts, so that the dlr-url it gives
// the carrier still reaches it after a restart.
func crashFreePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pick a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (c *crashSetup) baseURL() string { return fmt.Sprintf("http://127.0.0.1:%d", c.port) }

func (c *crashSetup) serveArgs() []string {
	public := c.publicURL
	if public == "" {
		public = c.baseURL()
	}
	if c.sim != "" {
		return append([]string{"serve", "--db", c.db,
			"--listen", fmt.Sprintf("127.0.0.1:%d", c.port), "--public-url", public,
			"--log-format", "json", "--carrier", "sim", "--sim", c.sim}, c.extra...)
	}
	return append([]string{"serve", "--db", c.db,
		"--listen", fmt.Sprintf("127.0.0.1:%d", c.port), "--public-url", public,
		"--log-format", "json", "--reconcile-after", "6s", "--carrier-timeout", "5s",
		"--carrier", "kannel", "--kannel-send-url", c.fake.sendURL(),
		"--kannel-user", crashKannelUser, "--kannel-password", crashKannelPassword, "--kannel-secret", crashKannelSecret}, c.extra...)
}

// launch starts "switchboard serve" and waits for its "serving" line. A
// graceful process is stopped with SIGTERM at cleanup and must exit 0 having
// logged "stopped"; otherwise the test is expected to kill it, and cleanup
// only makes sure it is gone. If the very first start finds its port taken
// (the port is picked before the server starts), it retries on another.
func (c *crashSetup) launch(t *testing.T, graceful bool) *process {
	t.Helper()
	for attempt := 1; ; attempt++ {
		p, err := c.tryLaunch(t, graceful)
		if err == nil {
			c.launched = true
			return p
		}
		if c.launched || attempt == 3 || !strings.Contains(err.Error(), "is in use by another program") {
			t.Fatalf("%v", err)
		}
		t.Logf("port %d was taken: retrying on another", c.port)
		c.port = crashFreePort(t)
	}
}

func (c *crashSetup) tryLaunch(t *testing.T, graceful bool) (*process, error) {
	args := c.serveArgs()
	p := &process{
		t:      t,
		name:   "switchboard " + strings.Join(args, " "),
		cmd:    exec.Command(switchboardBinary(), args...),
		stdout: newLineWriter(),
		stderr: newLineWriter(),
		done:   make(chan struct{}),
	}
	p.cmd.Env = childEnv()
	p.cmd.Dir = t.TempDir()
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %v", p.name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	for next := 0; ; {
		_, n, found, changed := p.stderr.find(next, logMsg("serving"))
		if found {
			break
		}
		next = n
		select {
		case <-changed:
			continue
		case <-p.done:
			if _, _, found, _ := p.stderr.find(next, logMsg("serving")); !found {
				return nil, fmt.Errorf("%s exited (%v) before serving; stderr:\n%s", p.name, p.err, crashTail(p.stderr.String(), 20))
			}
		case <-deadline.C:
			p.cmd.Process.Kill()
			<-p.done
			return nil, fmt.Errorf("%s: not serving within %v; stderr:\n%s", p.name, startTimeout, crashTail(p.stderr.String(), 20))
		}
		break
	}
	if graceful {
		t.Cleanup(func() { crashStopGracefully(t, p) })
	} else {
		t.Cleanup(func() {
			select {
			case <-p.done:
			default:
				p.cmd.Process.Kill()
				<-p.done
			}
			if t.Failed() {
				t.Logf("killed server: stderr tail:\n%s", crashTail(p.stderr.String(), 60))
			}
		})
	}
	return p, nil
}

// crashStopGracefully is the harness's process.stop, logging only the end of
// stderr (a server under load logs every request).
func crashStopGracefully(t *testing.T, p *process) {
	select {
	case <-p.done:
		t.Errorf("server exited before the test ended: %v", p.err)
	default:
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("server: SIGTERM: %v", err)
		}
		select {
		case <-p.done:
			if p.err != nil {
				t.Errorf("server: after SIGTERM: got %v, want exit status 0", p.err)
			} else if _, _, found, _ := p.stderr.find(0, logMsg("stopped")); !found {
				t.Errorf("server: exited 0 after SIGTERM but never logged \"stopped\"")
			}
		case <-time.After(stopTimeout):
			t.Errorf("server: still running %v after SIGTERM, want a graceful exit", stopTimeout)
			p.cmd.Process.Kill()
			<-p.done
		}
	}
	if t.Failed() {
		t.Logf("server: stderr tail:\n%s", crashTail(p.stderr.String(), 60))
	}
}

// crashKill sends SIGKILL and waits for the process to be gone.
func crashKill(t *testing.T, p *process) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL %s: %v", p.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		t.Fatalf("%s: still running %v after SIGKILL", p.name, stopTimeout)
	}
}

func crashTail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("… %d lines before", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// ---- the client side ----

// crashOutcome is what one POST /sms/messages got.
type crashOutcome struct {
	to, text string
	status   int   // 0: transport error (connection refused or reset)
	err      error // the transport error
	id       int64 // from a 201
	price    money.Micros
	body     string
}

// crashReadingTransport reads the whole response body before handing it on, so a
// connection reset mid-body is a transport error here (an expected outcome
// of SIGKILL) instead of a read failure that apitest reports as a test error.
type crashReadingTransport struct{ base http.RoundTripper }

func (rt crashReadingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading response body: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// crashClient validates every complete response against api/openapi.yaml.
func crashClient(t *testing.T) *http.Client {
	base := &http.Transport{MaxIdleConnsPerHost: 32, DisableCompression: true}
	t.Cleanup(base.CloseIdleConnections)
	return &http.Client{Timeout: httpTimeout, Transport: apitest.Transport(t, crashReadingTransport{base})}
}

func (c *crashSetup) send(client *http.Client, to, text string) crashOutcome {
	out := crashOutcome{to: to, text: text}
	body, _ := json.Marshal(map[string]any{"from": c.from, "to": []string{to}, "message": text})
	req, err := http.NewRequest(http.MethodPost, c.baseURL()+apiPrefix+"/sms/messages", bytes.NewReader(body))
	if err != nil {
		out.err = err
		return out
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		out.err = err
		return out
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	out.status, out.body = resp.StatusCode, string(raw)
	if resp.StatusCode == http.StatusCreated {
		var env struct {
			Data struct {
				Billing struct {
					TotalPrice money.Micros `json:"totalPrice"`
				} `json:"billing"`
				Messages []struct {
					ID     int64        `json:"id"`
					Status string       `json:"status"`
					Price  money.Micros `json:"price"`
				} `json:"messages"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &env); err != nil || len(env.Data.Messages) != 1 {
			out.err = fmt.Errorf("201 body is not one sent message: %v", err)
			return out
		}
		m := env.Data.Messages[0]
		if m.Status != domain.StatusSent || m.Price != env.Data.Billing.TotalPrice {
			out.err = fmt.Errorf("201 body: message status %q price %s, billing totalPrice %s", m.Status, m.Price, env.Data.Billing.TotalPrice)
		}
		out.id, out.price = m.ID, m.Price
	}
	return out
}

// ---- reading the outcome from the database ----

func crashOpenStore(t *testing.T, db string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// crashFarFuture is later than any message's created_at.
var crashFarFuture = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// crashWaitFor polls cond until it returns "" or crashSettle passes; then it fails
// with cond's last explanation.
func crashWaitFor(t *testing.T, what string, cond func() string) {
	t.Helper()
	crashWaitUntil(t, time.Now().Add(crashSettle), what, cond)
}

// crashWaitUntil is crashWaitFor with its own deadline.
func crashWaitUntil(t *testing.T, deadline time.Time, what string, cond func() string) {
	t.Helper()
	start := time.Now()
	for {
		why := cond()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, time.Since(start).Round(time.Second), why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// crashSettled reports "" once no outbound message is pending and every message
// the carrier accepted has had its DLR stored.
func crashSettled(st *store.Store, fake *crashKannel) string {
	pending, err := st.PendingBefore(context.Background(), crashFarFuture)
	if err != nil {
		return "PendingBefore: " + err.Error()
	}
	s := fake.state()
	if len(pending) > 0 || s.dlrOutstanding > 0 {
		return fmt.Sprintf("%d messages pending (%v…), %d DLRs not yet delivered", len(pending), pending[:min(len(pending), 5)], s.dlrOutstanding)
	}
	return ""
}

// crashCharges returns message id → the ledger amounts charged for it.
func crashCharges(t *testing.T, st *store.Store, account int64) (map[int64][]money.Micros, int64, int) {
	t.Helper()
	ctx := context.Background()
	entries, err := st.Ledger(ctx, account, 1<<30)
	if err != nil {
		t.Fatalf("Ledger: %v", err)
	}
	byMsg := map[int64][]money.Micros{}
	for _, e := range entries {
		if e.Currency != "USD" {
			t.Errorf("ledger entry %d: currency %q, want USD", e.ID, e.Currency)
		}
		byMsg[e.MessageID] = append(byMsg[e.MessageID], e.Amount)
	}
	total, n, err := st.LedgerTotal(ctx, account)
	if err != nil {
		t.Fatalf("LedgerTotal: %v", err)
	}
	if n != len(entries) {
		t.Errorf("LedgerTotal counts %d entries, Ledger lists %d", n, len(entries))
	}
	return byMsg, total, n
}

// crashMessage reads message id of the account; ok is false when there is none.
func crashMessage(t *testing.T, st *store.Store, account, id int64) (domain.Message, bool) {
	t.Helper()
	m, err := st.Message(context.Background(), account, id)
	if domain.IsNotFound(err) {
		return m, false
	}
	if err != nil {
		t.Fatalf("Message %d: %v", id, err)
	}
	return m, true
}

// crashPrice is the rate card's price of a one-recipient text to a +1
// number: 0.0079 per GSM-7 segment.
func crashPrice(text string) money.Micros {
	if len(text) <= 160 {
		return crashSMSRate
	}
	return crashSMSRate * money.Micros((len(text)+152)/153)
}

// ---- the tests ----

// TestKillUnderLoadKeepsMoneyInvariant kills the server with SIGKILL while 16
// clients send, restarts it on the same database and port, lets the
// reconciler and the carrier's retried DLRs settle everything, and then
// checks the ledger against what the carrier accepted and what the clients
// were told.
func TestKillUnderLoadKeepsMoneyInvariant(t *testing.T) {
	engines(t, testCrashKillUnderLoad)
}

func testCrashKillUnderLoad(t *testing.T, db string) {
	const clients = 16
	fake := newCrashKannel(t)
	// Latency on both sides of the acceptance spreads the requests in
	// flight at the kill over the steps of a send. Once armed, the fake
	// also holds one request before taking it and one after accepting it,
	// and the kill waits for both, so that every run has a message the
	// carrier accepted whose outcome the server never recorded, and one
	// cut off on its way to the carrier (which stands for "killed between
	// the intent and the carrier call", a window too short to hit by
	// chance; a request whose server hangs up before the fake took it
	// counts as never received).
	var armed atomic.Bool
	heldBefore, heldAfter := make(chan int64, 1), make(chan int64, 1)
	var holdBefore, holdAfter sync.Once
	holdUntilHangup := func(ctx context.Context, id int64, once *sync.Once, held chan<- int64) bool {
		holding := false
		if armed.Load() {
			once.Do(func() { holding = true })
		}
		if !holding {
			return false
		}
		held <- id
		select {
		case <-ctx.Done():
		case <-fake.stop:
		}
		return true
	}
	fake.before = func(ctx context.Context, id int64) bool {
		if holdUntilHangup(ctx, id, &holdBefore, heldBefore) {
			return false
		}
		select {
		case <-time.After(time.Duration(rand.IntN(8)) * time.Millisecond):
			return true
		case <-ctx.Done():
			return false
		}
	}
	fake.after = func(ctx context.Context, id int64) {
		if !holdUntilHangup(ctx, id, &holdAfter, heldAfter) {
			time.Sleep(time.Duration(rand.IntN(8)) * time.Millisecond)
		}
	}
	fake.dlrDelay = func() time.Duration { return time.Duration(50+rand.IntN(250)) * time.Millisecond }
	c := crashProvision(t, db, fake)
	first := c.launch(t, false)

	load := crashStartLoad(t, c, clients)
	loadStart := time.Now()
	load.waitCreated(t, "the load under way before the kill", crashLoadSends)
	armed.Store(true)
	var cutOff, lost int64
	for _, held := range []chan int64{heldBefore, heldAfter} {
		select {
		case id := <-held:
			if held == heldBefore {
				cutOff = id
			} else {
				lost = id
			}
		case <-time.After(httpTimeout):
			t.Fatalf("the fake carrier was not reached within %v of arming it", httpTimeout)
		}
	}
	crashKill(t, first)
	killedAt := time.Since(loadStart)
	c.launch(t, true)
	restartedAt := time.Since(loadStart)
	load.waitCreated(t, "the load served by the restarted server", load.created()+crashLoadSends)
	outcomes := load.finish()
	t.Logf("killed at %v, serving again at %v", killedAt.Round(time.Millisecond), restartedAt.Round(time.Millisecond))
	msgs, ledger, fs := crashCheckMoney(t, c, outcomes, clients)
	if !fs.dropped[cutOff] || msgs[cutOff].Status != domain.StatusAbandoned || len(ledger[cutOff]) != 0 {
		t.Errorf("message %d, cut off on its way to the carrier by the kill: status %q, charged %v, dropped by the fake %v; want abandoned, uncharged",
			cutOff, msgs[cutOff].Status, ledger[cutOff], fs.dropped[cutOff])
	}
	if _, ok := fs.accepted[lost]; !ok || msgs[lost].Status != domain.StatusSent || len(ledger[lost]) != 1 {
		t.Errorf("message %d, accepted by the carrier as the server was killed: status %q, charged %v; want sent, charged once on its DLR",
			lost, msgs[lost].Status, ledger[lost])
	}
}

// crashLoad is clients sending through c as fast as they can, each text
// unique, a quarter of them to destinations the carrier refuses and a third
// of them two segments long.
type crashLoad struct {
	mu       sync.Mutex
	outcomes []crashOutcome
	stop     atomic.Bool
	wg       sync.WaitGroup
}

func crashStartLoad(t *testing.T, c *crashSetup, clients int) *crashLoad {
	client := crashClient(t)
	l := &crashLoad{}
	for i := range clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for n := 0; !l.stop.Load(); n++ {
				to := fmt.Sprintf("1415555%04d", (i*1000+n)%10000)
				if n%4 == 3 {
					to = fmt.Sprintf("%s555%04d", crashRefusedPrefix, (i*1000+n)%10000)
				}
				text := fmt.Sprintf("crash %d-%d", i, n)
				if n%3 == 2 {
					text += " " + strings.Repeat("x", 170) // two segments
				}
				o := c.send(client, to, text)
				l.mu.Lock()
				l.outcomes = append(l.outcomes, o)
				l.mu.Unlock()
				if o.status == 0 {
					time.Sleep(20 * time.Millisecond) // server down: do not spin
				}
			}
		}()
	}
	// Stop the clients however the test ends, before anything they use.
	t.Cleanup(func() { l.finish() })
	return l
}

// crashLoadSends is how many sends the load has answered 201 before a test
// kills a server, and again after: a load under way at the kill, whatever the
// machine's pace, and served again after it.
const crashLoadSends = 200

// created is how many sends have been answered 201.
func (l *crashLoad) created() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, o := range l.outcomes {
		if o.status == http.StatusCreated {
			n++
		}
	}
	return n
}

// waitCreated waits until n sends have been answered 201.
func (l *crashLoad) waitCreated(t *testing.T, what string, n int) {
	t.Helper()
	crashWaitFor(t, what, func() string {
		if k := l.created(); k < n {
			return fmt.Sprintf("%d of %d sends answered 201", k, n)
		}
		return ""
	})
}

// finish stops the clients and returns what every request got.
func (l *crashLoad) finish() []crashOutcome {
	l.stop.Store(true)
	l.wg.Wait()
	return l.outcomes
}

// crashCheckMoney waits until every message of c's account is resolved and
// every DLR delivered, then checks the money invariant against what the
// carrier accepted and what the clients were told: charged exactly once ⇔
// accepted by the carrier; every 201 accepted and charged its stated price;
// every 503 refused and uncharged; nothing the carrier never saw charged or
// left pending; the ledger total the sum of the sent messages' prices. It
// returns the account's messages, the ledger by message and the carrier's
// state for the caller's own checks.
func crashCheckMoney(t *testing.T, c *crashSetup, outcomes []crashOutcome, clients int) (map[int64]domain.Message, map[int64][]money.Micros, crashKannelState) {
	t.Helper()
	fake := c.fake
	st := crashOpenStore(t, c.db)
	crashWaitFor(t, "every message resolved and every DLR delivered", func() string { return crashSettled(st, fake) })
	fs := fake.state()
	for _, p := range fs.problems {
		t.Errorf("%s", p)
	}
	ledger, total, entries := crashCharges(t, st, c.account)

	// Every message the server created: ids are allocated per intent, at most
	// one per request, and nothing else creates messages in this database.
	msgs := map[int64]domain.Message{}
	byText := map[string]int64{}
	for id := int64(1); id <= int64(len(outcomes))+int64(clients); id++ {
		m, ok := crashMessage(t, st, c.account, id)
		if !ok {
			continue
		}
		if m.Direction != "out" {
			t.Errorf("message %d: direction %q, want out", id, m.Direction)
		}
		msgs[id] = m
		if prev, dup := byText[m.Body]; dup {
			t.Errorf("messages %d and %d have the same text %q: one request made two messages", prev, id, m.Body)
		}
		byText[m.Body] = id
	}
	for id := range fs.calls {
		if _, ok := msgs[id]; !ok {
			t.Errorf("the carrier was sent message %d, which is not in the database", id)
		}
	}

	// (a) charged ⇔ accepted by the carrier, exactly once, at the message's
	// price; and the accepted message is sent with its DLR stored.
	for id, text := range fs.accepted {
		m := msgs[id]
		if m.Body != text {
			t.Errorf("message %d: carrier got text %q, database has %q", id, text, m.Body)
		}
		switch amounts := ledger[id]; {
		case len(amounts) != 1:
			t.Errorf("message %d accepted by the carrier: %d ledger entries %v, want exactly 1", id, len(amounts), amounts)
		case amounts[0] != m.Price:
			t.Errorf("message %d: charged %s, want its price %s", id, amounts[0], m.Price)
		}
		if m.Status != domain.StatusSent {
			t.Errorf("message %d accepted by the carrier: status %q, want sent", id, m.Status)
		}
		if fs.dlrDone[id] > 0 && m.DeliveryStatus != "delivered" {
			t.Errorf("message %d: delivery status %q after its DLR was stored, want delivered", id, m.DeliveryStatus)
		}
	}
	for id, amounts := range ledger {
		if _, ok := fs.accepted[id]; !ok {
			t.Errorf("message %d charged %v but the carrier never accepted it (status %q)", id, amounts, msgs[id].Status)
		}
	}

	// (b) every 201: accepted, sent, charged exactly the price it stated.
	// (c) every 503: a refusal, recorded failed, nothing charged.
	var n201, n202, n503, nTransport, nOther, recovered int
	for _, o := range outcomes {
		if o.err != nil && o.status != 0 {
			t.Errorf("send to %s %q: %d: %v", o.to, o.text, o.status, o.err)
		}
		switch o.status {
		case http.StatusCreated:
			n201++
			m, ok := msgs[o.id]
			switch {
			case !ok:
				t.Errorf("201 for %q gave message id %d, which is not in the database", o.text, o.id)
				continue
			case m.Body != o.text:
				t.Errorf("201 for %q gave message id %d, whose text is %q", o.text, o.id, m.Body)
			}
			if _, ok := fs.accepted[o.id]; !ok {
				t.Errorf("201 for message %d (%q to %s) but the carrier never accepted it", o.id, o.text, o.to)
			}
			if want := crashPrice(o.text); o.price != want {
				t.Errorf("201 for message %d: price %s, want %s by the rate card", o.id, o.price, want)
			}
			if amounts := ledger[o.id]; len(amounts) != 1 || amounts[0] != o.price {
				t.Errorf("201 for message %d stated price %s; ledger has %v", o.id, o.price, amounts)
			}
			if m.Status != domain.StatusSent || m.Price != o.price {
				t.Errorf("201 for message %d: stored status %q price %s, want sent at %s", o.id, m.Status, m.Price, o.price)
			}
		case http.StatusServiceUnavailable:
			n503++
			if !strings.HasPrefix(o.to, crashRefusedPrefix) {
				t.Errorf("503 for %q to %s, a destination the carrier accepts: %s", o.text, o.to, o.body)
			}
			id, ok := byText[o.text]
			if !ok {
				t.Errorf("503 for %q to %s left no message: want one recorded failed", o.text, o.to)
				continue
			}
			if _, ok := fs.refused[id]; !ok {
				t.Errorf("503 for message %d (%q) but the carrier never refused it", id, o.text)
			}
			if m := msgs[id]; m.Status != domain.StatusFailed {
				t.Errorf("503 for message %d (%q): status %q, want failed", id, o.text, m.Status)
			}
			if amounts := ledger[id]; len(amounts) > 0 {
				t.Errorf("503 for message %d (%q) yet charged %v", id, o.text, amounts)
			}
		case http.StatusAccepted:
			// The carrier's answer was lost and no receipt came within the
			// carrier timeout: the message is charged if the carrier took
			// it, and abandoned uncharged if not, as (a) and (d) check.
			n202++
		case 0:
			nTransport++
			if id, ok := byText[o.text]; ok && msgs[id].Status == domain.StatusSent {
				recovered++
			}
		default:
			nOther++
			t.Errorf("send %q to %s: status %d, want 201, 503 or a transport error: %s", o.text, o.to, o.status, o.body)
		}
	}

	// (d) messages the carrier never saw are abandoned and uncharged;
	// refused ones are failed (or abandoned when killed before recording the
	// refusal) and uncharged; nothing is left in any other status.
	var neverSeen, abandoned, failed, sent int
	var wantTotal money.Micros
	for id, m := range msgs {
		_, acc := fs.accepted[id]
		_, ref := fs.refused[id]
		switch m.Status {
		case domain.StatusSent:
			sent++
			wantTotal += m.Price
		case domain.StatusAbandoned:
			abandoned++
		case domain.StatusFailed:
			failed++
		}
		switch {
		case acc:
			// checked under (a)
		case ref:
			if m.Status != domain.StatusFailed && m.Status != domain.StatusAbandoned {
				t.Errorf("message %d refused by the carrier: status %q, want failed or abandoned", id, m.Status)
			}
		default:
			neverSeen++
			if m.Status != domain.StatusAbandoned {
				t.Errorf("message %d never reached the carrier: status %q, want abandoned", id, m.Status)
			}
		}
		if !acc && len(ledger[id]) > 0 {
			t.Errorf("message %d (status %q) not accepted by the carrier, yet charged %v", id, m.Status, ledger[id])
		}
	}

	// (e) the ledger total is the sum of the sent messages' prices.
	if money.Micros(total) != wantTotal || entries != sent {
		t.Errorf("ledger: total %s in %d entries, want %s in %d (the sent messages)", money.Micros(total), entries, wantTotal, sent)
	}
	if len(fs.accepted) != sent {
		t.Errorf("carrier accepted %d messages, database has %d sent", len(fs.accepted), sent)
	}

	t.Logf("%d requests: %d × 201, %d × 202, %d × 503, %d transport errors, %d other",
		len(outcomes), n201, n202, n503, nTransport, nOther)
	t.Logf("%d messages: carrier accepted %d (%d of them answered by a transport error, charged on their DLR), refused %d, never saw %d (%d of them cut off on their way to it); status sent %d, failed %d, abandoned %d; ledger %s in %d entries",
		len(msgs), len(fs.accepted), recovered, len(fs.refused), neverSeen, len(fs.dropped), sent, failed, abandoned, money.Micros(total), entries)
	if nTransport == 0 {
		t.Errorf("no request failed in transport: the kill did not hit requests in flight")
	}
	if n201 == 0 || n503 == 0 {
		t.Errorf("want both 201s and 503s; got %d and %d", n201, n503)
	}
	return msgs, ledger, fs
}

// TestRestartReconcilesPendingSend kills the server at one exact point of a
// send, restarts it, and checks how the message is resolved:
//   - the carrier accepted it but the server died before hearing so: the
//     later DLR marks it sent and charges it, once, whether it arrives while
//     the message is still pending or after the reconciler abandoned it;
//   - the server died while the carrier had not accepted it (and never
//     does): the reconciler abandons it, uncharged.
func TestRestartReconcilesPendingSend(t *testing.T) {
	for _, e := range storetest.Engines(t) {
		for _, sc := range []struct {
			name    string
			accept  bool
			dlrWhen string // "pending": DLR right after restart; "abandoned": once reconciled
		}{
			{"accepted/receipt-while-pending", true, "pending"},
			{"accepted/receipt-after-abandoned", true, "abandoned"},
			{"never-accepted", false, ""},
		} {
			t.Run(string(e)+"/"+sc.name, func(t *testing.T) {
				t.Parallel()
				testCrashRestartReconciles(t, storetest.DSN(t, e), sc.accept, sc.dlrWhen)
			})
		}
	}
}

func testCrashRestartReconciles(t *testing.T, db string, accept bool, dlrWhen string) {
	fake := newCrashKannel(t)
	arrived := make(chan int64, 1)
	release, dlrGo := make(chan struct{}), make(chan struct{})
	var releaseOnce, dlrOnce sync.Once
	openRelease := func() { releaseOnce.Do(func() { close(release) }) }
	openDLR := func() { dlrOnce.Do(func() { close(dlrGo) }) }
	hold := func(id int64) {
		select {
		case arrived <- id:
		default:
		}
		fake.wait(release)
	}
	if accept {
		// Accepted (and recorded) first, then the answer is held until the
		// server is dead.
		fake.after = func(_ context.Context, id int64) { hold(id) }
	} else {
		// Held before anything is recorded; once released, refused.
		fake.before = func(_ context.Context, id int64) bool { hold(id); return false }
	}
	fake.dlrGate = func(int64) { fake.wait(dlrGo) }
	t.Cleanup(openDLR) // runs before the fake's cleanup: no handler stays blocked
	t.Cleanup(openRelease)

	c := crashProvision(t, db, fake)
	client := crashClient(t)
	var sending sync.WaitGroup
	t.Cleanup(sending.Wait) // runs once the server is gone, before the fake is released
	first := c.launch(t, false)
	text := "held at the carrier"
	result := make(chan crashOutcome, 1)
	sending.Add(1)
	go func() {
		defer sending.Done()
		result <- c.send(client, "14155550199", text)
	}()

	var id int64
	select {
	case id = <-arrived:
	case o := <-result:
		t.Fatalf("the send finished (%d %s %v) without reaching the held carrier", o.status, o.body, o.err)
	case <-time.After(httpTimeout):
		t.Fatalf("the carrier got no sendsms within %v", httpTimeout)
	}
	st := crashOpenStore(t, db)
	if m, ok := crashMessage(t, st, c.account, id); !ok || m.Status != domain.StatusPending || m.Body != text {
		t.Fatalf("message %d while the carrier holds it: got %+v (found %v), want pending with the text", id, m, ok)
	}
	crashKill(t, first)
	o := <-result
	if o.status != 0 {
		t.Fatalf("send while the server was killed: got %d %s, want a transport error", o.status, o.body)
	}
	openRelease()

	c.launch(t, true)
	if m, _ := crashMessage(t, st, c.account, id); m.Status != domain.StatusPending && m.Status != domain.StatusAbandoned {
		t.Fatalf("message %d right after the restart: status %q, want pending or abandoned", id, m.Status)
	}
	if total, n, err := st.LedgerTotal(context.Background(), c.account); err != nil || n != 0 {
		t.Fatalf("ledger right after the restart: %d entries totalling %d (err %v), want none", n, total, err)
	}

	if !accept {
		crashWaitFor(t, "the reconciler abandons the message", func() string {
			if m, _ := crashMessage(t, st, c.account, id); m.Status != domain.StatusAbandoned {
				return "status " + m.Status
			}
			return ""
		})
		ledger, total, n := crashCharges(t, st, c.account)
		if n != 0 || total != 0 || len(ledger) != 0 {
			t.Errorf("message never accepted: ledger %v (total %d in %d entries), want empty", ledger, total, n)
		}
		if fs := fake.state(); len(fs.accepted) != 0 || fs.calls[id] != 1 || len(fs.problems) > 0 {
			t.Errorf("carrier: accepted %v, %d calls for message %d, problems %v; want none accepted, one call", fs.accepted, fs.calls[id], id, fs.problems)
		}
		return
	}

	status := ""
	if dlrWhen == "abandoned" {
		crashWaitFor(t, "the reconciler abandons the message", func() string {
			if m, _ := crashMessage(t, st, c.account, id); m.Status != domain.StatusAbandoned {
				return "status " + m.Status
			}
			return ""
		})
		if _, total, n := crashCharges(t, st, c.account); n != 0 {
			t.Fatalf("abandoned message charged before any evidence: %d entries totalling %d", n, total)
		}
	}
	m, _ := crashMessage(t, st, c.account, id)
	status = m.Status
	openDLR()
	crashWaitFor(t, "the DLR is stored", func() string { return crashSettled(st, fake) })

	// Kannel may deliver a report again: a second DLR must not charge again.
	fake.mu.Lock()
	tmpl := fake.dlrURLs[id]
	fake.mu.Unlock()
	if code, body, err := fake.tryDLR(tmpl); err != nil || code != http.StatusOK {
		t.Errorf("repeated DLR for message %d: got %d %q %v, want 200", id, code, body, err)
	}

	m, _ = crashMessage(t, st, c.account, id)
	if m.Status != domain.StatusSent || m.DeliveryStatus != "delivered" {
		t.Errorf("message %d after its DLR: status %q delivery %q, want sent and delivered", id, m.Status, m.DeliveryStatus)
	}
	if m.Price != crashPrice(text) {
		t.Errorf("message %d: price %s, want %s", id, m.Price, crashPrice(text))
	}
	ledger, total, n := crashCharges(t, st, c.account)
	if n != 1 || len(ledger[id]) != 1 || ledger[id][0] != m.Price || money.Micros(total) != m.Price {
		t.Errorf("ledger after the DLR (twice): %v (total %s in %d entries), want exactly one charge of %s for message %d",
			ledger, money.Micros(total), n, m.Price, id)
	}
	fs := fake.state()
	for _, p := range fs.problems {
		t.Errorf("%s", p)
	}
	if fs.calls[id] != 1 || len(fs.accepted) != 1 {
		t.Errorf("carrier: %d calls for message %d, %d accepted; want 1 and 1", fs.calls[id], id, len(fs.accepted))
	}
	t.Logf("message %d: %s when the DLR was let through; now %s, charged %s once", id, status, m.Status, m.Price)
}

// TestLostCarrierAnswerIsNotResent: the carrier accepts a message but its
// answer is lost (the connection drops before the 202). Whatever the server
// then tells the client, it must not submit the same message again: the
// carrier would send the SMS twice while the ledger charges it once. The
// request goes over a kept-alive connection, as every send after the first
// does.
func TestLostCarrierAnswerIsNotResent(t *testing.T) {
	engines(t, func(t *testing.T, db string) {
		fake := newCrashKannel(t)
		var lose atomic.Int64
		fake.loseAnswer = func(id int64) bool { return id == lose.Load() }
		fake.dlrGate = func(int64) { fake.wait(nil) } // no DLRs: only the send is under test
		c := crashProvision(t, db, fake)
		c.launch(t, true)
		client := crashClient(t)

		// The first send leaves a kept-alive connection to the carrier.
		first := c.send(client, "14155550111", "first, answered")
		if first.status != http.StatusCreated {
			t.Fatalf("first send: got %d %s %v, want 201", first.status, first.body, first.err)
		}
		lose.Store(first.id + 1) // ids are sequential: the next message's answer is lost
		o := c.send(client, "14155550112", "second, answer lost")
		// The carrier took the message but its answer was lost, and no
		// receipt comes: the outcome is unknown, so the client gets 202 with
		// the message pending, never a 503 "nothing was sent" (before, it got
		// 503 for a message the carrier had).
		if o.status != http.StatusAccepted {
			t.Fatalf("second send: got %d %s %v, want 202 (outcome unknown)", o.status, o.body, o.err)
		}
		if !strings.Contains(o.body, `"status":"pending"`) {
			t.Errorf("202 body %s: want the message reported pending", o.body)
		}

		st := crashOpenStore(t, db)
		id := first.id + 1
		m, ok := crashMessage(t, st, c.account, id)
		if !ok || m.Body != "second, answer lost" {
			t.Fatalf("message %d: got %+v (found %v), want the second send", id, m, ok)
		}
		fs := fake.state()
		if fs.calls[id] != 1 {
			t.Errorf("message %d: the carrier got %d sendsms calls after it accepted the first and its answer was lost, want 1 "+
				"(the server re-sent it: the recipient gets the SMS %d times; client got %d, message %s)",
				id, fs.calls[id], fs.calls[id], o.status, m.Status)
		}
		ledger, _, _ := crashCharges(t, st, c.account)
		if m.Status != domain.StatusPending || len(ledger[id]) != 0 {
			t.Errorf("202 for message %d: status %q, charges %v; want pending (its receipt would charge it), uncharged", id, m.Status, ledger[id])
		}
		t.Logf("message %d: client got %d, status %s, %d sendsms calls, %d charges", id, o.status, m.Status, fs.calls[id], len(ledger[id]))
	})
}
