package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// The COPY path gives the database the store gives when it writes the same
// plan in order (-workers 1): the same answers to the reads the HTTP API
// makes, ids and times included, and the same rows in every table, apart
// from what is random by design (the API key's secret, the password's
// salt) and the writing transactions' ids (events.xid, and the fan-out
// cursor that names one).
func TestCopyGivesTheStoresDatabase(t *testing.T) {
	if os.Getenv(storetest.PostgresEnv) == "" {
		t.Skipf("%s is unset: the COPY path is PostgreSQL's, and this test compares it with the store's on a PostgreSQL server", storetest.PostgresEnv)
	}
	ctx := context.Background()
	o := options{users: 5, lines: 3, conversations: 300, messages: 3000, big: 300, workers: 1, readShare: 0.9, resolved: 0.5, assigned: 0.3,
		days: 90, end: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), seed: 7, account: "Inbox Bench Co", usernames: "agent", numbers: "1415550"}
	viaStore, viaCopy := o, o
	viaStore.db, viaCopy.db, viaCopy.copy = storetest.DSN(t, store.Postgres), storetest.DSN(t, store.Postgres), true
	a, err := run(ctx, viaStore)
	if err != nil {
		t.Fatalf("store path: %v", err)
	}
	b, err := run(ctx, viaCopy)
	if err != nil {
		t.Fatalf("COPY path: %v", err)
	}
	a.Key, a.Seconds, a.Mode, b.Key, b.Seconds, b.Mode = "", 0, "", "", 0, ""
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("results differ:\nstore %+v\ncopy  %+v", a, b)
	}
	answers := [2]map[string]any{readAll(t, o, viaStore.db, a), readAll(t, o, viaCopy.db, b)}
	nonEmpty(t, answers[0])
	for _, name := range sortedKeys(answers[0]) {
		if x, y := answers[0][name], answers[1][name]; !reflect.DeepEqual(x, y) {
			t.Errorf("%s differs:\nstore %s\ncopy  %s", name, short(x), short(y))
		}
	}
	tables := [2]map[string][]string{dumpTables(t, viaStore.db), dumpTables(t, viaCopy.db)}
	for _, name := range sortedKeys(tables[0]) {
		if x, y := tables[0][name], tables[1][name]; !reflect.DeepEqual(x, y) {
			t.Errorf("table %s differs: %d rows by the store, %d by COPY; first difference:\n%s", name, len(x), len(y), firstDiff(x, y, "store", "COPY"))
		}
	}
	if len(tables[0]) != len(tables[1]) {
		t.Errorf("%d tables by the store, %d by COPY", len(tables[0]), len(tables[1]))
	}
	rows := 0
	for _, r := range tables[0] {
		rows += len(r)
	}
	t.Logf("compared %d reads and %d tables (%d rows)", len(answers[0]), len(tables[0]), rows)
}

// nonEmpty fails the test when a read that should find something found
// nothing: the same empty answer both ways would prove nothing.
func nonEmpty(t *testing.T, answers map[string]any) {
	t.Helper()
	for name, v := range answers {
		if r := reflect.ValueOf(v); (r.Kind() == reflect.Slice || r.Kind() == reflect.Map) && r.Len() == 0 {
			t.Errorf("%s: nothing found; the comparison would prove nothing", name)
		}
	}
}

// readAll answers, from the database at dsn, the reads the HTTP API makes
// of an inbox, by name: as a user and as an API key (the team's view).
func readAll(t *testing.T, o options, dsn string, res result) map[string]any {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	lines, err := st.Lines(ctx, res.AccountID, true)
	if err != nil {
		t.Fatal(err)
	}
	acct, user := res.AccountID, res.UserIDs[0]
	middle := o.end.Add(-time.Duration(o.days) * 12 * time.Hour)
	if err := st.CheckUnreadTotals(ctx); err != nil {
		t.Errorf("%s: %v", dsn, err)
	}
	out := map[string]any{"lines": lines}
	add := func(name string, v any, err error) {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = v
	}
	list := func(name string, f store.ConversationFilter) {
		f.AccountID, f.Limit = acct, 50
		v, err := st.ListConversations(ctx, f)
		add(name, v, err)
	}
	list("first page", store.ConversationFilter{UserID: user})
	list("first page, team", store.ConversationFilter{})
	list("unread+unassigned", store.ConversationFilter{UserID: user, Unread: true, Unassigned: true})
	list("unread, team", store.ConversationFilter{Unread: true})
	list("unresolved, page 3", store.ConversationFilter{UserID: user, Unresolved: true, Offset: 100})
	list("resolved", store.ConversationFilter{UserID: user, Resolved: true})
	list("assigned to user 2", store.ConversationFilter{UserID: user, AssignedTo: res.UserIDs[1]})
	list("line 2, offset 40", store.ConversationFilter{UserID: user, LineIDs: []int64{lines[1].ID}, Offset: 40})
	for _, c := range []struct {
		name  string
		user  int64
		since time.Time
	}{{"unread counts", user, time.Time{}}, {"unread counts, team", 0, time.Time{}}, {"unread counts since", user, middle}, {"unread counts since, team", 0, middle}} {
		v, err := st.UnreadCounts(ctx, acct, c.user, c.since)
		add(c.name, v, err)
	}
	for _, q := range []store.MessageSearch{
		{Terms: []store.SearchTerm{{Word: "invoice"}}},
		{Terms: []store.SearchTerm{{Word: "appoint", Prefix: true}}, Direction: "in", Unresolved: true},
		{Terms: []store.SearchTerm{{Word: "see"}, {Word: "then"}}, From: middle},
	} {
		q.AccountID, q.Limit = acct, 20
		v, err := st.SearchMessages(ctx, q)
		add(fmt.Sprintf("search %+v", q.Terms), v, err)
	}
	v, err := st.SearchConversations(ctx, store.NumberSearch{AccountID: acct, UserID: user, Digits: "0001", Limit: 20})
	add("number search", v, err)
	for _, i := range []int{0, 1, 3, 6} { // the big and small threads, and two others
		c, visible, err := st.Conversation(ctx, domain.ConversationKey{Line: lines[lineOf(o, i)], Participants: []string{customer(i)}})
		add(fmt.Sprint("conversation ", i), fmt.Sprint(c, visible), err)
		page, err := st.ThreadPage(ctx, c, user, 50, 0)
		add(fmt.Sprint("thread ", i), page, err)
		page, err = st.ThreadPage(ctx, c, 0, 50, 5)
		add(fmt.Sprint("thread ", i, ", team, offset 5"), page, err)
		read, err := st.ThreadIsRead(ctx, c.ID, user)
		add(fmt.Sprint("thread ", i, " is read"), read, err)
		history, err := st.ConversationHistory(ctx, c.ID, 0, 20)
		add(fmt.Sprint("history ", i), history, err)
	}
	events, err := st.Events(ctx, acct, 0, 10_000)
	add("events", events, err)
	ledger, err := st.Ledger(ctx, acct, 100)
	add("ledger", ledger, err)
	total, n, err := st.LedgerTotal(ctx, acct)
	add("ledger total", [2]int64{total, int64(n)}, err)
	return out
}

// dumpTables reads every table of the database at dsn, each row as text,
// sorted, leaving out the columns that differ by design, and (as table
// "sequences") where every sequence is: the ids the next writes take.
func dumpTables(t *testing.T, dsn string) map[string][]string {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	skip := map[string]bool{"api_keys.hash": true, "api_keys.prefix": true, "users.password_hash": true,
		"events.xid": true, "event_fanout.xid": true, "schema_migrations.applied_at": true}
	rows, err := db.Query(`SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name IN (SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE')
		ORDER BY table_name, ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	cols := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			t.Fatal(err)
		}
		if !skip[table+"."+col] {
			cols[table] = append(cols[table], `"`+col+`"`)
		}
	}
	rows.Close()
	queries := map[string]string{"sequences": `SELECT sequencename || ' ' || COALESCE(last_value, 0) FROM pg_sequences WHERE schemaname = current_schema() ORDER BY 1`}
	for table, c := range cols {
		queries[table] = `SELECT ROW(` + strings.Join(c, ", ") + `)::text FROM "` + table + `" ORDER BY 1`
	}
	out := map[string][]string{}
	for table, q := range queries {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		out[table] = []string{}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out[table] = append(out[table], s)
		}
		rows.Close()
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// firstDiff shows the first row where x (written by a) and y (by b) differ.
func firstDiff(x, y []string, a, b string) string {
	for i := range min(len(x), len(y)) {
		if x[i] != y[i] {
			return a + ": " + x[i] + "\n" + b + ": " + y[i]
		}
	}
	return "(one is a prefix of the other)"
}

// short is v as JSON, cut to a screenful.
func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 2000 {
		b = append(b[:2000], "…"...)
	}
	return string(b)
}

// The store path writes the plan whatever its writers' number: concurrent
// writers (the SQLite default) give every thread the messages and the
// state that one writer in the plan's order gives, only their ids and
// times differ. Runs on SQLite, without a server.
func TestStorePathsWriteThePlan(t *testing.T) {
	ctx := context.Background()
	o := options{users: 4, lines: 3, conversations: 120, messages: 1200, big: 200, readShare: 0.9, resolved: 0.5, assigned: 0.3,
		days: 30, end: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC), seed: 11, account: "Inbox Bench Co", usernames: "agent", numbers: "1415550"}
	var threads [2][]string
	for i, workers := range []int{1, 8} {
		o.workers, o.db = workers, storetest.DSN(t, store.SQLite)
		if _, err := run(ctx, o); err != nil {
			t.Fatalf("%d writers: %v", workers, err)
		}
		threads[i] = dumpThreads(t, o.db)
	}
	if !reflect.DeepEqual(threads[0], threads[1]) {
		t.Fatalf("one writer and eight wrote different threads; first difference:\n%s", firstDiff(threads[0], threads[1], "one writer", "eight"))
	}
	if len(threads[0]) != o.conversations+o.messages {
		t.Fatalf("%d rows, want a conversation's and a message's each: %d", len(threads[0]), o.conversations+o.messages)
	}
}

// dumpThreads reads each conversation's state and messages, by line and
// number and in the order written, without ids or times.
func dumpThreads(t *testing.T, dsn string) []string {
	t.Helper()
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CheckUnreadTotals(context.Background()); err != nil {
		t.Error(err)
	}
	db, err := sql.Open("sqlite", strings.TrimPrefix(dsn, "sqlite://"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var out []string
	for _, q := range []string{
		`SELECT l.number || ' ' || c.participants || ' conversation ' || c.in_count || ' ' || c.team_unread || ' ' ||
			(c.resolved_at IS NOT NULL) || ' ' || COALESCE(c.resolved_by, 0) || ' ' || COALESCE(c.assigned_to, 0) || ' ' ||
			(SELECT COUNT(*) FROM inbox_reads r WHERE r.conversation_id = c.id AND r.unread = 0) || ' ' ||
			(SELECT COUNT(*) FROM conversation_activity a WHERE a.conversation_id = c.id)
		FROM conversations c JOIN lines l ON l.id = c.line_id ORDER BY 1`,
		`SELECT l.number || ' ' || c.participants || ' message ' || m.direction || ' ' || m.body || ' ' || COALESCE(m.sent_by, 0) || ' ' ||
			m.status || ' ' || COALESCE(m.delivery_status, '')
		FROM messages m JOIN conversations c ON c.id = m.conversation_id JOIN lines l ON l.id = c.line_id
		ORDER BY l.number, c.participants, m.id`,
	} {
		rows, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		rows.Close()
	}
	return out
}
