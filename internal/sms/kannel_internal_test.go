package sms

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"switchboard/internal/carrier"
	"switchboard/internal/carrier/kannel"
)

const kannelTestSecret = "kannel-test-secret-0123456789"

// kannelHooks mounts a Kannel driver's callback handler on e's service, the
// way serve does, and returns a function that delivers one DLR to it.
func kannelHooks(t *testing.T, e *env, sendURL string, client *http.Client) (*kannel.Driver, func(id int64, typ int) int) {
	t.Helper()
	d, get := kannelCallbacks(t, e, sendURL, client)
	return d, func(id int64, typ int) int {
		return get("/dlr", url.Values{"id": {strconv.FormatInt(id, 10)}, "type": {strconv.Itoa(typ)}, "ts": {strconv.FormatInt(time.Now().Unix(), 10)}})
	}
}

// kannelCallbacks mounts a Kannel driver's callback handler on e's service,
// the way serve does, and returns a function that calls one callback (path
// /dlr or /inbound) with the query q and the secret, as Kannel does.
func kannelCallbacks(t *testing.T, e *env, sendURL string, client *http.Client) (*kannel.Driver, func(path string, q url.Values) int) {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	d, err := kannel.New(kannel.Config{
		SendURL: sendURL, Username: "sb", Password: "pw", Secret: kannelTestSecret,
		CallbackURL: "http://" + srv.Listener.Addr().String() + "/carrier/kannel", HTTPClient: client,
	})
	check(t, err)
	srv.Config.Handler = http.StripPrefix("/carrier/kannel", d.Handler(e.svc))
	srv.Start()
	t.Cleanup(srv.Close)
	return d, func(path string, q url.Values) int {
		q.Set("secret", kannelTestSecret)
		resp, err := http.Get(srv.URL + "/carrier/kannel" + path + "?" + q.Encode())
		check(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
}

// A text or a delivery report holding the NUL character (a UCS-2 text with
// a zero unit; GSM's '@' is 0x00 too) is stored, through the real callback
// handler and store, with U+FFFD in its place, on both engines. Before,
// PostgreSQL refused it: the callback answered 500 "not stored" and the
// customer's text was lost. So is a text that is not UTF-8 (the sim's
// inbound goes to the sink unchecked).
func TestCarrierTextWithNULIsStoredReplaced(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		_, get := kannelCallbacks(t, e, "http://127.0.0.1:1/cgi-bin/sendsms", nil)
		res, _, err := e.svc.Send(bg, e.p, e.request(), nil)
		check(t, err)
		id := res.Messages[0].ID
		if code := get("/dlr", url.Values{"id": {strconv.FormatInt(id, 10)}, "type": {"16"}, "reply": {"NACK\x00/0x45"}}); code != 200 {
			t.Fatalf("a failure report holding a NUL: %d, want 200", code)
		}
		if m := e.message(t, id); m.DeliveryStatus != "smsc_reject" || m.DeliveryError != "NACK\uFFFD/0x45" {
			t.Errorf("report stored as %q %q, want smsc_reject \"NACK\uFFFD/0x45\"", m.DeliveryStatus, m.DeliveryError)
		}

		// "h", NUL, "i" in UCS-2.
		if code := get("/inbound", url.Values{"from": {testTo}, "to": {testLine}, "text": {"\x00h\x00\x00\x00i"}, "charset": {"UTF-16BE"}}); code != 200 {
			t.Fatalf("an inbound text holding a NUL: %d, want 200", code)
		}
		check(t, e.svc.Inbound(bg, carrier.Inbound{From: testTo, To: testLine, Text: "caf\xe9\x00", Media: []string{"https://m.test/a\x00b"}}))
		var got, media []string
		for _, m := range e.messages(t) {
			if m.Direction == "in" {
				got = append(got, m.Body)
				media = append(media, m.Media...)
			}
		}
		if want := []string{"https://m.test/a\uFFFDb"}; !slices.Equal(media, want) {
			t.Errorf("inbound media stored as %q, want %q", media, want)
		}
		if want := []string{"h\uFFFDi", "caf\uFFFD\uFFFD"}; !slices.Equal(got, want) {
			t.Errorf("inbound texts stored as %q, want %q", got, want)
		}

		// The keyword is read as received: a NUL after STOP is a control
		// character it ignores, where U+FFFD would not be.
		if code := get("/inbound", url.Values{"from": {testTo}, "to": {testLine}, "text": {"STOP\x00"}}); code != 200 {
			t.Fatalf("STOP and a NUL: %d, want 200", code)
		}
		out, err := e.st.OptedOut(bg, e.line.ID, []string{testTo})
		check(t, err)
		if !out[testTo] {
			t.Errorf("STOP and a NUL did not opt %s out", testTo)
		}
	})
}

// Only a known final delivery status is final: a report type Kannel adds
// later (stored as "dlr_<n>") after "delivered" or "smsc_reject" is kept
// off the message, through the real DLR handler and store. Before, the
// unknown type overwrote the final status.
func TestUnknownReportAfterFinalKeepsFinal(t *testing.T) {
	eachEngine(t, func(t *testing.T, e *env) {
		_, dlr := kannelHooks(t, e, "http://127.0.0.1:1/cgi-bin/sendsms", nil)
		send := func() int64 {
			res, _, err := e.svc.Send(bg, e.p, e.request(), nil)
			check(t, err)
			return res.Messages[0].ID
		}
		for _, c := range []struct {
			final     int
			word      string
			later     []int
			wantEvent int
		}{
			{1, "delivered", []int{64, 8, 128}, 1},
			{16, "smsc_reject", []int{64, 4}, 1},
			{2, "undelivered", []int{32, 256}, 1},
		} {
			id := send()
			if code := dlr(id, c.final); code != 200 {
				t.Fatalf("DLR type %d: %d", c.final, code)
			}
			for _, typ := range c.later {
				if code := dlr(id, typ); code != 200 {
					t.Fatalf("DLR type %d: %d", typ, code)
				}
			}
			if m := e.message(t, id); m.DeliveryStatus != c.word {
				t.Errorf("%s then types %v: delivery %q, want %q kept", c.word, c.later, m.DeliveryStatus, c.word)
			}
			if n := e.events(t, "message.delivery", id); n != c.wantEvent {
				t.Errorf("%s then types %v: %d delivery events, want %d", c.word, c.later, n, c.wantEvent)
			}
		}

		// Before any final word, an unknown one is recorded (it is all we
		// know), and a final word still replaces it; a later final word
		// replaces an earlier one (the carrier changed its mind).
		id := send()
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: id, Status: "dlr_64"}))
		if m := e.message(t, id); m.DeliveryStatus != "dlr_64" {
			t.Errorf("unknown word first: %q, want dlr_64", m.DeliveryStatus)
		}
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: id, Status: "delivered"}))
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: id, Status: "dlr_64"}))
		if m := e.message(t, id); m.DeliveryStatus != "delivered" {
			t.Errorf("unknown, final, unknown: %q, want delivered", m.DeliveryStatus)
		}
		check(t, e.svc.Receipt(bg, carrier.Receipt{MessageID: id, Status: "undelivered", Error: "expired"}))
		if m := e.message(t, id); m.DeliveryStatus != "undelivered" {
			t.Errorf("a later final word: %q, want undelivered", m.DeliveryStatus)
		}
	})
}
