package httpapi_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
)

// searchAnswer is GET /search's whole answer (data and next).
type searchAnswer struct {
	Data struct {
		Contacts *[]struct {
			Contact struct{ ID int64 } `json:"contact"`
		} `json:"contacts"`
		Conversations *[]struct {
			Conversation item `json:"conversation"`
			Match        struct {
				Number     string `json:"number"`
				Start, End int
			} `json:"match"`
		} `json:"conversations"`
		Messages *[]searchHit `json:"messages"`
	} `json:"data"`
	Next map[string]string `json:"next"`
}

type searchHit struct {
	ID        int64  `json:"id"`
	Direction string `json:"direction"`
	SentAt    string `json:"sentAt"`
	Snippet   struct {
		Text    string `json:"text"`
		Matches []struct {
			Start, End int
		} `json:"matches"`
	} `json:"snippet"`
	Conversation state `json:"conversation"`
	Contact      *struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	} `json:"contact"`
}

// search runs GET /search with params (q and the rest) as cred and returns
// the answer.
func (f *inboxFixture) search(t *testing.T, cred string, params url.Values) searchAnswer {
	t.Helper()
	b := f.call(t, "GET", "/search?"+params.Encode(), cred, "", 200, nil)
	var a searchAnswer
	must(t, json.Unmarshal(b, &a))
	return a
}

// messageIDs searches messages for q (and params) as cred.
func (f *inboxFixture) messageIDs(t *testing.T, cred, q string, params ...string) []int64 {
	t.Helper()
	v := url.Values{"q": {q}, "types": {"messages"}}
	for i := 0; i+1 < len(params); i += 2 {
		v.Set(params[i], params[i+1])
	}
	a := f.search(t, cred, v)
	if a.Data.Messages == nil {
		t.Fatalf("q=%s: no messages group", q)
	}
	ids := []int64{}
	for _, m := range *a.Data.Messages {
		ids = append(ids, m.ID)
	}
	return ids
}

// matched returns the snippet's matches, each read as JavaScript would:
// the snippet's UTF-16 code units from start to end.
func matched(h searchHit) []string {
	units := utf16.Encode([]rune(h.Snippet.Text))
	var out []string
	for _, m := range h.Snippet.Matches {
		out = append(out, string(utf16.Decode(units[m.Start:m.End])))
	}
	return out
}

func TestSearchWords(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		a := f.receive(t, inboxMain, custA, "Can we RESCHEDULE? The Café is closed.")
		b := f.send(t, inboxMain, f.max.ID, "Sure, the invoice follows", custA)
		c := f.receive(t, inboxMain, custB, "cafe at noon, schedule permitting")
		for _, tc := range []struct {
			q    string
			want []int64
		}{
			{"reschedule", []int64{a}},
			{"Resch", []int64{a}},           // a beginning, any case
			{"schedule", []int64{c}},        // a word, not the middle of one
			{"café", []int64{c, a}},         // diacritics either way, newest first
			{"CAFE", []int64{c, a}},         //
			{"caf", []int64{c, a}},          //
			{"resch café", []int64{a}},      // every word
			{"resch invoice", []int64{}},    //
			{"INVOICE follows", []int64{b}}, // sent texts too
			{"s", []int64{}},                // one character: a whole word only
			{"the", []int64{b, a}},
		} {
			if got := f.messageIDs(t, f.key, tc.q); !slices.Equal(got, tc.want) {
				t.Errorf("q=%q: %v, want %v", tc.q, got, tc.want)
			}
		}
		// Each hit names its conversation and shows where it matched.
		ans := f.search(t, f.maxTok, url.Values{"q": {"cafe resch"}})
		hits := *ans.Data.Messages
		if len(hits) != 1 || hits[0].Direction != "in" || hits[0].Conversation.Line != inboxMain || hits[0].Conversation.Number != custA ||
			hits[0].Conversation.Resolved || hits[0].SentAt == "" {
			t.Fatalf("hit: %+v", hits)
		}
		if got := matched(hits[0]); !slices.Equal(got, []string{"RESCHEDULE", "Café"}) || hits[0].Snippet.Text != "Can we RESCHEDULE? The Café is closed." {
			t.Errorf("snippet %q matches %q", hits[0].Snippet.Text, got)
		}
		// A query of words is no number: the conversations group is empty.
		if ans.Data.Conversations == nil || len(*ans.Data.Conversations) != 0 {
			t.Errorf("conversations: %+v", ans.Data.Conversations)
		}
	})
}

func TestSearchSnippetOffsetsCountUTF16(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		// Astral characters (two UTF-16 units), accents, and a word in a
		// script with no case.
		f.receive(t, inboxMain, custA, "😀👍 Ünïcödé naïve Çafé 日本語 👍 ÇAFÉ!")
		hits := *f.search(t, f.key, url.Values{"q": {"cafe"}}).Data.Messages
		if len(hits) != 1 {
			t.Fatalf("hits: %+v", hits)
		}
		if got := matched(hits[0]); !slices.Equal(got, []string{"Çafé", "ÇAFÉ"}) {
			t.Errorf("matches %q in %q", got, hits[0].Snippet.Text)
		}
		hits = *f.search(t, f.key, url.Values{"q": {"日本"}}).Data.Messages
		if len(hits) != 1 || !slices.Equal(matched(hits[0]), []string{"日本語"}) {
			t.Errorf("日本: %+v", hits)
		}
		// A long text: the snippet is cut around the first match, the cuts
		// marked, the offsets still right.
		long := strings.Repeat("🎉 filler words here ", 20) + "the Zürich appointment " + strings.Repeat("more words after ", 20)
		f.receive(t, inboxMain, custB, long)
		hits = *f.search(t, f.key, url.Values{"q": {"zurich"}}).Data.Messages
		if len(hits) != 1 {
			t.Fatalf("hits: %+v", hits)
		}
		s := hits[0].Snippet.Text
		if !strings.HasPrefix(s, "…") || !strings.HasSuffix(s, "…") || len([]rune(s)) > 162 {
			t.Errorf("snippet %q", s)
		}
		if got := matched(hits[0]); !slices.Equal(got, []string{"Zürich"}) {
			t.Errorf("matches %q in %q", got, s)
		}
	})
}

func TestSearchNumbers(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		f.receive(t, inboxMain, custA, "hello")
		f.receive(t, inboxMain, custB, "hello")
		f.send(t, inboxDesk, 0, "group hello", "15550009999", custC)
		find := func(q string) []string {
			t.Helper()
			a := f.search(t, f.key, url.Values{"q": {q}})
			var out []string
			for _, c := range *a.Data.Conversations {
				n := c.Match.Number
				if got, want := n[c.Match.Start:c.Match.End], strings.NewReplacer(" ", "", "(", "", ")", "").Replace(q); got != want {
					t.Errorf("q=%s: match %q of %s", q, got, n)
				}
				out = append(out, c.Conversation.Line+":"+c.Conversation.Number)
			}
			return out
		}
		if got := find("5551001"); !slices.Equal(got, []string{inboxMain + ":" + custA}) {
			t.Errorf("5551001: %v", got)
		}
		// Any part of the digits, written as a person writes a number.
		if got := find("(555) 100"); !slices.Equal(got, []string{inboxDesk + ":" + custC, inboxMain + ":" + custB, inboxMain + ":" + custA}) {
			t.Errorf("(555) 100: %v", got)
		}
		// A group thread is found by any of its numbers.
		if got := find("1003"); !slices.Equal(got, []string{inboxDesk + ":" + custC}) {
			t.Errorf("1003: %v", got)
		}
		if got := find("9999"); !slices.Equal(got, []string{inboxDesk + ":" + custC}) {
			t.Errorf("9999: %v", got)
		}
		if got := find("10"); len(got) != 0 { // fewer than three digits
			t.Errorf("10: %v", got)
		}
		if got := find("4242"); len(got) != 0 {
			t.Errorf("4242: %v", got)
		}
	})
}

func TestSearchFilters(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		in := f.receive(t, inboxMain, custA, "parcel arrived")
		out := f.send(t, inboxMain, f.max.ID, "parcel shipped", custA)
		desk := f.receive(t, inboxDesk, custB, "parcel lost")
		f.call(t, "POST", "/sms/conversations/"+inboxDesk+"/"+custB+"/resolve", f.key, `{}`, 200, nil)
		for _, tc := range []struct {
			params []string
			want   []int64
		}{
			{nil, []int64{desk, out, in}},
			{[]string{"direction", "in"}, []int64{desk, in}},
			{[]string{"direction", "out"}, []int64{out}},
			{[]string{"lines", inboxDesk}, []int64{desk}},
			{[]string{"lines", inboxMain + "," + inboxDesk}, []int64{desk, out, in}},
			{[]string{"resolved", "true"}, []int64{desk}},
			{[]string{"unresolved", "true"}, []int64{out, in}},
			{[]string{"resolved", "false"}, []int64{desk, out, in}}, // false is no filter, as in the list
			{[]string{"from", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}, []int64{desk, out, in}},
			{[]string{"to", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}, []int64{}},
			{[]string{"from", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, []int64{}},
		} {
			if got := f.messageIDs(t, f.key, "parcel", tc.params...); !slices.Equal(got, tc.want) {
				t.Errorf("%v: %v, want %v", tc.params, got, tc.want)
			}
		}
		// A filter of messages only leaves conversations out, unless asked.
		a := f.search(t, f.key, url.Values{"q": {"5551002"}, "direction": {"in"}})
		if a.Data.Conversations != nil || a.Data.Messages == nil {
			t.Errorf("direction=in searched %+v", a.Data)
		}
		a = f.search(t, f.key, url.Values{"q": {"5551002"}, "resolved": {"true"}})
		if a.Data.Conversations == nil || len(*a.Data.Conversations) != 1 || !(*a.Data.Conversations)[0].Conversation.Resolved {
			t.Errorf("resolved numbers: %+v", a.Data.Conversations)
		}
		a = f.search(t, f.key, url.Values{"q": {"5551002"}, "unresolved": {"true"}})
		if a.Data.Conversations == nil || len(*a.Data.Conversations) != 0 {
			t.Errorf("unresolved numbers: %+v", a.Data.Conversations)
		}
		a = f.search(t, f.key, url.Values{"q": {"5551002"}, "types": {"conversations"}})
		if a.Data.Messages != nil || a.Data.Conversations == nil || len(*a.Data.Conversations) != 1 {
			t.Errorf("types=conversations: %+v", a.Data)
		}
	})
}

func TestSearchPages(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		var want []int64
		for i := range 7 {
			want = append([]int64{f.receive(t, inboxMain, custA, "ticket number "+string(rune('a'+i)))}, want...)
		}
		for i := range 5 {
			f.receive(t, inboxMain, "1415555200"+string(rune('0'+i)), "ticket")
		}
		var got []int64
		v := url.Values{"q": {"ticket"}, "limit": {"3"}, "types": {"messages"}}
		for range 10 {
			a := f.search(t, f.key, v)
			for _, m := range *a.Data.Messages {
				got = append(got, m.ID)
			}
			next, ok := a.Next["messages"]
			if !ok {
				break
			}
			v = url.Values{"q": {"ticket"}, "limit": {"3"}, "cursor": {next}}
		}
		if len(got) != 12 || !slices.Equal(got[5:], want) {
			t.Errorf("pages: %v, want 12 ending %v", got, want)
		}
		// Conversations page by their own cursor.
		var convs []string
		v = url.Values{"q": {"1415555"}, "limit": {"2"}}
		for range 10 {
			a := f.search(t, f.key, v)
			for _, c := range *a.Data.Conversations {
				convs = append(convs, c.Conversation.Number)
			}
			next, ok := a.Next["conversations"]
			if !ok {
				break
			}
			if a.Data.Messages != nil && len(convs) > 2 {
				t.Errorf("a cursor's page holds other groups: %+v", a.Data)
			}
			v = url.Values{"q": {"1415555"}, "limit": {"2"}, "cursor": {next}}
		}
		if len(convs) != 6 || convs[0] != "14155552004" || convs[5] != custA {
			t.Errorf("conversation pages: %v", convs)
		}
	})
}

// contactIDs searches for q (and params) as cred and returns the contacts
// group's ids, or nil when the group was not searched.
func (f *inboxFixture) contactIDs(t *testing.T, cred, q string, params ...string) []int64 {
	t.Helper()
	v := url.Values{"q": {q}}
	for i := 0; i+1 < len(params); i += 2 {
		v.Set(params[i], params[i+1])
	}
	a := f.search(t, cred, v)
	if a.Data.Contacts == nil {
		return nil
	}
	ids := []int64{}
	for _, c := range *a.Data.Contacts {
		ids = append(ids, c.Contact.ID)
	}
	return ids
}

func TestSearchContacts(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		add := func(cred, body string) int64 {
			t.Helper()
			var c struct{ ID int64 }
			f.call(t, "POST", "/contacts", cred, body, 201, &c)
			return c.ID
		}
		maria := add(f.key, `{"name": "María José Pérez", "company": "Sunrise Clinic", "numbers": [{"number": "+1 415 555 2001"}]}`)
		tom := add(f.key, `{"name": "Tom Baker", "company": "Sunrise Bakery", "numbers": [{"number": "+44 20 7946 0101"}]}`)
		add(f.betaKey, `{"name": "Maria Beta", "numbers": [{"number": "+1 415 555 2001"}]}`)
		for q, want := range map[string][]int64{
			"maria":       {maria}, // without diacritics, not Beta's
			"PÉR":         {maria}, // the beginning of a word, any case
			"sunrise":     {tom, maria},
			"sunrise bak": {tom},
			"555 20":      {maria}, // digits anywhere in a number
			"7946":        {tom},
			"ose":         {}, // not the beginning of a word
		} {
			if got := f.contactIDs(t, f.key, q); !slices.Equal(got, want) {
				t.Errorf("q=%s: %v, want %v", q, got, want)
			}
		}
		// Every group, by default; a filter that contacts cannot take
		// leaves them out, and so does naming the other groups.
		a := f.search(t, f.maxTok, url.Values{"q": {"maria"}})
		if a.Data.Contacts == nil || a.Data.Conversations == nil || a.Data.Messages == nil {
			t.Errorf("no types: %+v", a.Data)
		}
		if got := f.contactIDs(t, f.agnesTok, "maria"); !slices.Equal(got, []int64{maria}) {
			t.Errorf("Agnes (assigned lines): %v", got)
		}
		for _, p := range [][]string{{"lines", inboxMain}, {"resolved", "true"}, {"direction", "in"}, {"types", "messages,conversations"}} {
			if got := f.contactIDs(t, f.key, "maria", p...); got != nil {
				t.Errorf("with %s=%s: contacts searched: %v", p[0], p[1], got)
			}
		}
		// A conversation or a text found by other words names its contact,
		// as the inbox does.
		f.receive(t, inboxMain, "14155552001", "invoice attached")
		a = f.search(t, f.key, url.Values{"q": {"invoice"}, "types": {"messages"}})
		if m := *a.Data.Messages; len(m) != 1 || m[0].Contact == nil || m[0].Contact.ID != maria {
			t.Errorf("a text from María's number: %+v", m)
		}
		a = f.search(t, f.key, url.Values{"q": {"4155552001"}, "types": {"conversations"}})
		if c := *a.Data.Conversations; len(c) != 1 || c[0].Conversation.Contact == nil || c[0].Conversation.Contact.Name != "María José Pérez" {
			t.Errorf("her conversation found by its number: %+v", c)
		}

		// Pages of their own.
		a = f.search(t, f.key, url.Values{"q": {"sunrise"}, "limit": {"1"}})
		if got := *a.Data.Contacts; len(got) != 1 || got[0].Contact.ID != tom || a.Next["contacts"] == "" {
			t.Fatalf("first page: %+v, next %v", got, a.Next)
		}
		a = f.search(t, f.key, url.Values{"q": {"sunrise"}, "limit": {"1"}, "cursor": {a.Next["contacts"]}})
		if got := *a.Data.Contacts; len(got) != 1 || got[0].Contact.ID != maria || a.Next["contacts"] != "" || a.Data.Messages != nil {
			t.Fatalf("second page: %+v, next %v, messages %v", got, a.Next, a.Data.Messages)
		}
	})
}

func TestSearchOnlyWhatTheCredentialMayRead(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		hidden := f.receive(t, inboxHidden, custA, "confidential memo")
		desk := f.receive(t, inboxDesk, custA, "confidential desk")
		beta := f.receive(t, inboxBeta, custA, "confidential beta")
		if got := f.messageIDs(t, f.maxTok, "confidential"); !slices.Equal(got, []int64{desk, hidden}) {
			t.Errorf("Max: %v", got)
		}
		// Agnes is not assigned the hidden line: nothing of it, not its number either.
		if got := f.messageIDs(t, f.agnesTok, "confidential"); !slices.Equal(got, []int64{desk}) {
			t.Errorf("Agnes: %v", got)
		}
		a := f.search(t, f.agnesTok, url.Values{"q": {custA}})
		if len(*a.Data.Conversations) != 1 || (*a.Data.Conversations)[0].Conversation.Line != inboxDesk {
			t.Errorf("Agnes's numbers: %+v", a.Data.Conversations)
		}
		f.wantError(t, "GET", "/search?q=confidential&lines="+inboxHidden, f.agnesTok, "", 404, "not_found")
		// Another account: never.
		if got := f.messageIDs(t, f.key, "confidential"); slices.Contains(got, beta) {
			t.Errorf("Acme found Beta's text: %v", got)
		}
		if got := f.messageIDs(t, f.betaKey, "confidential"); !slices.Equal(got, []int64{beta}) {
			t.Errorf("Beta: %v", got)
		}
		f.wantError(t, "GET", "/search?q=confidential&lines="+inboxBeta, f.key, "", 404, "not_found")
	})
}

func TestSearchNeverFindsDeleted(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		gone := f.receive(t, inboxMain, custA, "erase this sentence")
		kept := f.receive(t, inboxMain, custA, "keep this sentence")
		other := f.receive(t, inboxMain, custB, "another sentence")
		f.call(t, "DELETE", "/sms/conversations/"+inboxMain+"/"+custA+"/messages/"+strconv.FormatInt(gone, 10), f.maxTok, "", 204, nil)
		if got := f.messageIDs(t, f.key, "sentence"); !slices.Equal(got, []int64{other, kept}) {
			t.Errorf("after deleting a message: %v", got)
		}
		if got := f.messageIDs(t, f.key, "erase"); len(got) != 0 {
			t.Errorf("erase: %v", got)
		}
		f.call(t, "DELETE", "/sms/conversations/"+inboxMain+"/"+custA, f.maxTok, "", 204, nil)
		if got := f.messageIDs(t, f.key, "sentence"); !slices.Equal(got, []int64{other}) {
			t.Errorf("after deleting the conversation: %v", got)
		}
		if a := f.search(t, f.key, url.Values{"q": {custA}}); len(*a.Data.Conversations) != 0 {
			t.Errorf("a deleted conversation's number: %+v", a.Data.Conversations)
		}
		// Texted again, the thread is found again, with only the new text.
		again := f.receive(t, inboxMain, custA, "a new sentence")
		if got := f.messageIDs(t, f.key, "sentence"); !slices.Equal(got, []int64{again, other}) {
			t.Errorf("texted again: %v", got)
		}
		if a := f.search(t, f.key, url.Values{"q": {custA}}); len(*a.Data.Conversations) != 1 {
			t.Errorf("texted again, its number: %+v", a.Data.Conversations)
		}
	})
}

func TestSearchRefusesBadRequests(t *testing.T) {
	forEachInbox(t, func(t *testing.T, f *inboxFixture) {
		for _, query := range []string{
			"",
			"q=",
			"q=%20%20",
			"q=%21%3F%21", // no letter or digit
			"q=" + strings.Repeat("a", 201),
			"q=w1+w2+w3+w4+w5+w6+w7+w8+w9+w10+w11",
			"q=caf%FF",
			"q=a%00b",
			"q=x&q=y",
			"q=x&types=contactz",
			"q=x&types=contacts&resolved=true",
			"q=x&types=contacts&direction=in",
			"q=x&cursor=k0",
			"q=x&cursor=k12&types=messages",
			"q=x&types=",
			"q=x&direction=sideways",
			"q=x&from=yesterday",
			"q=x&from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z",
			"q=x&resolved=true&unresolved=true",
			"q=x&resolved=yes",
			"q=x&types=conversations&direction=in",
			"q=x&cursor=zzz",
			"q=x&cursor=m0",
			"q=x&cursor=m12&types=conversations",
			"q=x&cursor=c12",
			"q=x&limit=0",
			"q=x&limit=101",
			"q=x&page=2",
		} {
			f.wantError(t, "GET", "/search?"+query, f.key, "", 400, "invalid_request")
		}
		// 200 characters is the most.
		f.call(t, "GET", "/search?q="+strings.Repeat("a", 200), f.key, "", 200, nil)
		f.wantError(t, "GET", "/search?q=x", "", "", 401, "unauthenticated")
	})
}
