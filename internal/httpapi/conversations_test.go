package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"switchboard/internal/contacts"
	"testing"

	"switchboard/internal/apitest"
	"switchboard/internal/auth"
	"switchboard/internal/carrier"
	"switchboard/internal/domain"
	"switchboard/internal/httpapi"
	"switchboard/internal/inbox"
	"switchboard/internal/search"
	"switchboard/internal/sms"
	"switchboard/internal/sms/smsevent"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/team"
	"switchboard/internal/users"
	"switchboard/internal/webhooks"
)

// Inbox fixture numbers: two lines of Acme (one open to everyone, one
// assigned to the agent), one of Beta, and customers.
const (
	inboxMain   = "14155550100" // unassigned: every user may see it
	inboxDesk   = "14155550101" // assigned to Agnes
	inboxHidden = "14155550102" // assigned to Max only: Agnes may not see it
	inboxBeta   = "12125550100"
	custA       = "14155551001"
	custB       = "14155551002"
	custC       = "14155551003"
	custD       = "14155551004"
)

// inboxFixture is a server over a real store with two OAuth users of
// different roles (Max sees every line, Agnes only lines assigned to her),
// an API key, and another account.
type inboxFixture struct {
	*fixture
	sms        *sms.Service
	acme       domain.Account
	max, agnes domain.User
	// Credentials: the API key, Max's and Agnes's tokens (all scopes), and
	// the other account's key.
	key, maxTok, agnesTok, betaKey string
}

func setupInbox(t *testing.T, engine store.Engine) *inboxFixture {
	t.Helper()
	return setupInboxOn(t, storetest.Open(t, engine))
}

// setupInboxOn is setupInbox on a store the caller opened.
func setupInboxOn(t *testing.T, st *store.Store) *inboxFixture {
	t.Helper()
	f := &inboxFixture{fixture: &fixture{st: st, keys: map[string]string{}, users: map[string]domain.User{}}}
	f.acme = storetest.Account(t, st, &storetest.AccountOpts{Name: "Acme"})
	beta := storetest.Account(t, st, &storetest.AccountOpts{Name: "Beta"})
	perms := func(list string) *domain.Permissions {
		p, err := domain.ParsePermissions(list)
		must(t, err)
		return &p
	}
	f.max = storetest.User(t, st, f.acme.ID, &storetest.UserOpts{FirstName: "Max", LastName: "Manager", Permissions: perms("users:all,numbers:all")})
	f.agnes = storetest.User(t, st, f.acme.ID, &storetest.UserOpts{FirstName: "Agnes", LastName: "Agent", Permissions: perms("users:self,numbers:assigned")})
	f.users["Dave"] = storetest.User(t, st, beta.ID, &storetest.UserOpts{FirstName: "Dave"})
	storetest.Line(t, st, f.acme.ID, &storetest.LineOpts{Number: inboxMain})
	storetest.Line(t, st, f.acme.ID, &storetest.LineOpts{Number: inboxDesk, UserIDs: []int64{f.agnes.ID}})
	storetest.Line(t, st, f.acme.ID, &storetest.LineOpts{Number: inboxHidden, UserIDs: []int64{f.max.ID}})
	storetest.Line(t, st, beta.ID, &storetest.LineOpts{Number: inboxBeta})
	_, f.key = storetest.Key(t, st, f.acme.ID)
	_, f.betaKey = storetest.Key(t, st, beta.ID)
	var err error
	f.maxTok, err = userAccessToken(ctx, st, f.max.ID, auth.AllScopes...)
	must(t, err)
	f.agnesTok, err = userAccessToken(ctx, st, f.agnes.ID, auth.AllScopes...)
	must(t, err)

	f.url, f.sms = serveInbox(t, st)
	f.client = apitest.Client(t)
	return f
}

// serveInbox starts an API server over st (a node) and returns its URL and
// its SMS service.
func serveInbox(t *testing.T, st *store.Store) (string, *sms.Service) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := sms.New(sms.Config{Store: st, Log: log})
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Store: st, Auth: &auth.Authenticator{Store: st}, Log: log, SMS: svc,
		Inbox: inbox.New(inbox.Config{Store: st, Log: log}), Webhooks: webhooks.New(webhooks.Config{Store: st}), Team: team.New(team.Config{Store: st}),
		Users: users.New(users.Config{Store: st}), Search: search.New(search.Config{Store: st}), Contacts: contacts.New(st)}))
	t.Cleanup(srv.Close)
	return srv.URL, svc
}

func forEachInbox(t *testing.T, fn func(t *testing.T, f *inboxFixture)) {
	for _, e := range storetest.Engines(t) {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			fn(t, setupInbox(t, e))
		})
	}
}

// receive injects an inbound text through the carrier sink, as a carrier
// callback would, and returns its message id.
func (f *inboxFixture) receive(t *testing.T, line, from, text string, group ...string) int64 {
	t.Helper()
	must(t, f.sms.Inbound(ctx, carrier.Inbound{From: from, To: line, Text: text, Participants: group}))
	evs, err := f.st.Events(ctx, f.lineAccount(line), 0, 100000)
	must(t, err)
	for i := len(evs) - 1; i >= 0; i-- {
		var p struct {
			MessageID int64 `json:"messageId"`
			Event     string
		}
		json.Unmarshal(evs[i].Payload, &p)
		if p.Event == "message.received" {
			return p.MessageID
		}
	}
	t.Fatal("no message.received event")
	return 0
}

func (f *inboxFixture) lineAccount(line string) int64 {
	l, err := f.st.LineByNumber(ctx, line)
	if err != nil {
		panic(err)
	}
	return l.AccountID
}

// send stores an accepted outbound text from line to numbers, by user (0: an integration).
func (f *inboxFixture) send(t *testing.T, line string, by int64, text string, to ...string) int64 {
	t.Helper()
	l, err := f.st.LineByNumber(ctx, line)
	must(t, err)
	sorted := slices.Clone(to)
	slices.Sort(sorted)
	o := &store.Outbound{AccountID: l.AccountID, LineID: l.ID, From: line, To: to, Participants: strings.Join(sorted, ","), Body: text,
		Type: "sms", Units: 1, UnitPrice: 7900, Price: 7900, SentBy: by}
	id, err := f.st.CreateOutbound(ctx, o)
	must(t, err)
	sent, err := smsevent.Sent(id, o.From, o.To)
	must(t, err)
	must(t, f.st.MarkOutboundSent(ctx, o, "ref", sent))
	return id
}

// call sends a request and decodes a success's data into out (when not nil),
// failing the test unless the status is want.
func (f *inboxFixture) call(t *testing.T, method, path, cred, body string, want int, out any) []byte {
	t.Helper()
	status, _, b := f.do(t, method, "/api/public/v1"+path, cred, body)
	if status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, b)
	}
	if out != nil {
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		must(t, json.Unmarshal(b, &env))
		reflect.ValueOf(out).Elem().SetZero() // absent fields must not keep old values
		must(t, json.Unmarshal(env.Data, out))
	}
	return b
}

// wantError checks an error response's status and type.
func (f *inboxFixture) wantError(t *testing.T, method, path, cred, body string, status int, typ string) string {
	t.Helper()
	got, _, b := f.do(t, method, "/api/public/v1"+path, cred, body)
	e := decodeInto[errorEnvelope](t, b)
	if got != status || e.Error.Type != typ {
		t.Errorf("%s %s: %d %s, want %d %s", method, path, got, b, status, typ)
	}
	return e.Error.Message
}

type item struct {
	Line              string   `json:"line"`
	Number            string   `json:"number"`
	GroupParticipants []string `json:"groupParticipants"`
	LastMessage       string   `json:"lastMessage"`
	LastMessageID     int64    `json:"lastMessageId"`
	LastMessageAt     string   `json:"lastMessageAt"`
	Direction         string   `json:"direction"`
	HasMedia          bool     `json:"hasMedia"`
	Unread            bool     `json:"unread"`
	UnreadCount       int64    `json:"unreadCount"`
	Resolved          bool     `json:"resolved"`
	ResolvedBy        int64    `json:"resolvedBy"`
	ResolvedAt        string   `json:"resolvedAt"`
	AssignedTo        *int64   `json:"assignedTo"`
	Contact           *struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	} `json:"contact"`
}

type message struct {
	ID        int64   `json:"id"`
	Direction string  `json:"direction"`
	From      string  `json:"from"`
	To        string  `json:"to"`
	Text      string  `json:"text"`
	Read      bool    `json:"read"`
	ReadBy    []int64 `json:"readBy"`
	SentBy    *int64  `json:"sentBy"`
	Delivery  *struct {
		Status string `json:"status"`
	} `json:"delivery"`
	GroupParticipants []string `json:"groupParticipants"`
}

type thread struct {
	Line              string    `json:"line"`
	Number            string    `json:"number"`
	GroupParticipants []string  `json:"groupParticipants"`
	Messages          []message `json:"messages"`
	MarkedRead        bool      `json:"markedRead"`
}

type state struct {
	Line       string `json:"line"`
	Number     string `json:"number"`
	Resolved   bool   `json:"resolved"`
	ResolvedBy *int64 `json:"resolvedBy"`
	ResolvedAt string `json:"resolvedAt"`
	AssignedTo *int64 `json:"assignedTo"`
}

type unreadCounts struct {
	Total int64 `json:"total"`
	Lines []struct {
		Line  string `json:"line"`
		Count int64  `json:"count"`
	} `json:"lines"`
}

func (f *inboxFixture) list(t *testing.T, cred, query string) []item {
	t.Helper()
	var out []item
	f.call(t, "GET", "/sms/conversations"+query, cred, "", 200, &out)
	return out
}

func numbers(items []item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Line + ":" + it.Number
	}
	return out
}

func TestInboxListAndUnread(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		a1 := f.receive(t, inboxMain, custA, "Hi, is my crown ready?")
		f.receive(t, inboxDesk, custB, "Can I move my appointment?")
		f.receive(t, inboxHidden, custC, "Invoice question")
		out := f.send(t, inboxMain, f.max.ID, "Yes, come by at 3.", custA)
		g := f.receive(t, inboxMain, custB, "Group hello", custB, custC, custD)

		// Newest first; Agnes does not see the hidden line.
		all := f.list(t, f.maxTok, "")
		if got, want := numbers(all), []string{inboxMain + ":" + custB, inboxMain + ":" + custA, inboxHidden + ":" + custC, inboxDesk + ":" + custB}; !slices.Equal(got, want) {
			t.Fatalf("Max's list = %v, want %v", got, want)
		}
		if got := numbers(f.list(t, f.agnesTok, "")); slices.Contains(got, inboxHidden+":"+custC) || len(got) != 3 {
			t.Errorf("Agnes's list = %v, want the three threads of her lines", got)
		}
		group, one := all[0], all[1]
		if !slices.Equal(group.GroupParticipants, []string{custB, custC, custD}) || group.LastMessageID != g || group.Direction != "in" || group.UnreadCount != 1 {
			t.Errorf("group item = %+v", group)
		}
		if one.GroupParticipants != nil || one.LastMessageID != out || one.Direction != "out" || one.LastMessage != "Yes, come by at 3." || !one.Unread || one.UnreadCount != 1 || one.AssignedTo != nil {
			t.Errorf("1:1 item = %+v", one)
		}
		// The API key: the team view.
		if k := f.list(t, f.key, ""); len(k) != 4 || k[1].UnreadCount != 1 {
			t.Errorf("key's list = %+v", k)
		}

		var u unreadCounts
		f.call(t, "GET", "/sms/unread", f.maxTok, "", 200, &u)
		if u.Total != 4 || len(u.Lines) != 3 {
			t.Errorf("Max's unread = %+v, want 4 over 3 lines", u)
		}
		// Max reads the 1:1 thread: his counts fall, Agnes's do not.
		var th thread
		f.call(t, "GET", "/sms/conversations/"+inboxMain+"/"+custA+"?markRead=true", f.maxTok, "", 200, &th)
		if !th.MarkedRead || len(th.Messages) != 2 || th.Messages[0].ID != out || th.Messages[1].ID != a1 || !th.Messages[1].Read {
			t.Errorf("thread = %+v", th)
		}
		f.call(t, "GET", "/sms/unread", f.maxTok, "", 200, &u)
		if u.Total != 3 {
			t.Errorf("Max's unread after reading = %+v, want 3", u)
		}
		f.call(t, "GET", "/sms/unread?lines="+inboxMain, f.agnesTok, "", 200, &u)
		if u.Total != 2 || len(u.Lines) != 1 {
			t.Errorf("Agnes's unread on main = %+v, want 2", u)
		}
		if got := numbers(f.list(t, f.maxTok, "?unread=true")); slices.Contains(got, inboxMain+":"+custA) || len(got) != 3 {
			t.Errorf("Max's unread list = %v", got)
		}
	})
}

func TestInboxQueryValidation(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		for _, q := range []string{"limit=0", "limit=-1", "limit=201", "limit=abc", "limit=", "offset=-1", "unread=yes", "unread=", "unread=1",
			"lines=", "lines=" + inboxMain + ",", "bogus=1", "limit=5&limit=6"} {
			msg := f.wantError(t, "GET", "/sms/conversations?"+q, f.key, "", 400, "invalid_request")
			name, _, _ := strings.Cut(q, "=")
			if !strings.Contains(msg, name) {
				t.Errorf("?%s: message %q does not name %s", q, msg, name)
			}
		}
		f.wantError(t, "GET", "/sms/unread?since="+url.QueryEscape("yesterday"), f.key, "", 400, "invalid_request")
	})
}

// A conversation path names a dialable number, as blocking one must: a path
// of /1, a zero-padded number or 60,000 digits is 400 and leaves no
// conversation behind. A thread a short code started stays addressable.
func TestInboxPathNumbers(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		line, err := f.st.LineByNumber(ctx, inboxMain)
		must(t, err)
		for _, n := range []string{"1", "0014155551001", "000000000014155551001", strings.Repeat("9", 60000), "99999999999999999"} {
			base := "/sms/conversations/" + inboxMain + "/" + n
			for _, op := range []struct{ method, path, body string }{
				{"GET", base, ""},
				{"POST", base + "/resolve", `{}`},
				{"POST", base + "/reopen", ""},
				{"POST", base + "/assign", `{"userId":null}`},
				{"POST", base + "/comments", `{"comment":"hi"}`},
				{"GET", base + "/comments", ""},
				{"DELETE", base, ""},
			} {
				msg := f.wantError(t, op.method, op.path, f.key, op.body, 400, "invalid_request")
				if !strings.Contains(msg, "dialable") || len(msg) > 300 {
					t.Errorf("%s %.60s: message %.300q, want a short one saying the number is not dialable", op.method, op.path, msg)
				}
			}
			_, _, err := f.st.Conversation(ctx, domain.ConversationKey{Line: line, Participants: []string{n}})
			if !domain.IsNotFound(err) {
				t.Errorf("number %.20s: a conversation was stored (err %v)", n, err)
			}
		}
		// The same refusal for a group participant.
		f.wantError(t, "POST", "/sms/conversations/"+inboxMain+"/"+custA+"/comments?groupParticipants=1", f.key, `{"comment":"hi"}`, 400, "invalid_request")

		// A short code's text starts a thread its people can work.
		f.receive(t, inboxMain, "22395", "Your code is 1234")
		var th thread
		f.call(t, "GET", "/sms/conversations/"+inboxMain+"/22395", f.key, "", 200, &th)
		if len(th.Messages) != 1 || th.Number != "22395" {
			t.Errorf("short code thread = %+v, want its one message", th)
		}
		f.call(t, "POST", "/sms/conversations/"+inboxMain+"/22395/resolve", f.key, `{}`, 200, nil)
	})
}

func TestInboxResolveReopenAssignComment(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		path := "/sms/conversations/" + inboxMain + "/" + custA
		var st state
		// No stored state: resolve creates it (200, never 404) and credits the token's owner.
		f.call(t, "POST", path+"/resolve", f.maxTok, "", 200, &st)
		if !st.Resolved || st.ResolvedBy == nil || *st.ResolvedBy != f.max.ID || st.ResolvedAt == "" || st.Line != inboxMain || st.Number != custA {
			t.Fatalf("first resolve = %+v", st)
		}
		first := st
		// Resolving again (by someone else) re-stamps nothing.
		f.call(t, "POST", path+"/resolve", f.key, fmt.Sprintf(`{"resolvedBy": %d}`, f.agnes.ID), 200, &st)
		if *st.ResolvedBy != f.max.ID || st.ResolvedAt != first.ResolvedAt {
			t.Errorf("second resolve = %+v, want the first's stamp %+v", st, first)
		}
		f.call(t, "POST", path+"/reopen", f.agnesTok, "", 200, &st)
		if st.Resolved || st.ResolvedBy != nil || st.ResolvedAt != "" {
			t.Errorf("reopen = %+v", st)
		}
		f.call(t, "POST", path+"/reopen", f.agnesTok, "{}", 200, &st) // idempotent
		f.call(t, "POST", "/sms/conversations/"+inboxMain+"/"+custD+"/reopen", f.key, "", 200, &st)
		if st.Resolved || st.Number != custD {
			t.Errorf("reopen of a pair with no state = %+v", st)
		}
		// An API key credits resolvedBy, or nobody.
		f.call(t, "POST", path+"/resolve", f.key, fmt.Sprintf(`{"resolvedBy": %d, "comment": "Called back, sorted"}`, f.agnes.ID), 200, &st)
		if st.ResolvedBy == nil || *st.ResolvedBy != f.agnes.ID {
			t.Errorf("key resolve with resolvedBy = %+v", st)
		}
		f.call(t, "POST", path+"/reopen", f.key, "", 200, nil)
		f.call(t, "POST", path+"/resolve", f.key, "{}", 200, &st)
		if !st.Resolved || st.ResolvedBy != nil {
			t.Errorf("key resolve naming nobody = %+v", st)
		}
		f.call(t, "POST", path+"/reopen", f.key, "", 200, nil)
		// An OAuth token always credits its owner, whatever the body says.
		f.call(t, "POST", path+"/resolve", f.agnesTok, fmt.Sprintf(`{"resolvedBy": %d}`, f.max.ID), 200, &st)
		if *st.ResolvedBy != f.agnes.ID {
			t.Errorf("token resolve = %+v, want Agnes credited", st)
		}
		f.call(t, "POST", path+"/reopen", f.key, "", 200, nil)
		for _, body := range []string{fmt.Sprintf(`{"resolvedBy": %d}`, f.users["Dave"].ID), `{"resolvedBy": 0}`, `{"resolvedBy": "x"}`, `{"comment": 5}`, `{"bogus": 1}`,
			`{"comment": "` + strings.Repeat("x", 2001) + `"}`} {
			f.wantError(t, "POST", path+"/resolve", f.key, body, 400, "invalid_request")
		}

		// Assign: a user, then nobody.
		f.call(t, "POST", path+"/assign", f.maxTok, fmt.Sprintf(`{"userId": %d}`, f.agnes.ID), 200, &st)
		if st.AssignedTo == nil || *st.AssignedTo != f.agnes.ID {
			t.Errorf("assign = %+v", st)
		}
		for _, body := range []string{`{}`, ``, `{"userId": "x"}`, `{"userId": 1.5}`, fmt.Sprintf(`{"userId": %d}`, f.users["Dave"].ID), `{"userId": 99999}`, `{"user": 1}`} {
			f.wantError(t, "POST", path+"/assign", f.maxTok, body, 400, "invalid_request")
		}

		// Comments: 201 with the state; listed with author and time.
		for _, body := range []string{`{}`, `{"comment": ""}`, `{"comment": "   "}`, `{"comment": "` + strings.Repeat("é", 1001) + `"}`, ``} {
			f.wantError(t, "POST", path+"/comments", f.maxTok, body, 400, "invalid_request")
		}
		f.call(t, "POST", path+"/comments", f.agnesTok, `{"comment": "Patient prefers mornings"}`, 201, &st)
		if st.AssignedTo == nil || *st.AssignedTo != f.agnes.ID || st.Resolved {
			t.Errorf("comment state = %+v", st)
		}
		var comments []struct {
			ID        int64  `json:"id"`
			Comment   string `json:"comment"`
			AuthorID  int64  `json:"authorId"`
			CreatedAt string `json:"createdAt"`
		}
		f.call(t, "GET", path+"/comments", f.key, "", 200, &comments)
		if len(comments) != 2 || comments[0].Comment != "Called back, sorted" || comments[0].AuthorID != f.agnes.ID ||
			comments[1].Comment != "Patient prefers mornings" || comments[1].AuthorID != f.agnes.ID || comments[1].CreatedAt == "" {
			t.Errorf("comments = %+v", comments)
		}

		// A text reopens a resolved thread and it leads the list again.
		f.call(t, "POST", path+"/resolve", f.maxTok, "", 200, nil)
		f.receive(t, inboxMain, custB, "other thread")
		f.receive(t, inboxMain, custA, "One more question")
		list := f.list(t, f.maxTok, "")
		if len(list) != 2 || list[0].Number != custA || list[0].Resolved || list[0].AssignedTo == nil {
			t.Errorf("list after the text = %+v", list)
		}
		f.call(t, "POST", path+"/unassign", f.maxTok, "", 404, nil)
		f.call(t, "POST", path+"/assign", f.maxTok, `{"userId": null}`, 200, &st)
		if st.AssignedTo != nil {
			t.Errorf("unassign = %+v", st)
		}

		// Filters, AND-combined, for each kind of caller.
		f.receive(t, inboxDesk, custC, "desk thread")
		f.call(t, "POST", "/sms/conversations/"+inboxDesk+"/"+custC+"/assign", f.maxTok, fmt.Sprintf(`{"userId": %d}`, f.agnes.ID), 200, nil)
		f.call(t, "POST", "/sms/conversations/"+inboxMain+"/"+custB+"/resolve", f.maxTok, "", 200, nil)
		for _, c := range []struct {
			cred, query string
			want        []string
		}{
			{f.maxTok, "", []string{inboxDesk + ":" + custC, inboxMain + ":" + custA, inboxMain + ":" + custB}},
			{f.maxTok, "?unresolved=true", []string{inboxDesk + ":" + custC, inboxMain + ":" + custA}},
			{f.maxTok, "?unassigned=true", []string{inboxMain + ":" + custA, inboxMain + ":" + custB}},
			{f.maxTok, "?unassigned=true&unresolved=true", []string{inboxMain + ":" + custA}},
			{f.maxTok, "?assignedToMe=true", []string{}},
			{f.agnesTok, "?assignedToMe=true", []string{inboxDesk + ":" + custC}},
			{f.agnesTok, "?assignedToMe=true&unresolved=false", []string{inboxDesk + ":" + custC}},
			{f.agnesTok, "?assignedToMe=true&lines=" + inboxMain, []string{}},
			{f.maxTok, "?lines=" + inboxDesk + "," + inboxMain + "&limit=1", []string{inboxDesk + ":" + custC}},
			{f.maxTok, "?lines=" + inboxMain + "&limit=1&offset=1", []string{inboxMain + ":" + custB}},
			{f.key, "?unread=true&unassigned=true", []string{inboxMain + ":" + custA, inboxMain + ":" + custB}},
			{f.maxTok, "?unread=true&unassigned=true&unresolved=true", []string{inboxMain + ":" + custA}},
			{f.maxTok, "?resolved=true", []string{inboxMain + ":" + custB}},
			{f.maxTok, "?resolved=false", []string{inboxDesk + ":" + custC, inboxMain + ":" + custA, inboxMain + ":" + custB}},
			{f.maxTok, "?resolved=true&lines=" + inboxDesk, []string{}},
			{f.maxTok, "?resolved=true&unread=true", []string{inboxMain + ":" + custB}},
			{f.key, "?resolved=true&unassigned=true", []string{inboxMain + ":" + custB}},
			{f.agnesTok, "?resolved=true&assignedToMe=true", []string{}},
		} {
			if got := numbers(f.list(t, c.cred, c.query)); !slices.Equal(got, c.want) {
				t.Errorf("list%s = %v, want %v", c.query, got, c.want)
			}
		}
		f.wantError(t, "GET", "/sms/conversations?assignedToMe=true", f.key, "", 400, "invalid_request")
		if msg := f.wantError(t, "GET", "/sms/conversations?resolved=true&unresolved=true", f.key, "", 400, "invalid_request"); !strings.Contains(msg, "resolved and unresolved") {
			t.Errorf("resolved and unresolved together: %q", msg)
		}

		// A thread read carries the conversation's state.
		var thread struct {
			State state `json:"state"`
		}
		f.call(t, "GET", "/sms/conversations/"+inboxDesk+"/"+custC, f.agnesTok, "", 200, &thread)
		if thread.State.Resolved || thread.State.AssignedTo == nil || *thread.State.AssignedTo != f.agnes.ID || thread.State.Line != inboxDesk || thread.State.Number != custC {
			t.Errorf("thread state of the assigned desk thread = %+v", thread.State)
		}
		f.call(t, "GET", "/sms/conversations/"+inboxMain+"/"+custB+"?limit=1", f.key, "", 200, &thread)
		if !thread.State.Resolved || thread.State.ResolvedBy == nil || *thread.State.ResolvedBy != f.max.ID || thread.State.ResolvedAt == "" || thread.State.AssignedTo != nil {
			t.Errorf("thread state of the resolved thread = %+v", thread.State)
		}
		f.wantError(t, "GET", "/sms/conversations?lines="+inboxHidden, f.agnesTok, "", 404, "not_found")
		f.wantError(t, "GET", "/sms/conversations?lines="+inboxBeta, f.key, "", 404, "not_found")
	})
}

func TestInboxReadState(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		path := "/sms/conversations/" + inboxMain + "/" + custA
		m1 := f.receive(t, inboxMain, custA, "one")
		m2 := f.receive(t, inboxMain, custA, "two")
		o := f.send(t, inboxMain, f.max.ID, "reply", custA)
		m3 := f.receive(t, inboxMain, custA, "three")
		other := f.receive(t, inboxMain, custB, "elsewhere")

		unread := func(cred string) int64 {
			t.Helper()
			for _, it := range f.list(t, cred, "?lines="+inboxMain) {
				if it.Number == custA {
					return it.UnreadCount
				}
			}
			t.Fatal("thread missing from the list")
			return 0
		}
		if a, m := unread(f.agnesTok), unread(f.maxTok); a != 3 || m != 3 {
			t.Fatalf("unread before = Agnes %d, Max %d; want 3, 3", a, m)
		}
		// Reading without markRead marks nothing.
		var th thread
		f.call(t, "GET", path, f.agnesTok, "", 200, &th)
		if th.MarkedRead || th.Messages[0].Read || unread(f.agnesTok) != 3 {
			t.Errorf("plain read changed the state: %+v", th)
		}
		// Agnes marks two messages read: only her state changes.
		f.call(t, "POST", path+"/read", f.agnesTok, fmt.Sprintf(`{"messageIds": [%d, %d, %d]}`, m1, m3, m1), 204, nil)
		if a, m := unread(f.agnesTok), unread(f.maxTok); a != 1 || m != 3 {
			t.Errorf("after marks: Agnes %d, Max %d; want 1, 3", a, m)
		}
		f.call(t, "GET", path, f.agnesTok, "", 200, &th)
		read := map[int64]bool{}
		for _, m := range th.Messages {
			read[m.ID] = m.Read
		}
		if !read[m1] || read[m2] || !read[m3] || read[o] {
			t.Errorf("Agnes's read flags = %v", read)
		}
		f.call(t, "GET", path, f.maxTok, "", 200, &th)
		for _, m := range th.Messages {
			wantBy := []int64{}
			if m.ID == m1 || m.ID == m3 {
				wantBy = []int64{f.agnes.ID}
			}
			if m.ID == o {
				wantBy = []int64{f.max.ID}
			}
			if !slices.Equal(m.ReadBy, wantBy) || m.Read != (m.ID == o) {
				t.Errorf("message %d: read %v readBy %v, want readBy %v", m.ID, m.Read, m.ReadBy, wantBy)
			}
		}
		// Unread again, then the whole thread read with markRead.
		f.call(t, "POST", path+"/read", f.agnesTok, fmt.Sprintf(`{"messageIds": [%d], "read": false}`, m3), 204, nil)
		if a := unread(f.agnesTok); a != 2 {
			t.Errorf("after unread mark: %d, want 2", a)
		}
		f.call(t, "GET", path+"?markRead=true&limit=1", f.agnesTok, "", 200, &th)
		if !th.MarkedRead || len(th.Messages) != 1 || !th.Messages[0].Read || unread(f.agnesTok) != 0 {
			t.Errorf("markRead: %+v, unread %d", th, unread(f.agnesTok))
		}
		// And one message unread again against the watermark.
		f.call(t, "POST", path+"/read", f.agnesTok, fmt.Sprintf(`{"messageIds": [%d], "read": false}`, m1), 204, nil)
		if a := unread(f.agnesTok); a != 1 {
			t.Errorf("after unread below the watermark: %d, want 1", a)
		}
		if got := numbers(f.list(t, f.agnesTok, "?unread=true")); !slices.Equal(got, []string{inboxMain + ":" + custB, inboxMain + ":" + custA}) {
			t.Errorf("Agnes's unread list = %v", got)
		}

		// Bad requests.
		ids := make([]string, 51)
		for i := range ids {
			ids[i] = fmt.Sprint(m1)
		}
		for _, body := range []string{`{}`, `{"messageIds": []}`, `{"messageIds": [` + strings.Join(ids, ",") + `]}`, `{"messageIds": [null]}`,
			`{"messageIds": ["1"]}`, `{"messageIds": [1], "read": "yes"}`, ``} {
			f.wantError(t, "POST", path+"/read", f.agnesTok, body, 400, "invalid_request")
		}
		f.wantError(t, "POST", path+"/read", f.agnesTok, fmt.Sprintf(`{"messageIds": [%d, %d]}`, m2, other), 404, "not_found")
		if a := unread(f.agnesTok); a != 1 {
			t.Errorf("a refused request changed the state: %d, want 1", a)
		}
		f.wantError(t, "POST", path+"/read", f.key, fmt.Sprintf(`{"messageIds": [%d]}`, m2), 400, "invalid_request")

		// The line: since reads only the newer texts; the API key gets 400.
		var u unreadCounts
		f.call(t, "GET", "/sms/unread?lines="+inboxMain, f.maxTok, "", 200, &u)
		if u.Total != 4 {
			t.Errorf("Max's unread = %+v, want 4", u)
		}
		f.wantError(t, "POST", "/sms/lines/"+inboxMain+"/read", f.key, "{}", 400, "invalid_request")
		f.wantError(t, "POST", "/sms/lines/"+inboxMain+"/read", f.maxTok, `{"since": "yesterday"}`, 400, "invalid_request")
		f.wantError(t, "POST", "/sms/lines/"+inboxHidden+"/read", f.agnesTok, "{}", 404, "not_found")
		f.call(t, "POST", "/sms/lines/"+inboxMain+"/read", f.maxTok, `{"since": "2000-01-01T00:00:00Z"}`, 204, nil)
		f.call(t, "GET", "/sms/unread?lines="+inboxMain, f.maxTok, "", 200, &u)
		if u.Total != 0 {
			t.Errorf("Max's unread after line read since 2000 = %+v, want 0", u)
		}
		f.receive(t, inboxMain, custA, "four")
		f.call(t, "POST", "/sms/lines/"+inboxMain+"/read", f.maxTok, `{"since": "2999-01-01T00:00:00Z"}`, 204, nil)
		f.call(t, "GET", "/sms/unread?lines="+inboxMain, f.maxTok, "", 200, &u)
		if u.Total != 1 {
			t.Errorf("Max's unread after line read since the future = %+v, want 1", u)
		}
		f.call(t, "POST", "/sms/lines/"+inboxMain+"/read", f.maxTok, "", 204, nil)
		f.call(t, "POST", "/sms/lines/"+inboxMain+"/read", f.maxTok, "{}", 204, nil)
		f.call(t, "GET", "/sms/unread", f.maxTok, "", 200, &u)
		if u.Total != 0 || len(u.Lines) != 3 {
			t.Errorf("Max's unread after line read = %+v", u)
		}
		// The API key's team view: read once anyone read the thread.
		f.call(t, "GET", "/sms/unread?lines="+inboxMain+","+inboxDesk, f.key, "", 200, &u)
		if u.Total != 0 || len(u.Lines) != 2 {
			t.Errorf("key's unread = %+v, want 0 on two lines", u)
		}
		f.receive(t, inboxMain, custC, "new")
		f.call(t, "GET", "/sms/unread?since=2000-01-01T00:00:00Z", f.key, "", 200, &u)
		if u.Total != 1 {
			t.Errorf("key's unread since = %+v, want 1", u)
		}
		f.call(t, "GET", "/sms/unread?since="+url.QueryEscape("2999-01-01T00:00:00+01:00"), f.agnesTok, "", 200, &u)
		if u.Total != 0 {
			t.Errorf("Agnes's unread since the future = %+v, want 0", u)
		}
		f.call(t, "GET", "/sms/unread?since=2000-01-01T00:00:00Z", f.agnesTok, "", 200, &u)
		if u.Total != 4 { // custA: m1 marked unread, "four"; custB: 1; custC: 1
			t.Errorf("Agnes's unread since 2000 = %+v, want 4", u)
		}
		f.wantError(t, "GET", "/sms/unread?lines="+inboxHidden, f.agnesTok, "", 404, "not_found")
	})
}

func TestInboxThreadsAndPermissions(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		var ids []int64
		for i := range 7 {
			ids = append(ids, f.receive(t, inboxDesk, custA, fmt.Sprint("text ", i)))
		}
		g := f.receive(t, inboxDesk, custB, "group", custB, custC)
		path := "/sms/conversations/" + inboxDesk + "/" + custA
		var th thread
		f.call(t, "GET", path+"?limit=3&offset=3", f.agnesTok, "", 200, &th)
		if len(th.Messages) != 3 || th.Messages[0].ID != ids[3] || th.Messages[2].ID != ids[1] {
			t.Errorf("page = %+v", th.Messages)
		}
		f.call(t, "GET", path+"/messages/"+fmt.Sprint(ids[1])+"?limit=3", f.agnesTok, "", 200, &th)
		if len(th.Messages) != 3 || th.Messages[0].ID != ids[3] || th.MarkedRead {
			t.Errorf("page around %d = %+v", ids[1], th.Messages)
		}
		f.call(t, "GET", path+"/messages/"+fmt.Sprint(ids[0]), f.agnesTok, "", 200, &th)
		if len(th.Messages) != 7 {
			t.Errorf("default page around the oldest = %d messages", len(th.Messages))
		}
		f.wantError(t, "GET", path+"/messages/"+fmt.Sprint(g), f.agnesTok, "", 404, "not_found")
		// A malformed message id names no message (docs/decisions.md, "Path ids").
		f.wantError(t, "GET", path+"/messages/x", f.agnesTok, "", 404, "not_found")
		f.wantError(t, "GET", path+"/messages/"+fmt.Sprint(ids[0])+"?limit=0", f.agnesTok, "", 400, "invalid_request")
		f.wantError(t, "GET", path+"?offset=x", f.agnesTok, "", 400, "invalid_request")
		f.wantError(t, "GET", path+"?markRead=maybe", f.agnesTok, "", 400, "invalid_request")

		// Group threads are addressed with groupParticipants.
		f.call(t, "GET", "/sms/conversations/"+inboxDesk+"/"+custC+"?groupParticipants="+custB, f.agnesTok, "", 200, &th)
		if len(th.Messages) != 1 || th.Messages[0].ID != g || !slices.Equal(th.GroupParticipants, []string{custB, custC}) ||
			!slices.Equal(th.Messages[0].GroupParticipants, []string{custB, custC}) || th.Number != custB {
			t.Errorf("group thread = %+v", th)
		}
		f.wantError(t, "GET", "/sms/conversations/"+inboxDesk+"/"+custB, f.agnesTok, "", 404, "not_found")
		f.wantError(t, "GET", "/sms/conversations/"+inboxDesk+"/"+custB+"?groupParticipants=abc", f.agnesTok, "", 400, "invalid_request")

		// Formatting in path numbers is normalized; a 10-digit number gets its 1.
		f.call(t, "GET", "/sms/conversations/"+inboxDesk[1:]+"/"+custA[1:]+"?limit=1", f.agnesTok, "", 200, &th)
		if th.Line != inboxDesk || th.Number != custA {
			t.Errorf("normalized address = %s/%s", th.Line, th.Number)
		}

		// Another account's line, a line the role does not grant: not_found
		// everywhere, never a hint that it exists.
		hidden := "/sms/conversations/" + inboxHidden + "/" + custA
		f.receive(t, inboxHidden, custA, "private")
		for _, c := range []struct{ method, path, cred, body string }{
			{"GET", hidden, f.agnesTok, ""},
			{"POST", hidden + "/resolve", f.agnesTok, ""},
			{"POST", hidden + "/reopen", f.agnesTok, ""},
			{"POST", hidden + "/assign", f.agnesTok, `{"userId": null}`},
			{"POST", hidden + "/comments", f.agnesTok, `{"comment": "x"}`},
			{"GET", hidden + "/comments", f.agnesTok, ""},
			{"DELETE", hidden, f.agnesTok, ""},
			{"GET", path, f.betaKey, ""},
			{"POST", path + "/resolve", f.betaKey, ""},
			{"GET", "/sms/conversations/" + inboxBeta + "/" + custA, f.key, ""},
			{"POST", "/sms/conversations/" + inboxBeta + "/" + custA + "/resolve", f.key, ""},
			{"GET", "/sms/conversations/19995550100/" + custA, f.key, ""},
		} {
			f.wantError(t, c.method, c.path, c.cred, c.body, 404, "not_found")
		}
		f.call(t, "GET", hidden, f.maxTok, "", 200, nil)

		// Scopes: each endpoint's own, for keys and tokens alike.
		_, readOnly := storetest.Key(t, f.st, f.acme.ID, auth.MessagesRead)
		_, smsWrite := storetest.Key(t, f.st, f.acme.ID, auth.SMSWrite)
		tokRead, err := userAccessToken(ctx, f.st, f.agnes.ID, auth.MessagesRead)
		must(t, err)
		for _, c := range []struct{ method, path, cred, scope string }{
			{"POST", path + "/resolve", readOnly, "sms:write"},
			{"POST", path + "/assign", readOnly, "sms:write"},
			{"POST", path + "/comments", tokRead, "sms:write"},
			{"POST", path + "/read", readOnly, "messages:write"},
			{"DELETE", path, tokRead, "messages:write"},
			{"DELETE", path + "/messages/1", readOnly, "messages:write"},
			{"POST", "/sms/lines/" + inboxDesk + "/read", tokRead, "messages:write"},
			{"GET", "/sms/conversations", smsWrite, "messages:read"},
			{"GET", path, smsWrite, "messages:read"},
			{"GET", "/sms/unread", smsWrite, "messages:read"},
			{"GET", path + "/comments", smsWrite, "messages:read"},
		} {
			status, _, b := f.do(t, c.method, "/api/public/v1"+c.path, c.cred, "")
			if e := decodeInto[errorEnvelope](t, b); status != 403 || e.Error.Type != "insufficient_scope" || e.Error.Scope != c.scope {
				t.Errorf("%s %s: %d %s, want 403 insufficient_scope %s", c.method, c.path, status, b, c.scope)
			}
		}
		f.call(t, "GET", path+"?limit=1", readOnly, "", 200, nil)
		f.call(t, "POST", path+"/resolve", smsWrite, "", 200, nil)
		// A role without phone numbers: permission_denied.
		nobody := storetest.User(t, f.st, f.acme.ID, nil)
		noRole, err := userAccessToken(ctx, f.st, nobody.ID, auth.AllScopes...)
		must(t, err)
		for _, p := range []string{"/sms/conversations", "/sms/unread", path} {
			f.wantError(t, "GET", p, noRole, "", 403, "permission_denied")
		}
	})
}

func TestInboxDelete(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		path := "/sms/conversations/" + inboxMain + "/" + custA
		m1 := f.receive(t, inboxMain, custA, "first")
		o := f.send(t, inboxMain, f.max.ID, "charged reply", custA)
		m2 := f.receive(t, inboxMain, custA, "second")
		total, charges, err := f.st.LedgerTotal(ctx, f.acme.ID)
		must(t, err)

		// The account restricts deleting: 403 whatever the scope.
		restricted := f.acme
		restricted.RestrictSMSDelete = true
		must(t, f.st.UpdateAccountSettings(ctx, restricted))
		f.wantError(t, "DELETE", path, f.key, "", 403, "permission_denied")
		f.wantError(t, "DELETE", path+"/messages/"+fmt.Sprint(m1), f.maxTok, "", 403, "permission_denied")
		must(t, f.st.UpdateAccountSettings(ctx, f.acme))

		// Deleting the newest message: the one before leads, counts drop.
		f.call(t, "DELETE", path+"/messages/"+fmt.Sprint(m2), f.maxTok, "", 204, nil)
		list := f.list(t, f.agnesTok, "")
		if len(list) != 1 || list[0].LastMessageID != o || list[0].UnreadCount != 1 {
			t.Errorf("after deleting the newest: %+v", list)
		}
		f.wantError(t, "DELETE", path+"/messages/"+fmt.Sprint(m2), f.maxTok, "", 404, "not_found")
		f.wantError(t, "GET", path+"/messages/"+fmt.Sprint(m2), f.maxTok, "", 404, "not_found")
		var u unreadCounts
		f.call(t, "GET", "/sms/unread", f.key, "", 200, &u)
		if u.Total != 1 {
			t.Errorf("team unread after deleting = %+v, want 1", u)
		}

		// Deleting the conversation: gone, charges kept; a new text starts afresh.
		f.call(t, "POST", path+"/assign", f.maxTok, fmt.Sprintf(`{"userId": %d}`, f.max.ID), 200, nil)
		f.call(t, "DELETE", path, f.agnesTok, "", 204, nil)
		f.wantError(t, "GET", path, f.maxTok, "", 404, "not_found")
		f.wantError(t, "DELETE", path, f.maxTok, "", 404, "not_found")
		if l := f.list(t, f.maxTok, ""); len(l) != 0 {
			t.Errorf("list after deleting = %+v", l)
		}
		if total2, charges2, _ := f.st.LedgerTotal(ctx, f.acme.ID); total2 != total || charges2 != charges || charges == 0 {
			t.Errorf("ledger after deleting = %d in %d charges, want %d in %d", total2, charges2, total, charges)
		}
		if m, _ := f.st.Message(ctx, f.acme.ID, o); m.Body != "" {
			t.Errorf("deleted message keeps its text %q", m.Body)
		}
		f.call(t, "GET", "/sms/unread", f.agnesTok, "", 200, &u)
		if u.Total != 0 {
			t.Errorf("unread after deleting = %+v", u)
		}
		fresh := f.receive(t, inboxMain, custA, "hello again")
		var th thread
		f.call(t, "GET", path, f.maxTok, "", 200, &th)
		if len(th.Messages) != 1 || th.Messages[0].ID != fresh {
			t.Errorf("fresh thread = %+v", th.Messages)
		}
		list = f.list(t, f.maxTok, "")
		if len(list) != 1 || list[0].UnreadCount != 1 || list[0].AssignedTo != nil || list[0].Resolved {
			t.Errorf("fresh thread in the list = %+v", list)
		}
	})
}
