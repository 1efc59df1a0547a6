package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/carrier"
	"switchboard/internal/httpapi"
	"switchboard/internal/inbox"
	"switchboard/internal/sms"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// scheduledData mirrors ScheduledMessage; the price stays JSON number text.
type scheduledData struct {
	ID         int64       `json:"id"`
	Line       string      `json:"line"`
	Recipients []string    `json:"recipients"`
	Subject    string      `json:"subject"`
	Text       string      `json:"text"`
	Media      []string    `json:"media"`
	SendAt     time.Time   `json:"sendAt"`
	Price      json.Number `json:"price"`
	Currency   string      `json:"currency"`
}

type scheduleBody struct {
	To      []string `json:"to,omitempty"`
	Message string   `json:"message,omitempty"`
	Subject string   `json:"subject,omitempty"`
	Media   []string `json:"media,omitempty"`
	SendAt  string   `json:"sendAt,omitempty"`
}

func scheduledPath(line string) string { return "/api/public/v1/sms/lines/" + line + "/scheduled" }

// setupScheduled is the send fixture with the inbox wired in, so that
// threads can be read, on clock (nil: the wall clock).
func setupScheduled(t *testing.T, engine store.Engine, clock *storetest.Clock) *sendFixture {
	t.Helper()
	return setupSendOn(t, engine, clock, func(cfg *httpapi.Config, srv *http.Server) {
		cfg.Inbox = inbox.New(inbox.Config{Store: cfg.Store.(*store.Store), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	})
}

func forEachScheduledEngine(t *testing.T, fn func(t *testing.T, f *sendFixture)) {
	for _, e := range storetest.Engines(t) {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			fn(t, setupScheduled(t, e, nil))
		})
	}
}

// dispatchLead is how far ahead the dispatch tests schedule: any lead
// works, since they advance the test clock past it instead of waiting.
const dispatchLead = time.Hour

// forEachDispatchEngine is forEachScheduledEngine on a test clock (f.clock)
// shared by the store and the SMS service, for the tests that let the
// dispatcher send: they schedule dispatchLead ahead on it and advance it
// past sendAt instead of sleeping until then.
func forEachDispatchEngine(t *testing.T, fn func(t *testing.T, f *sendFixture)) {
	for _, e := range storetest.Engines(t) {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			fn(t, setupScheduled(t, e, storetest.NewClock(time.Now())))
		})
	}
}

// schedule posts a schedule with an optional Idempotency-Key.
func (f *sendFixture) schedule(t *testing.T, key, idem, line string, body scheduleBody) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", f.url+scheduledPath(line), strings.NewReader(jsonBody(t, body)))
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, err := f.client.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, resp.Header, b
}

func decodeScheduled(t *testing.T, b []byte) scheduledData {
	t.Helper()
	return decodeInto[struct {
		Data scheduledData `json:"data"`
	}](t, b).Data
}

func (f *sendFixture) listScheduled(t *testing.T, key, line string) []scheduledData {
	t.Helper()
	status, _, raw := f.do(t, "GET", scheduledPath(line), key, "")
	if status != 200 {
		t.Fatalf("list scheduled: %d %s", status, raw)
	}
	return decodeInto[struct {
		Data []scheduledData `json:"data"`
	}](t, raw).Data
}

// threadMessage is the part of a thread's Message these tests read.
type threadMessage struct {
	ID          int64      `json:"id"`
	Text        string     `json:"text"`
	Scheduled   bool       `json:"scheduled"`
	ScheduledAt *time.Time `json:"scheduledAt"`
}

func (f *sendFixture) thread(t *testing.T, line, number string) []threadMessage {
	t.Helper()
	status, _, raw := f.do(t, "GET", "/api/public/v1/sms/conversations/"+line+"/"+number, f.keys["acme"], "")
	if status == 404 {
		return nil
	}
	if status != 200 {
		t.Fatalf("thread: %d %s", status, raw)
	}
	return decodeInto[struct {
		Data struct {
			Messages []threadMessage `json:"messages"`
		} `json:"data"`
	}](t, raw).Data.Messages
}

func rfc(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func TestScheduleCreateListCancel(t *testing.T) {
	t.Parallel()
	forEachScheduledEngine(t, func(t *testing.T, f *sendFixture) {
		key := f.keys["acme"]
		now := time.Now().Truncate(time.Second)
		in2h, in1h, in3h := now.Add(2*time.Hour), now.Add(time.Hour), now.Add(3*time.Hour)

		// Normalized and de-duplicated like a send; priced now (one sms segment at the 1 rate).
		status, _, raw := f.schedule(t, key, "", lineMain, scheduleBody{To: []string{"(415) 555-0123", usA}, Message: "hello", Subject: "Re: visit", SendAt: rfc(in2h)})
		first := decodeScheduled(t, raw)
		if status != 201 || first.ID == 0 || first.Line != lineMain || !slices.Equal(first.Recipients, []string{usA}) || first.Text != "hello" ||
			first.Subject != "Re: visit" || len(first.Media) != 0 || !first.SendAt.Equal(in2h) || first.Price.String() != "0.0079" || first.Currency != "USD" {
			t.Fatalf("create: %d %s", status, raw)
		}
		if !strings.Contains(string(raw), `"media":[]`) {
			t.Errorf("media must be [] when empty: %s", raw)
		}
		// Two recipients: one mms at the highest recipient's rate.
		status, _, raw = f.schedule(t, key, "", lineMain, scheduleBody{To: []string{usA, ukLondon}, Message: "group", SendAt: rfc(in1h)})
		group := decodeScheduled(t, raw)
		if status != 201 || group.Price.String() != "0.12" {
			t.Fatalf("group: %d %s", status, raw)
		}
		status, _, raw = f.schedule(t, key, "", lineMain, scheduleBody{To: []string{usB}, Message: "later", SendAt: rfc(in3h)})
		later := decodeScheduled(t, raw)
		if status != 201 {
			t.Fatalf("later: %d %s", status, raw)
		}
		// Soonest first.
		var ids []int64
		for _, m := range f.listScheduled(t, key, lineMain) {
			ids = append(ids, m.ID)
		}
		if want := []int64{group.ID, first.ID, later.ID}; !slices.Equal(ids, want) {
			t.Errorf("list order %v, want %v", ids, want)
		}
		if l := f.listScheduled(t, key, lineBob); len(l) != 0 {
			t.Errorf("another line lists %d", len(l))
		}
		// Nothing sent or charged by scheduling.
		if total, n := f.ledger(t, f.acme); total != 0 || n != 0 || f.sim.Count() != 0 {
			t.Errorf("scheduling charged %d (%d) or sent %d", total, n, f.sim.Count())
		}

		// In its thread, marked scheduled, until sent.
		th := f.thread(t, lineMain, usA)
		if len(th) != 1 || !th[0].Scheduled || th[0].ScheduledAt == nil || !th[0].ScheduledAt.Equal(in2h) || th[0].Text != "hello" {
			t.Errorf("thread: %+v", th)
		}

		// Another account's line, a line the caller cannot use, and the
		// scheduled message of another account are not found.
		beta := f.keys["beta"]
		if status, _, raw := f.do(t, "GET", scheduledPath(lineMain), beta, ""); status != 404 {
			t.Errorf("beta lists acme's line: %d %s", status, raw)
		}
		if status, _, raw := f.schedule(t, beta, "", lineMain, scheduleBody{To: []string{usA}, Message: "x", SendAt: rfc(in1h)}); status != 404 {
			t.Errorf("beta schedules on acme's line: %d %s", status, raw)
		}
		if status, _, _ := f.do(t, "DELETE", fmt.Sprintf("%s/%d", scheduledPath(lineBeta), first.ID), beta, ""); status != 404 {
			t.Errorf("beta cancels acme's message through its own line: %d", status)
		}
		if status, _, _ := f.do(t, "DELETE", fmt.Sprintf("%s/%d", scheduledPath(lineBob), first.ID), key, ""); status != 404 {
			t.Errorf("cancel through another line: %d", status)
		}
		eve := agentToken(t, f.fixture, auth.SMSRead, auth.SMSWrite, auth.SMSSend)
		if status, _, raw := f.do(t, "GET", scheduledPath(lineBob), eve, ""); status != 404 {
			t.Errorf("a user without the line lists it: %d %s", status, raw)
		}
		if status, _, raw := f.schedule(t, eve, "", lineBob, scheduleBody{To: []string{usA}, Message: "x", SendAt: rfc(in1h)}); status != 404 {
			t.Errorf("a user without the line schedules on it: %d %s", status, raw)
		}
		if status, _, raw := f.schedule(t, f.keys["acme-nosend"], "", lineMain, scheduleBody{To: []string{usA}, Message: "x", SendAt: rfc(in1h)}); status != 403 ||
			decodeInto[errorEnvelope](t, raw).Error.Scope != "sms:send" {
			t.Errorf("schedule without sms:send: %d %s", status, raw)
		}

		// The inbox's deletions leave a scheduled message to its schedule: the
		// message cannot be deleted (409), and deleting its conversation keeps it.
		msgPath := fmt.Sprintf("/api/public/v1/sms/conversations/%s/%s/messages/%d", lineMain, usA, th[0].ID)
		if status, _, raw := f.do(t, "DELETE", msgPath, key, ""); status != 409 {
			t.Errorf("delete the scheduled message through its thread: %d %s, want 409", status, raw)
		}
		if status, _, raw := f.do(t, "DELETE", "/api/public/v1/sms/conversations/"+lineMain+"/"+usA, key, ""); status != 204 {
			t.Errorf("delete the conversation: %d %s", status, raw)
		}
		if th := f.thread(t, lineMain, usA); len(th) != 1 || !th[0].Scheduled || th[0].Text != "hello" {
			t.Errorf("after deleting the conversation, the thread holds %+v; want the scheduled message", th)
		}

		// Cancel: 204, then gone from the list and the thread; again, 404.
		cancel := fmt.Sprintf("%s/%d", scheduledPath(lineMain), first.ID)
		if status, _, raw := f.do(t, "DELETE", cancel, key, ""); status != 204 {
			t.Fatalf("cancel: %d %s", status, raw)
		}
		ids = ids[:0]
		for _, m := range f.listScheduled(t, key, lineMain) {
			ids = append(ids, m.ID)
		}
		if want := []int64{group.ID, later.ID}; !slices.Equal(ids, want) {
			t.Errorf("after cancel: %v, want %v", ids, want)
		}
		if th := f.thread(t, lineMain, usA); len(th) != 0 {
			t.Errorf("cancelled message still in its thread: %+v", th)
		}
		for _, p := range []string{cancel, scheduledPath(lineMain) + "/999999", scheduledPath(lineMain) + "/abc", scheduledPath(lineMain) + "/0"} {
			if status, _, raw := f.do(t, "DELETE", p, key, ""); status != 404 {
				t.Errorf("DELETE %s: %d %s, want 404", p, status, raw)
			}
		}
	})
}

// A sendAt with nine fractional digits is answered in the one form it is
// listed in (microseconds, what is stored), not echoed as given.
func TestScheduleSendAtPrecision(t *testing.T) {
	t.Parallel()
	forEachScheduledEngine(t, func(t *testing.T, f *sendFixture) {
		at := time.Now().Add(time.Hour).UTC().Truncate(time.Second).Add(123456789 * time.Nanosecond)
		given := at.Format(time.RFC3339Nano)
		status, _, raw := f.schedule(t, f.keys["acme"], "", lineMain, scheduleBody{To: []string{usA}, Message: "x", SendAt: given})
		if status != 201 {
			t.Fatalf("schedule: %d %s", status, raw)
		}
		created := decodeInto[struct {
			Data struct {
				SendAt string `json:"sendAt"`
			} `json:"data"`
		}](t, raw).Data.SendAt
		listed := ""
		status, _, raw = f.do(t, "GET", scheduledPath(lineMain), f.keys["acme"], "")
		var list struct {
			Data []struct {
				SendAt string `json:"sendAt"`
			} `json:"data"`
		}
		must(t, json.Unmarshal(raw, &list))
		if status == 200 && len(list.Data) == 1 {
			listed = list.Data[0].SendAt
		}
		want := at.Truncate(time.Microsecond).Format(time.RFC3339Nano)
		if created != want || listed != want {
			t.Errorf("sendAt %s: created %q, listed %q; want both %q", given, created, listed, want)
		}
	})
}

func TestScheduleValidation(t *testing.T) {
	t.Parallel()
	forEachScheduledEngine(t, func(t *testing.T, f *sendFixture) {
		key := f.keys["acme"]
		soon := rfc(time.Now().Add(time.Hour))
		must(t, f.sim.Inject(ctx, carrier.Inbound{From: usB, To: lineMain, Text: "STOP"}))

		// Media hosted for another account, and media never hosted.
		png := realImage(t, "image/png")
		hosted, _ := json.Marshal(attach("a.png", "image/png", png))
		_, _, raw := f.do(t, "POST", "/api/public/v1/sms/media", f.keys["beta"], string(hosted))
		betaMedia := decodeInto[hostedData](t, raw).Data.URL
		if betaMedia == "" {
			t.Fatalf("beta hosts media: %s", raw)
		}

		many := make([]string, 21)
		for i := range many {
			many[i] = fmt.Sprintf("1415555%04d", 1000+i)
		}
		for _, c := range []struct {
			name string
			body string
			want string
		}{
			{"no to", `{"message":"x","sendAt":"` + soon + `"}`, "to is required"},
			{"empty to", `{"to":[],"message":"x","sendAt":"` + soon + `"}`, "to is required"},
			{"21 recipients", jsonBody(t, scheduleBody{To: many, Message: "x", SendAt: soon}), "21 distinct recipients"},
			{"invalid recipient", jsonBody(t, scheduleBody{To: []string{usA, usInvalid}, Message: "x", SendAt: soon}), `"+1 555 123 4567" (invalid)`},
			{"opted out", jsonBody(t, scheduleBody{To: []string{usA, "(212) 555-0123"}, Message: "x", SendAt: soon}), `"(212) 555-0123" (opted_out)`},
			{"no message", jsonBody(t, scheduleBody{To: []string{usA}, SendAt: soon}), "message is required unless media"},
			{"blank message", jsonBody(t, scheduleBody{To: []string{usA}, Message: " \n", SendAt: soon}), "whitespace"},
			{"long message", jsonBody(t, scheduleBody{To: []string{usA}, Message: strings.Repeat("a", 2001), SendAt: soon}), "2001 bytes"},
			{"long subject", jsonBody(t, scheduleBody{To: []string{usA}, Message: "x", Subject: strings.Repeat("é", 201), SendAt: soon}), "subject is 201 characters"},
			{"no sendAt", jsonBody(t, scheduleBody{To: []string{usA}, Message: "x"}), "sendAt is required"},
			{"past", jsonBody(t, scheduleBody{To: []string{usA}, Message: "x", SendAt: rfc(time.Now().Add(-time.Minute))}), "not in the future"},
			{"now", jsonBody(t, scheduleBody{To: []string{usA}, Message: "x", SendAt: rfc(time.Now().Truncate(time.Second))}), "not in the future"},
			{"over a year", jsonBody(t, scheduleBody{To: []string{usA}, Message: "x", SendAt: rfc(time.Now().AddDate(1, 0, 2))}), "more than a year"},
			{"not RFC 3339", jsonBody(t, scheduleBody{To: []string{usA}, Message: "x", SendAt: "tomorrow"}), "sendAt"},
			{"foreign media", jsonBody(t, scheduleBody{To: []string{usA}, Media: []string{betaMedia}, SendAt: soon}), "media[0]"},
			{"unhosted media", jsonBody(t, scheduleBody{To: []string{usA}, Message: "x", Media: []string{"https://example.com/cat.png"}, SendAt: soon}), "media[0]"},
			{"unknown field", `{"to":["` + usA + `"],"message":"x","sendAt":"` + soon + `","from":"x"}`, "from"},
		} {
			req, err := http.NewRequest("POST", f.url+scheduledPath(lineMain), strings.NewReader(c.body))
			must(t, err)
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := f.client.Do(req)
			must(t, err)
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if e := decodeInto[errorEnvelope](t, raw); resp.StatusCode != 400 || e.Error.Type != "invalid_request" || !strings.Contains(e.Error.Message, c.want) {
				t.Errorf("%s: %d %s, want 400 naming %q", c.name, resp.StatusCode, raw, c.want)
			}
			if strings.Contains(string(raw), betaMedia) {
				t.Errorf("%s: the error echoes a media URL: %s", c.name, raw)
			}
		}
		// An unpriced destination is 422; nothing is queued.
		status, _, raw := f.schedule(t, key, "", lineMain, scheduleBody{To: []string{usA, jpTokyo}, Message: "x", SendAt: soon})
		if e := decodeInto[errorEnvelope](t, raw); status != 422 || e.Error.Type != "invalid_request" || !strings.Contains(e.Error.Message, jpTokyo) {
			t.Errorf("unpriced: %d %s", status, raw)
		}
		if l := f.listScheduled(t, key, lineMain); len(l) != 0 {
			t.Errorf("refused schedules were queued: %+v", l)
		}

		// Just under a year ahead is accepted.
		if status, _, raw := f.schedule(t, key, "", lineMain, scheduleBody{To: []string{usA}, Message: "x", SendAt: rfc(time.Now().AddDate(1, 0, 0).Add(-time.Minute))}); status != 201 {
			t.Errorf("just under a year ahead: %d %s", status, raw)
		}

		// The account's own hosted media: an mms at the mms rate, its URL returned.
		_, _, raw = f.do(t, "POST", "/api/public/v1/sms/media", key, string(hosted))
		own := decodeInto[hostedData](t, raw).Data.URL
		status, _, raw = f.schedule(t, key, "", lineMain, scheduleBody{To: []string{usA}, Media: []string{own}, SendAt: soon})
		if m := decodeScheduled(t, raw); status != 201 || !slices.Equal(m.Media, []string{own}) || m.Text != "" || m.Price.String() != "0.02" {
			t.Errorf("with media: %d %s", status, raw)
		}
	})
}

func TestScheduleIdempotency(t *testing.T) {
	t.Parallel()
	forEachScheduledEngine(t, func(t *testing.T, f *sendFixture) {
		key := f.keys["acme"]
		body := scheduleBody{To: []string{usA}, Message: "once", SendAt: rfc(time.Now().Add(time.Hour))}
		status, h, raw := f.schedule(t, key, "k-1", lineMain, body)
		first := decodeScheduled(t, raw)
		if status != 201 || h.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first: %d %s", status, raw)
		}
		status, h, raw2 := f.schedule(t, key, "k-1", lineMain, body)
		if status != 201 || h.Get("Idempotent-Replayed") != "true" || string(raw2) != string(raw) {
			t.Errorf("replay: %d %q %s, want the first answer %s", status, h.Get("Idempotent-Replayed"), raw2, raw)
		}
		if l := f.listScheduled(t, key, lineMain); len(l) != 1 || l[0].ID != first.ID {
			t.Errorf("replay scheduled again: %+v", l)
		}
		// Another body, or the same body to another line, under the key: 422.
		other := body
		other.Message = "twice"
		if status, _, raw := f.schedule(t, key, "k-1", lineMain, other); status != 422 {
			t.Errorf("other body: %d %s", status, raw)
		}
		if status, _, raw := f.schedule(t, key, "k-1", lineBob, body); status != 422 {
			t.Errorf("other line: %d %s", status, raw)
		}
		// A refusal is the key's answer too.
		bad := scheduleBody{To: []string{jpTokyo}, Message: "x", SendAt: body.SendAt}
		if status, _, _ := f.schedule(t, key, "k-2", lineMain, bad); status != 422 {
			t.Errorf("unpriced: %d", status)
		}
		if status, h, _ := f.schedule(t, key, "k-2", lineMain, bad); status != 422 || h.Get("Idempotent-Replayed") != "true" {
			t.Errorf("unpriced replay: %d %q", status, h.Get("Idempotent-Replayed"))
		}
		if status, _, raw := f.schedule(t, key, "", lineMain, scheduleBody{To: []string{usA}, Message: "x", SendAt: body.SendAt}); status != 201 {
			t.Errorf("without a key: %d %s", status, raw)
		}
	})
}

// TestScheduleDispatch schedules five messages due together, changes the
// world before they are due (a rate change, a STOP, a cancellation, a
// carrier refusing one destination), then lets the dispatcher send them.
func TestScheduleDispatch(t *testing.T) {
	t.Parallel()
	forEachDispatchEngine(t, func(t *testing.T, f *sendFixture) {
		key := f.keys["acme"]
		sendAt := f.clock.Now().Add(dispatchLead)
		mk := func(text string, to ...string) scheduledData {
			t.Helper()
			status, _, raw := f.schedule(t, key, "", lineMain, scheduleBody{To: to, Message: text, SendAt: sendAt.Format(time.RFC3339Nano)})
			if status != 201 {
				t.Fatalf("schedule %q: %d %s", text, status, raw)
			}
			return decodeScheduled(t, raw)
		}
		fixed := mk("fixed price", usA)
		stopped := mk("to someone who stops", usB)
		group := mk("group losing a member", usA, ukLondon)
		cancelled := mk("cancelled", usA)
		retried := mk("carrier down", deBerlin)
		if fixed.Price.String() != "0.0079" || group.Price.String() != "0.12" || retried.Price.String() != "0.06" {
			t.Fatalf("prices %s %s %s", fixed.Price, group.Price, retried.Price)
		}

		// Before they are due: the rate doubles, usB and ukLondon send STOP,
		// one is cancelled, and the carrier refuses German numbers.
		storetest.Rate(t, f.st, f.acme, "1", "0.0158", "0.04")
		storetest.Rate(t, f.st, f.acme, "4420", "0.10", "0.24")
		storetest.Rate(t, f.st, f.acme, "49", "0.12", "0.18")
		must(t, f.sim.Inject(ctx, carrier.Inbound{From: usB, To: lineMain, Text: "STOP"}))
		must(t, f.sim.Inject(ctx, carrier.Inbound{From: ukLondon, To: lineMain, Text: "STOP"}))
		if status, _, raw := f.do(t, "DELETE", fmt.Sprintf("%s/%d", scheduledPath(lineMain), cancelled.ID), key, ""); status != 204 {
			t.Fatalf("cancel: %d %s", status, raw)
		}
		f.sim.FailDestinations("49")

		// Due while no dispatcher runs: the first pass at start sends them
		// (the overdue rule).
		f.clock.Advance(dispatchLead)
		d := f.svc.ScheduledDispatcher(sms.DispatcherConfig{Interval: 20 * time.Millisecond, RetryBase: 50 * time.Millisecond, RetryMax: 50 * time.Millisecond})
		d.TestSignals.Init()
		must(t, d.Start(ctx))
		defer d.Stop()

		outcomes := map[int64][]string{}
		for done := 0; done < 4; {
			got := d.TestSignals.Dispatched.WaitOrTimeout(t)
			outcomes[got.ID] = append(outcomes[got.ID], got.Outcome)
			switch got.Outcome {
			case sms.DispatchRetry:
				if got.ID != retried.ID {
					t.Fatalf("%d retried", got.ID)
				}
				f.sim.FailDestinations() // the carrier is back
			case sms.DispatchSent, sms.DispatchSkipped:
				done++
			default:
				t.Fatalf("scheduled %d: %+v", got.ID, got)
			}
		}
		want := map[int64][]string{fixed.ID: {"sent"}, stopped.ID: {"skipped"}, group.ID: {"sent"}, retried.ID: {"retry", "sent"}}
		if fmt.Sprint(outcomes) != fmt.Sprint(want) {
			t.Errorf("outcomes %v, want %v", outcomes, want)
		}

		// What the carrier got: each once, the group without the member who stopped.
		sent := map[string][]string{}
		for _, m := range f.sim.Sent() {
			sent[m.Text] = append(sent[m.Text], strings.Join(m.To, ","))
		}
		wantSent := map[string][]string{"fixed price": {usA}, "group losing a member": {usA}, "carrier down": {deBerlin}}
		if fmt.Sprint(sent) != fmt.Sprint(wantSent) {
			t.Errorf("carrier got %v, want %v", sent, wantSent)
		}
		// Charged the fixed prices, once each: 0.0079 + 0.02 (the group's mms at
		// usA's fixed rate, London's share gone) + 0.06.
		if total, n := f.ledger(t, f.acme); total != 87900 || n != 3 {
			t.Errorf("ledger %d micros in %d charges, want 87900 in 3", total, n)
		}
		if l := f.listScheduled(t, key, lineMain); len(l) != 0 {
			t.Errorf("still queued: %+v", l)
		}
		// In the thread: the sent messages, no longer scheduled (the group,
		// down to usA, is sent in usA's thread as a direct send would be);
		// no stand-ins left.
		var texts []string
		for _, m := range f.thread(t, lineMain, usA) {
			texts = append(texts, m.Text)
			if m.Scheduled || m.ScheduledAt != nil {
				t.Errorf("sent message still scheduled: %+v", m)
			}
		}
		slices.Sort(texts) // dispatched concurrently: in either order
		if want := []string{"fixed price", "group losing a member"}; !slices.Equal(texts, want) {
			t.Errorf("usA's thread %q, want %q", texts, want)
		}
		if th := f.thread(t, lineMain, usB); len(th) != 1 || th[0].Text != "STOP" {
			t.Errorf("usB's thread: %+v", th)
		}
		// Cancelled and skipped ones cannot be cancelled any more.
		for _, id := range []int64{cancelled.ID, stopped.ID, fixed.ID} {
			if status, _, _ := f.do(t, "DELETE", fmt.Sprintf("%s/%d", scheduledPath(lineMain), id), key, ""); status != 404 {
				t.Errorf("cancel %d after dispatch: %d, want 404", id, status)
			}
		}
	})
}

// TestScheduleDispatchInterrupted stops two dispatches mid-way, as a crash
// would: one after its intent is written and before the carrier is called,
// one after the carrier took the message and before that is recorded. Once
// their leases end, each reaches the carrier exactly once: the second is
// found sent (its delivery receipt charged it); the first, with no evidence
// that the carrier took it by --reconcile-after, is abandoned uncharged and
// sent anew, and charged once for the send that arrived.
func TestScheduleDispatchInterrupted(t *testing.T) {
	t.Parallel()
	forEachDispatchEngine(t, func(t *testing.T, f *sendFixture) {
		key := f.keys["acme"]
		sendAt := f.clock.Now().Add(dispatchLead)
		texts := map[int64]string{}
		for _, text := range []string{"first", "second"} {
			status, _, raw := f.schedule(t, key, "", lineMain, scheduleBody{To: []string{usA}, Message: text, SendAt: sendAt.Format(time.RFC3339Nano)})
			if status != 201 {
				t.Fatalf("schedule: %d %s", status, raw)
			}
			texts[decodeScheduled(t, raw).ID] = text
		}
		var mu sync.Mutex
		crashed := map[string]bool{}
		f.setFault(func(step string) error {
			mu.Lock()
			defer mu.Unlock()
			if (step == "after-intent" || step == "after-carrier") && !crashed[step] {
				crashed[step] = true
				return fmt.Errorf("crash %s", step)
			}
			return nil
		})
		f.clock.Advance(dispatchLead) // due
		d := f.svc.ScheduledDispatcher(sms.DispatcherConfig{Interval: 20 * time.Millisecond, Lease: 200 * time.Millisecond, ReconcileAfter: 400 * time.Millisecond})
		d.TestSignals.Init()
		must(t, d.Start(ctx))
		defer d.Stop()

		sent := map[int64]int{}
		resent := 0
		for len(sent) < 2 {
			got := d.TestSignals.Dispatched.WaitOrTimeout(t)
			switch got.Outcome {
			case sms.DispatchSent:
				if sent[got.ID]++; sent[got.ID] > 1 {
					t.Fatalf("scheduled %d sent twice", got.ID)
				}
			case sms.DispatchResent:
				resent++
			case sms.DispatchInterrupted, sms.DispatchWaiting:
			default:
				t.Fatalf("scheduled %d: %+v", got.ID, got)
			}
		}
		if resent != 1 {
			t.Errorf("%d schedules sent anew, want 1 (the one stopped before the carrier)", resent)
		}
		carrierGot := map[string]int{}
		for _, m := range f.sim.Sent() {
			carrierGot[m.Text]++
		}
		for id := range sent {
			if carrierGot[texts[id]] != 1 {
				t.Errorf("%q reached the carrier %d times, want once", texts[id], carrierGot[texts[id]])
			}
		}
		if total, n := f.ledger(t, f.acme); total != 2*7900 || n != 2 {
			t.Errorf("ledger %d in %d charges, want two of 7900", total, n)
		}
		statuses := map[string]int{}
		for _, m := range f.messages(t, f.acme) {
			statuses[m.Status]++
		}
		if statuses["abandoned"] != 1 || statuses["sent"] != 2 || statuses["pending"] != 0 || statuses["scheduled"] != 0 {
			t.Errorf("messages by status %v, want two sent and the interrupted one abandoned", statuses)
		}
		if l := f.listScheduled(t, key, lineMain); len(l) != 0 {
			t.Errorf("still queued: %+v", l)
		}
	})
}
