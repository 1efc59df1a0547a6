package httpapi_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store/storetest"
)

// TestUnreadCountersRandomized applies random sequences of every operation
// that moves an unread count (inbound texts, 1:1 and group; sends; thread
// reads with markRead; per-message read and unread marks; line-wide reads,
// with and without since; deletions of messages and conversations; blocks
// and unblocks; users added; lines added with their assigned users) through
// the router, and after each step holds the counters (migration 0030) to the
// counts computed from scratch:
//
//   - every counter row equals the sum the old query made over inbox_reads
//     and conversations (store.CheckUnreadTotals);
//   - GET /sms/unread, for every user and the API key, equals GET
//     /sms/unread?since=<before the test> (the SQL path, which counts the
//     unread messages one by one) and reports each line the caller may use.
//
// Seeded and reproducible: SWITCHBOARD_UNREAD_SEED=N runs seed N alone
// (a failure names its seed), SWITCHBOARD_UNREAD_STEPS sets the steps.
func TestUnreadCountersRandomized(t *testing.T) {
	seeds := []uint64{1, 2}
	if s := os.Getenv("SWITCHBOARD_UNREAD_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		must(t, err)
		seeds = []uint64{n}
	}
	steps := 120
	if s := os.Getenv("SWITCHBOARD_UNREAD_STEPS"); s != "" {
		n, err := strconv.Atoi(s)
		must(t, err)
		steps = n
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			forEachInbox(t, func(t *testing.T, f *inboxFixture) {
				(&unreadRun{f: f, rnd: rand.New(rand.NewPCG(seed, 26))}).run(t, seed, steps)
			})
		})
	}
}

// unreadCaller is a credential of the run: a user's token (with the lines
// they may use) or the API key (user 0, every line).
type unreadCaller struct {
	name  string
	cred  string
	user  int64
	lines []string
}

type unreadRun struct {
	f       *inboxFixture
	rnd     *rand.Rand
	callers []*unreadCaller
	lines   []string // every line of the account
	custs   []string
	marks   []time.Time // moments before inbound texts: the sinces of line reads
	start   time.Time
}

func (r *unreadRun) run(t *testing.T, seed uint64, steps int) {
	f := r.f
	r.start = time.Now().Add(-time.Minute)
	r.lines = []string{inboxMain, inboxDesk, inboxHidden}
	r.custs = []string{custA, custB, custC, custD, "14155551005", "14155551006"}
	r.callers = []*unreadCaller{
		{name: "key", cred: f.key},
		{name: "Max", cred: f.maxTok, user: f.max.ID},
		{name: "Agnes", cred: f.agnesTok, user: f.agnes.ID},
	}
	r.refreshLines(t)
	r.check(t, seed, 0, "start")
	for step := 1; step <= steps; step++ {
		what := r.step(t)
		t.Logf("step %d: %s", step, what) // the sequence, shown when a step fails
		r.check(t, seed, step, what)
	}
}

func (r *unreadRun) pick(n int) int { return r.rnd.IntN(n) }

// user picks a user caller; any picks a caller, the key included.
func (r *unreadRun) user() *unreadCaller { return r.callers[1+r.pick(len(r.callers)-1)] }
func (r *unreadRun) any() *unreadCaller  { return r.callers[r.pick(len(r.callers))] }

func (c *unreadCaller) line(r *unreadRun) string { return c.lines[r.pick(len(c.lines))] }

// parties picks the other parties of a thread: one customer, or a group.
func (r *unreadRun) parties() []string {
	n := 1
	if r.pick(4) == 0 {
		n = 2 + r.pick(2)
	}
	p := slices.Clone(r.custs)
	r.rnd.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
	p = p[:n]
	slices.Sort(p)
	return p
}

// threadPath addresses a conversation of line with parties (sorted), as
// the API does: a group by its first party plus groupParticipants.
func threadPath(line string, parties []string) string {
	p := "/sms/conversations/" + line + "/" + parties[0]
	if len(parties) > 1 {
		p += "?groupParticipants=" + strings.Join(parties[1:], ",")
	}
	return p
}

// withPath inserts a sub-path before threadPath's query.
func withPath(p, sub string) string {
	if i := strings.IndexByte(p, '?'); i >= 0 {
		return p[:i] + sub + p[i:]
	}
	return p + sub
}

// thread lists a thread's conversation as c sees it (nil, nil when it has
// no visible message).
func (r *unreadRun) thread(t *testing.T, c *unreadCaller) (string, []message) {
	t.Helper()
	items := r.f.list(t, c.cred, "?limit=100")
	if len(items) == 0 {
		return "", nil
	}
	it := items[r.pick(len(items))]
	parties := []string{it.Number}
	if it.GroupParticipants != nil {
		parties = it.GroupParticipants
	}
	path := threadPath(it.Line, parties)
	var th thread
	r.f.call(t, "GET", withQuery(path, "limit=100"), c.cred, "", 200, &th)
	return path, th.Messages
}

func withQuery(p, q string) string {
	if strings.Contains(p, "?") {
		return p + "&" + q
	}
	return p + "?" + q
}

// step applies one random operation and says what it was.
func (r *unreadRun) step(t *testing.T) string {
	t.Helper()
	f := r.f
	switch op := r.pick(100); {
	case op < 30: // an inbound text
		line := r.lines[r.pick(len(r.lines))]
		parties := r.parties()
		from := parties[r.pick(len(parties))]
		r.marks = append(r.marks, time.Now())
		if len(parties) > 1 {
			f.receive(t, line, from, "in", parties...)
		} else {
			f.receive(t, line, from, "in")
		}
		return fmt.Sprintf("inbound %s from %s to %s", parties, from, line)
	case op < 40: // a send, by a user or an integration
		c := r.any()
		line := c.line(r)
		to := r.parties()
		f.send(t, line, c.user, "out", to...)
		return fmt.Sprintf("send by %s on %s to %v", c.name, line, to)
	case op < 50: // a thread read with markRead (the key: the team view)
		c := r.any()
		path, msgs := r.thread(t, c)
		if msgs == nil {
			return "nothing to read"
		}
		f.call(t, "GET", withQuery(path, "markRead=true&limit=1"), c.cred, "", 200, nil)
		return fmt.Sprintf("%s reads %s", c.name, path)
	case op < 62: // read or unread marks on some messages
		c := r.user()
		path, msgs := r.thread(t, c)
		if msgs == nil {
			return "nothing to mark"
		}
		var ids []string
		for _, m := range msgs {
			if r.pick(2) == 0 {
				ids = append(ids, fmt.Sprint(m.ID))
			}
		}
		if ids == nil {
			ids = []string{fmt.Sprint(msgs[0].ID)}
		}
		read := r.pick(2) == 0
		f.call(t, "POST", withPath(path, "/read"), c.cred, fmt.Sprintf(`{"messageIds": [%s], "read": %v}`, strings.Join(ids, ", "), read), 204, nil)
		return fmt.Sprintf("%s marks %v read=%v in %s", c.name, ids, read, path)
	case op < 70: // a line read, sometimes only since a moment
		c := r.user()
		line := c.line(r)
		body := "{}"
		if len(r.marks) > 0 && r.pick(2) == 0 {
			body = fmt.Sprintf(`{"since": %q}`, r.marks[r.pick(len(r.marks))].UTC().Format(time.RFC3339Nano))
		}
		f.call(t, "POST", "/sms/lines/"+line+"/read", c.cred, body, 204, nil)
		return fmt.Sprintf("%s reads line %s %s", c.name, line, body)
	case op < 78: // a message deleted
		c := r.callers[1] // Max may use every line
		path, msgs := r.thread(t, c)
		if msgs == nil {
			return "nothing to delete"
		}
		id := msgs[r.pick(len(msgs))].ID
		f.call(t, "DELETE", withPath(path, fmt.Sprintf("/messages/%d", id)), c.cred, "", 204, nil)
		return fmt.Sprintf("delete message %d of %s", id, path)
	case op < 82: // a conversation deleted
		c := r.callers[1]
		path, msgs := r.thread(t, c)
		if msgs == nil {
			return "nothing to delete"
		}
		f.call(t, "DELETE", path, c.cred, "", 204, nil)
		return "delete " + path
	case op < 90: // a block or an unblock
		line := r.lines[r.pick(len(r.lines))]
		cust := r.custs[r.pick(len(r.custs))]
		if r.pick(2) == 0 {
			status, _, b := f.do(t, "POST", "/api/public/v1/sms/lines/"+line+"/blocked", f.key, `{"number":"`+cust+`","reason":"test"}`)
			if status != 200 && status != 201 {
				t.Fatalf("block: %d %s", status, b)
			}
			return "block " + cust + " on " + line
		}
		status, _, b := f.do(t, "DELETE", "/api/public/v1/sms/lines/"+line+"/blocked/"+cust, f.key, "")
		if status != 204 && status != 404 {
			t.Fatalf("unblock: %d %s", status, b)
		}
		return "unblock " + cust + " on " + line
	case op < 95: // a user added, seeing every line or the assigned ones
		perms := "users:all,numbers:all"
		if r.pick(2) == 0 {
			perms = "users:self,numbers:assigned"
		}
		p, err := domain.ParsePermissions(perms)
		must(t, err)
		u := storetest.User(t, f.st, f.acme.ID, &storetest.UserOpts{Permissions: &p})
		tok, err := userAccessToken(ctx, f.st, u.ID, auth.AllScopes...)
		must(t, err)
		c := &unreadCaller{name: fmt.Sprint("user ", u.ID), cred: tok, user: u.ID}
		r.callers = append(r.callers, c)
		r.refreshLines(t)
		return "add " + c.name + " with " + perms
	default: // a line added, assigned to some users or to none (everyone's)
		var ids []int64
		for _, c := range r.callers[1:] {
			if r.pick(3) == 0 {
				ids = append(ids, c.user)
			}
		}
		l := storetest.Line(t, f.st, f.acme.ID, &storetest.LineOpts{UserIDs: ids})
		r.lines = append(r.lines, l.Number)
		r.refreshLines(t)
		return fmt.Sprintf("add line %s for users %v", l.Number, ids)
	}
}

// refreshLines asks the API which lines each user may use now.
func (r *unreadRun) refreshLines(t *testing.T) {
	t.Helper()
	for _, c := range r.callers {
		var u unreadCounts
		r.f.call(t, "GET", "/sms/unread", c.cred, "", 200, &u)
		c.lines = nil
		for _, l := range u.Lines {
			c.lines = append(c.lines, l.Line)
		}
		if len(c.lines) == 0 {
			t.Fatalf("%s may use no line", c.name)
		}
	}
}

// check compares the counters with the counts computed from scratch.
func (r *unreadRun) check(t *testing.T, seed uint64, step int, what string) {
	t.Helper()
	if err := r.f.st.CheckUnreadTotals(ctx); err != nil {
		t.Fatalf("seed %d step %d (%s): %v", seed, step, what, err)
	}
	since := r.start.UTC().Format(time.RFC3339Nano)
	for _, c := range r.callers {
		var counters, scratch unreadCounts
		r.f.call(t, "GET", "/sms/unread", c.cred, "", 200, &counters)
		r.f.call(t, "GET", "/sms/unread?since="+since, c.cred, "", 200, &scratch)
		if fmt.Sprint(counters) != fmt.Sprint(scratch) {
			t.Fatalf("seed %d step %d (%s): %s's unread = %+v, counted from the messages %+v", seed, step, what, c.name, counters, scratch)
		}
		var sum int64
		var lines []string
		for _, l := range counters.Lines {
			sum += l.Count
			lines = append(lines, l.Line)
		}
		if sum != counters.Total || !slices.Equal(lines, c.lines) {
			t.Fatalf("seed %d step %d (%s): %s's unread = %+v, want the total of the lines %v", seed, step, what, c.name, counters, c.lines)
		}
	}
}
