package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/internal/apitest"
	"switchboard/internal/auth"
	"switchboard/internal/blob"
	"switchboard/internal/carrier"
	"switchboard/internal/carrier/sim"
	"switchboard/internal/domain"
	"switchboard/internal/httpapi"
	"switchboard/internal/money"
	"switchboard/internal/sms"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/users"
	"switchboard/internal/webhooks"
)

const sendPath = "/api/public/v1/sms/messages"

// Numbers used by the send tests. All are valid according to libphonenumber
// unless named otherwise.
const (
	lineMain  = "14155550100" // acme, SMS
	lineBob   = "14155550101" // acme, SMS, assigned to Bob
	lineFax   = "14155550102" // acme, not SMS-capable
	lineBeta  = "12125550100" // beta, SMS
	usA       = "14155550123"
	usB       = "12125550123"
	ukLondon  = "442079460123" // rate prefix 4420 (longest match)
	ukMobile  = "447911123456" // rate prefix 44
	deBerlin  = "49301234567"  // rate prefix 49
	jpTokyo   = "81312345678"  // no rate
	frParis   = "33123456789"  // no rate
	notALine  = "14155550199"  // valid, but nobody's line
	usInvalid = "+1 555 123 4567"
)

// sendFixture is a running server with sending wired in: the sim carrier
// (receipts immediately, attached to the service), in-memory media and a rate
// card on each account.
type sendFixture struct {
	*fixture
	sim        *sim.Sim
	svc        *sms.Service
	media      *blob.Store
	acme, beta int64
	// fault is what svc.Fault calls; swapped atomically so a test can change
	// it while the server runs.
	fault atomic.Pointer[func(step string) error]
	// clock is the store's and svc's clock; nil: the wall clock.
	clock *storetest.Clock
}

func setupSend(t *testing.T, engine store.Engine) *sendFixture {
	t.Helper()
	return setupSendWith(t, engine, nil)
}

// setupSendWith is setupSend with a chance to adjust the handler's Config
// and the HTTP server before it starts.
func setupSendWith(t *testing.T, engine store.Engine, adjust func(*httpapi.Config, *http.Server)) *sendFixture {
	t.Helper()
	return setupSendOn(t, engine, nil, adjust)
}

// setupSendOn is setupSendWith with the store and the SMS service on clock
// (nil: the wall clock).
func setupSendOn(t *testing.T, engine store.Engine, clock *storetest.Clock, adjust func(*httpapi.Config, *http.Server)) *sendFixture {
	t.Helper()
	st := storetest.Open(t, engine)
	var now func() time.Time
	if clock != nil {
		now = clock.Now
		st.SetClock(now)
	}
	f := &sendFixture{fixture: &fixture{st: st, keys: map[string]string{}, users: map[string]domain.User{}, metrics: prometheus.NewRegistry()}, clock: clock}

	acme := storetest.Account(t, st, &storetest.AccountOpts{Name: "Acme Corp"})
	beta := storetest.Account(t, st, &storetest.AccountOpts{Name: "Beta LLC"})
	f.acme, f.beta = acme.ID, beta.ID

	for _, u := range []struct {
		account     int64
		first, last string
	}{
		{acme.ID, "Alice", "Smith"},
		{acme.ID, "Bob", "Jones"},
		{beta.ID, "Dave", "Other"},
	} {
		f.users[u.first] = storetest.User(t, st, u.account, &storetest.UserOpts{FirstName: u.first, LastName: u.last})
	}
	storetest.Line(t, st, acme.ID, &storetest.LineOpts{Number: lineMain, Name: "Main"})
	storetest.Line(t, st, acme.ID, &storetest.LineOpts{Number: lineBob, Name: "Bob's line", UserIDs: []int64{f.users["Bob"].ID}})
	storetest.Line(t, st, acme.ID, &storetest.LineOpts{Number: lineFax, Name: "Fax", NoSMS: true})
	storetest.Line(t, st, beta.ID, &storetest.LineOpts{Number: lineBeta})
	storetest.Rate(t, st, acme.ID, "1", "0.0079", "0.02")
	storetest.Rate(t, st, acme.ID, "44", "0.04", "0.10")
	storetest.Rate(t, st, acme.ID, "4420", "0.05", "0.12")
	storetest.Rate(t, st, acme.ID, "49", "0.06", "0.09")
	storetest.Rate(t, st, beta.ID, "1", "0.01", "0.03")
	_, f.keys["acme"] = storetest.Key(t, st, acme.ID)
	_, f.keys["acme-nosend"] = storetest.Key(t, st, acme.ID, auth.SMSRead, auth.SMSWrite)
	_, f.keys["beta"] = storetest.Key(t, st, beta.ID)

	media, err := blob.Open(ctx, "mem://")
	must(t, err)
	t.Cleanup(func() { media.Close() })
	f.media = media

	carrierSim := sim.New(sim.Config{ReceiptDelay: 0})
	t.Cleanup(func() { carrierSim.Close() })
	f.sim = carrierSim

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// The listener exists before the handler is built, so the media base URL
	// is known without a data race.
	srv := httptest.NewUnstartedServer(nil)
	base := "http://" + srv.Listener.Addr().String()
	f.svc = sms.New(sms.Config{
		Store:    st,
		Carrier:  carrierSim,
		Media:    media,
		MediaURL: func(name string) string { return media.URL(base+"/media/", name) },
		Log:      log,
		Fault: func(step string) error {
			if fn := f.fault.Load(); fn != nil {
				return (*fn)(step)
			}
			return nil
		},
		Now: now,
	})
	carrierSim.Attach(f.svc)
	cfg := httpapi.Config{
		Store:    st,
		Auth:     &auth.Authenticator{Store: st},
		Log:      log,
		SMS:      f.svc,
		Users:    users.New(users.Config{Store: st}),
		Webhooks: webhooks.New(webhooks.Config{Store: st}),
		Media:    media.Handler(),
		Registry: f.metrics,
	}
	if adjust != nil {
		adjust(&cfg, srv.Config)
	}
	srv.Config.Handler = httpapi.New(cfg)
	srv.Start()
	t.Cleanup(srv.Close)
	f.url = srv.URL
	if f.url != base {
		t.Fatalf("server URL %s, media base %s", f.url, base)
	}
	f.client = apitest.Client(t)
	return f
}

func forEachSendEngine(t *testing.T, fn func(t *testing.T, f *sendFixture)) {
	for _, e := range storetest.Engines(t) {
		t.Run(string(e), func(t *testing.T) {
			t.Parallel()
			fn(t, setupSend(t, e))
		})
	}
}

// setFault installs fn as the service's fault hook (nil removes it).
func (f *sendFixture) setFault(fn func(step string) error) {
	if fn == nil {
		f.fault.Store(nil)
		return
	}
	f.fault.Store(&fn)
}

// post sends POST /sms/messages with an optional Idempotency-Key.
func (f *sendFixture) post(t *testing.T, key, idem, body string) (int, http.Header, []byte) {
	t.Helper()
	status, h, b, err := f.postWith(f.client, key, idem, body)
	must(t, err)
	return status, h, b
}

// postWith is post without t, for goroutines and for requests that are
// expected to fail at the transport level.
func (f *sendFixture) postWith(c *http.Client, key, idem, body string) (int, http.Header, []byte, error) {
	req, err := http.NewRequest("POST", f.url+sendPath, strings.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// ledger returns the account's charged total and number of charges.
func (f *sendFixture) ledger(t *testing.T, account int64) (int64, int) {
	t.Helper()
	total, n, err := f.st.LedgerTotal(ctx, account)
	must(t, err)
	return total, n
}

// messages returns the account's messages by probing ids (the store has no
// listing): ids are sequential, so the probe stops after a run of misses.
func (f *sendFixture) messages(t *testing.T, account int64) []domain.Message {
	t.Helper()
	var out []domain.Message
	misses := 0
	for id := int64(1); misses < 30; id++ {
		m, err := f.st.Message(ctx, account, id)
		if domain.IsNotFound(err) {
			misses++
			continue
		}
		must(t, err)
		misses = 0
		out = append(out, m)
	}
	return out
}

// lastMessage returns the account's newest message.
func (f *sendFixture) lastMessage(t *testing.T, account int64) domain.Message {
	t.Helper()
	ms := f.messages(t, account)
	if len(ms) == 0 {
		t.Fatalf("account %d has no messages", account)
	}
	return ms[len(ms)-1]
}

type sendBody struct {
	From        string           `json:"from,omitempty"`
	To          []string         `json:"to,omitempty"`
	Message     string           `json:"message,omitempty"`
	Attachments []attachmentJSON `json:"attachments,omitempty"`
}

type attachmentJSON struct {
	Filename    string `json:"filename,omitempty"`
	ContentType string `json:"contentType,omitempty"`
	Content     string `json:"content,omitempty"`
}

func attach(name, contentType string, data []byte) attachmentJSON {
	return attachmentJSON{Filename: name, ContentType: contentType, Content: base64.StdEncoding.EncodeToString(data)}
}

func jsonBody(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	must(t, enc.Encode(v))
	return strings.TrimSuffix(b.String(), "\n")
}

// sendResult mirrors SendResult; prices stay JSON number text.
type sendResult struct {
	From    string `json:"from"`
	Billing struct {
		Billed         bool        `json:"billed"`
		Currency       string      `json:"currency"`
		Type           string      `json:"type"`
		Units          int         `json:"units"`
		TotalPrice     json.Number `json:"totalPrice"`
		RecipientCount int         `json:"recipientCount"`
		SkippedCount   int         `json:"skippedCount"`
	} `json:"billing"`
	Messages []struct {
		ID        int64       `json:"id"`
		To        []string    `json:"to"`
		Type      string      `json:"type"`
		Status    string      `json:"status"`
		Media     []string    `json:"media"`
		Units     int         `json:"units"`
		UnitPrice json.Number `json:"unitPrice"`
		Price     json.Number `json:"price"`
	} `json:"messages"`
	Skipped []skippedJSON `json:"skipped"`
}

type skippedJSON struct {
	To     string `json:"to"`
	Reason string `json:"reason"`
}

func decodeSend(t *testing.T, b []byte) sendResult {
	t.Helper()
	return decodeInto[struct {
		Data sendResult `json:"data"`
	}](t, b).Data
}

// --- Billing and segments ---------------------------------------------------

func TestSendBilling(t *testing.T) {
	t.Parallel()
	png := realImage(t, "image/png")
	emoji := "😀" // outside the BMP: 2 UTF-16 units
	twenty := make([]string, 20)
	for i := range twenty {
		twenty[i] = fmt.Sprintf("1415555%04d", 200+i)
	}
	tests := []struct {
		name        string
		to          []string
		message     string
		attachments []attachmentJSON
		wantType    string
		wantUnits   int
		wantUnit    string // unitPrice, as JSON text
		wantPrice   string // price and totalPrice, as JSON text
		wantTo      []string
	}{
		{"gsm 1 char", []string{usA}, "a", nil, "sms", 1, "0.0079", "0.0079", []string{usA}},
		{"gsm 160", []string{usA}, strings.Repeat("a", 160), nil, "sms", 1, "0.0079", "0.0079", []string{usA}},
		{"gsm 161", []string{usA}, strings.Repeat("a", 161), nil, "sms", 2, "0.0079", "0.0158", []string{usA}},
		{"gsm 306", []string{usA}, strings.Repeat("a", 306), nil, "sms", 2, "0.0079", "0.0158", []string{usA}},
		{"gsm 307", []string{usA}, strings.Repeat("a", 307), nil, "sms", 3, "0.0079", "0.0237", []string{usA}},
		{"gsm 2000 bytes", []string{usA}, strings.Repeat("a", 2000), nil, "sms", 14, "0.0079", "0.1106", []string{usA}},
		{"euro 80 (160 septets)", []string{usA}, strings.Repeat("€", 80), nil, "sms", 1, "0.0079", "0.0079", []string{usA}},
		{"euro 81 (162 septets)", []string{usA}, strings.Repeat("€", 81), nil, "sms", 2, "0.0079", "0.0158", []string{usA}},
		{"extension chars 80", []string{usA}, strings.Repeat(`[]{}\^~|`, 10), nil, "sms", 1, "0.0079", "0.0079", []string{usA}},
		{"extension chars 80 + 1", []string{usA}, strings.Repeat(`[]{}\^~|`, 10) + "a", nil, "sms", 2, "0.0079", "0.0158", []string{usA}},
		{"euro straddling a part's end starts the next", []string{usA}, strings.Repeat("a", 152) + "€" + strings.Repeat("a", 152), nil, "sms", 3, "0.0079", "0.0237", []string{usA}},
		{"emoji straddling a part's end starts the next", []string{usA}, strings.Repeat("ж", 66) + emoji + strings.Repeat("ж", 66), nil, "sms", 3, "0.0079", "0.0237", []string{usA}},
		{"greek capitals are gsm 160", []string{usA}, strings.Repeat("ΔΦΓΛΩΠΨΣΘΞ", 16), nil, "sms", 1, "0.0079", "0.0079", []string{usA}},
		{"lowercase greek is ucs-2", []string{usA}, "α" + strings.Repeat("a", 70), nil, "sms", 2, "0.0079", "0.0158", []string{usA}},
		{"gsm basic table accents 160", []string{usA}, strings.Repeat("é", 160), nil, "sms", 1, "0.0079", "0.0079", []string{usA}},
		{"emoji 70 units", []string{usA}, emoji + strings.Repeat("a", 68), nil, "sms", 1, "0.0079", "0.0079", []string{usA}},
		{"emoji 71 units", []string{usA}, emoji + strings.Repeat("a", 69), nil, "sms", 2, "0.0079", "0.0158", []string{usA}},
		{"emoji 134 units", []string{usA}, emoji + strings.Repeat("a", 132), nil, "sms", 2, "0.0079", "0.0158", []string{usA}},
		{"emoji 135 units", []string{usA}, emoji + strings.Repeat("a", 133), nil, "sms", 3, "0.0079", "0.0237", []string{usA}},
		{"curly quote 70", []string{usA}, "’" + strings.Repeat("a", 69), nil, "sms", 1, "0.0079", "0.0079", []string{usA}},
		{"curly quote 71", []string{usA}, "’" + strings.Repeat("a", 70), nil, "sms", 2, "0.0079", "0.0158", []string{usA}},
		{"uk london longest prefix 4420", []string{"+44 20 7946 0123"}, "hi", nil, "sms", 1, "0.05", "0.05", []string{ukLondon}},
		{"uk mobile prefix 44", []string{"+44 7911 123456"}, strings.Repeat("a", 161), nil, "sms", 2, "0.04", "0.08", []string{ukMobile}},
		{"germany", []string{"+49 30 1234567"}, strings.Repeat("a", 307), nil, "sms", 3, "0.06", "0.18", []string{deBerlin}},
		{"group of two us", []string{usA, usB}, "hi", nil, "mms", 1, "0.02", "0.02", []string{usA, usB}},
		{"group body length does not matter", []string{usA, usB}, strings.Repeat("a", 2000), nil, "mms", 1, "0.02", "0.02", []string{usA, usB}},
		{"group highest mms rate (4420 beats 44)", []string{usA, ukLondon}, "hi", nil, "mms", 1, "0.12", "0.12", []string{usA, ukLondon}},
		{"group highest of three", []string{deBerlin, usA, ukMobile}, "hi", nil, "mms", 1, "0.1", "0.1", []string{deBerlin, usA, ukMobile}},
		{"group of 20 not multiplied", twenty, "hi", nil, "mms", 1, "0.02", "0.02", twenty},
		{"one recipient with attachment", []string{usA}, strings.Repeat("a", 500), []attachmentJSON{attach("a.png", "image/png", png)}, "mms", 1, "0.02", "0.02", []string{usA}},
		{"attachment without message", []string{ukLondon}, "", []attachmentJSON{attach("a.png", "image/png", png)}, "mms", 1, "0.12", "0.12", []string{ukLondon}},
		{"attachment with whitespace-only message", []string{usA}, "  \n", []attachmentJSON{attach("a.png", "image/png", png)}, "mms", 1, "0.02", "0.02", []string{usA}},
	}
	forEachSendEngine(t, func(t *testing.T, f *sendFixture) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				total0, n0 := f.ledger(t, f.acme)
				count0 := f.sim.Count()
				body := jsonBody(t, sendBody{From: lineMain, To: tc.to, Message: tc.message, Attachments: tc.attachments})
				status, _, raw := f.post(t, f.keys["acme"], "", body)
				if status != 201 {
					t.Fatalf("status %d: %s", status, raw)
				}
				res := decodeSend(t, raw)
				b := res.Billing
				if res.From != lineMain || !b.Billed || b.Currency != "USD" || b.Type != tc.wantType || b.Units != tc.wantUnits ||
					b.TotalPrice.String() != tc.wantPrice || b.RecipientCount != len(tc.wantTo) || b.SkippedCount != 0 {
					t.Errorf("billing = %+v from %s, want type %s units %d totalPrice %s recipientCount %d", b, res.From, tc.wantType, tc.wantUnits, tc.wantPrice, len(tc.wantTo))
				}
				if len(res.Messages) != 1 {
					t.Fatalf("messages = %+v, want 1", res.Messages)
				}
				m := res.Messages[0]
				if m.ID <= 0 || !slices.Equal(m.To, tc.wantTo) || m.Type != tc.wantType || m.Status != "sent" || m.Units != tc.wantUnits ||
					m.UnitPrice.String() != tc.wantUnit || m.Price.String() != tc.wantPrice {
					t.Errorf("message = %+v, want to %v type %s units %d unitPrice %s price %s", m, tc.wantTo, tc.wantType, tc.wantUnits, tc.wantUnit, tc.wantPrice)
				}
				if len(res.Skipped) != 0 {
					t.Errorf("skipped = %+v", res.Skipped)
				}
				// Exact JSON text, not a float round trip.
				for _, want := range []string{`"price":` + tc.wantPrice, `"unitPrice":` + tc.wantUnit, `"totalPrice":` + tc.wantPrice} {
					if !strings.Contains(string(raw), want) {
						t.Errorf("body lacks %s: %s", want, raw)
					}
				}
				if (len(tc.attachments) > 0) != (len(m.Media) > 0) || len(m.Media) != len(tc.attachments) {
					t.Errorf("media = %v, want %d URLs", m.Media, len(tc.attachments))
				}
				// Charged exactly once, exactly the price.
				want := storetest.Money(t, tc.wantPrice)
				total, n := f.ledger(t, f.acme)
				if n != n0+1 || money.Micros(total-total0) != want {
					t.Errorf("ledger moved by %s in %d rows, want %s in 1", money.Micros(total-total0), n-n0, want)
				}
				if f.sim.Count() != count0+1 {
					t.Errorf("carrier got %d messages, want 1", f.sim.Count()-count0)
				}
				stored, err := f.st.Message(ctx, f.acme, m.ID)
				must(t, err)
				if stored.Status != domain.StatusSent || stored.Type != tc.wantType || stored.Units != tc.wantUnits || stored.Price != want ||
					stored.Direction != "out" || !slices.Equal(stored.To, tc.wantTo) || stored.Body != tc.message || len(stored.Media) != len(tc.attachments) {
					t.Errorf("stored = %+v", stored)
				}
				sent := f.sim.Sent()
				last := sent[len(sent)-1]
				if last.ID != m.ID || last.From != lineMain || !slices.Equal(last.To, tc.wantTo) || last.Text != tc.message || !slices.Equal(last.Media, m.Media) {
					t.Errorf("carrier got %+v", last)
				}
			})
		}
	})
}

// --- Normalization and skips ----------------------------------------------

func TestSendNormalizationAndSkips(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		to       []string
		wantTo   []string
		wantType string
		wantSkip []skippedJSON
	}{
		{"formatting stripped", []string{"+1 (415) 555-0123"}, []string{usA}, "sms", nil},
		{"dots and slashes", []string{"415.555.0123"}, []string{usA}, "sms", nil},
		{"non-breaking spaces", []string{"415\u00a0555\u00a00123"}, []string{usA}, "sms", nil},
		{"ten digits get a 1", []string{"4155550123"}, []string{usA}, "sms", nil},
		{"international as given", []string{"+44 (20) 7946-0123"}, []string{ukLondon}, "sms", nil},
		{"duplicates after normalization", []string{"(415) 555-0123", "4155550123", "+1 415 555 0123", usA},
			[]string{usA}, "sms",
			[]skippedJSON{{"4155550123", "duplicate"}, {"+1 415 555 0123", "duplicate"}, {usA, "duplicate"}}},
		{"duplicates leave one recipient: sms", []string{usA, "415-555-0123"}, []string{usA}, "sms",
			[]skippedJSON{{"415-555-0123", "duplicate"}}},
		{"invalid entries", []string{"123", usA, "abc", usInvalid, "", "+4155550123", "4930123456"},
			[]string{usA}, "sms",
			[]skippedJSON{{"123", "invalid"}, {"abc", "invalid"}, {usInvalid, "invalid"}, {"", "invalid"}, {"+4155550123", "invalid"}, {"4930123456", "invalid"}}},
		{"group with duplicates and invalid", []string{usA, "(212) 555-0123", "12125550123", "letters1234"},
			[]string{usA, usB}, "mms",
			[]skippedJSON{{"12125550123", "duplicate"}, {"letters1234", "invalid"}}},
		{"100 raw entries, one distinct", slices.Repeat([]string{"4155550123"}, 100), []string{usA}, "sms",
			slices.Repeat([]skippedJSON{{"4155550123", "duplicate"}}, 99)},
	}
	forEachSendEngine(t, func(t *testing.T, f *sendFixture) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				status, _, raw := f.post(t, f.keys["acme"], "", jsonBody(t, sendBody{From: lineMain, To: tc.to, Message: "hello"}))
				if status != 201 {
					t.Fatalf("status %d: %s", status, raw)
				}
				res := decodeSend(t, raw)
				if len(res.Messages) != 1 || !slices.Equal(res.Messages[0].To, tc.wantTo) || res.Messages[0].Type != tc.wantType {
					t.Fatalf("messages = %+v, want to %v type %s", res.Messages, tc.wantTo, tc.wantType)
				}
				if !slices.Equal(res.Skipped, tc.wantSkip) && !(len(res.Skipped) == 0 && len(tc.wantSkip) == 0) {
					t.Errorf("skipped = %+v, want %+v (request order)", res.Skipped, tc.wantSkip)
				}
				if res.Billing.SkippedCount != len(tc.wantSkip) || res.Billing.RecipientCount != len(tc.wantTo) || res.Billing.Type != tc.wantType {
					t.Errorf("billing = %+v", res.Billing)
				}
			})
		}
		t.Run("20 distinct plus duplicates and invalid", func(t *testing.T) {
			var to []string
			for i := range 20 {
				to = append(to, fmt.Sprintf("(415) 555-%04d", 300+i))
			}
			to = append(to, to[0], fmt.Sprintf("1415555%04d", 300), "123")
			status, _, raw := f.post(t, f.keys["acme"], "", jsonBody(t, sendBody{From: lineMain, To: to, Message: "hi"}))
			if status != 201 {
				t.Fatalf("status %d: %s", status, raw)
			}
			res := decodeSend(t, raw)
			if res.Billing.RecipientCount != 20 || res.Billing.SkippedCount != 3 || len(res.Messages[0].To) != 20 || res.Billing.TotalPrice.String() != "0.02" {
				t.Errorf("billing = %+v, to = %v", res.Billing, res.Messages[0].To)
			}
		})
	})
}

// --- Opt-out (STOP / START) --------------------------------------------------

func TestSendOptOut(t *testing.T) {
	t.Parallel()
	forEachSendEngine(t, func(t *testing.T, f *sendFixture) {
		key := f.keys["acme"]
		send := func(t *testing.T, from string, to ...string) (int, sendResult, []byte) {
			t.Helper()
			status, _, raw := f.post(t, key, "", jsonBody(t, sendBody{From: from, To: to, Message: "hello"}))
			if status != 200 && status != 201 {
				t.Fatalf("status %d: %s", status, raw)
			}
			return status, decodeSend(t, raw), raw
		}
		// Before STOP the number can be texted.
		if status, _, raw := send(t, lineMain, usA); status != 201 {
			t.Fatalf("before STOP: %d %s", status, raw)
		}
		// usA texts "Stop." (case and trailing punctuation are tolerated) to the main line.
		must(t, f.sim.Inject(ctx, carrier.Inbound{From: usA, To: lineMain, Text: " Stop. "}))

		total0, n0 := f.ledger(t, f.acme)
		count0 := f.sim.Count()
		status, res, raw := send(t, lineMain, "(415) 555-0123")
		if status != 200 {
			t.Fatalf("after STOP: status %d, want 200: %s", status, raw)
		}
		b := res.Billing
		if len(res.Messages) != 0 || b.TotalPrice.String() != "0" || b.RecipientCount != 0 || b.Units != 0 || b.SkippedCount != 1 ||
			b.Type != "sms" || !b.Billed || b.Currency != "USD" {
			t.Errorf("all skipped: %s", raw)
		}
		if !strings.Contains(string(raw), `"messages":[]`) || !strings.Contains(string(raw), `"totalPrice":0,`) {
			t.Errorf("messages must be [] and totalPrice 0: %s", raw)
		}
		if want := []skippedJSON{{"(415) 555-0123", "opted_out"}}; !slices.Equal(res.Skipped, want) {
			t.Errorf("skipped = %+v, want %+v", res.Skipped, want)
		}
		if total, n := f.ledger(t, f.acme); total != total0 || n != n0 || f.sim.Count() != count0 {
			t.Errorf("an all-skipped send charged or sent: ledger %d/%d → %d/%d, carrier %d → %d", total0, n0, total, n, count0, f.sim.Count())
		}

		// The opt-out is per line: another line of the account may still text them.
		if status, _, raw := send(t, lineBob, usA); status != 201 {
			t.Errorf("other line: %d %s", status, raw)
		}

		// A group with the opted-out number: the rest is sent; one left is an sms.
		status, res, raw = send(t, lineMain, usA, usB)
		if status != 201 || len(res.Messages) != 1 || !slices.Equal(res.Messages[0].To, []string{usB}) || res.Billing.Type != "sms" ||
			res.Billing.RecipientCount != 1 || res.Billing.SkippedCount != 1 || res.Billing.TotalPrice.String() != "0.0079" {
			t.Errorf("group with opted-out member: %d %s", status, raw)
		}
		if want := []skippedJSON{{usA, "opted_out"}}; !slices.Equal(res.Skipped, want) {
			t.Errorf("skipped = %+v, want %+v", res.Skipped, want)
		}

		// Skips are listed in request order (docs/decisions.md), whatever the
		// reason; the first occurrence of a number is the one used, so a later
		// copy of an opted-out number is a duplicate.
		status, res, raw = send(t, lineMain, usA, "123", usB, "415-555-0123")
		if status != 201 || len(res.Messages) != 1 || !slices.Equal(res.Messages[0].To, []string{usB}) || res.Billing.SkippedCount != 3 {
			t.Errorf("mixed skips: %d %s", status, raw)
		}
		if want := []skippedJSON{{usA, "opted_out"}, {"123", "invalid"}, {"415-555-0123", "duplicate"}}; !slices.Equal(res.Skipped, want) {
			t.Errorf("skipped = %+v, want request order %+v", res.Skipped, want)
		}

		// A one-recipient send with an attachment to the opted-out number is skipped too (mms model, nothing uploaded or charged).
		status, _, raw = f.post(t, key, "", jsonBody(t, sendBody{From: lineMain, To: []string{usA}, Attachments: []attachmentJSON{attach("a.gif", "image/gif", realImage(t, "image/gif"))}}))
		if res := decodeSend(t, raw); status != 200 || len(res.Messages) != 0 || res.Billing.TotalPrice.String() != "0" || res.Billing.Units != 0 || res.Billing.Type != "mms" {
			t.Errorf("attachment to opted-out: %d %s", status, raw)
		}

		// START opts back in.
		must(t, f.sim.Inject(ctx, carrier.Inbound{From: "+1 415 555 0123", To: lineMain, Text: "START"}))
		if status, _, raw := send(t, lineMain, usA); status != 201 {
			t.Errorf("after START: %d %s", status, raw)
		}

		// Every opt-out keyword, and only a whole-body keyword, opts out; START and UNSTOP opt back in.
		for i, tc := range []struct {
			text string
			out  bool
		}{
			{"STOP", true}, {"stopall", true}, {"Unsubscribe", true}, {"CANCEL!", true}, {"end", true}, {"QUIT", true},
			{"please stop", false}, {"STOP texting me", false}, {"stopp", false}, {"hello", false},
		} {
			number := fmt.Sprintf("1212555%04d", 500+i)
			must(t, f.sim.Inject(ctx, carrier.Inbound{From: number, To: lineMain, Text: tc.text}))
			status, res, raw := send(t, lineMain, number)
			if gotOut := status == 200 && len(res.Skipped) == 1 && res.Skipped[0].Reason == "opted_out"; gotOut != tc.out {
				t.Errorf("after %q: %d %s, want opted out %v", tc.text, status, raw, tc.out)
			}
			if tc.out {
				back := "UNSTOP"
				if i%2 == 0 {
					back = "start."
				}
				must(t, f.sim.Inject(ctx, carrier.Inbound{From: number, To: lineMain, Text: back}))
				if status, _, raw := send(t, lineMain, number); status != 201 {
					t.Errorf("after %q then %q: %d %s, want 201", tc.text, back, status, raw)
				}
			}
		}

		// Invalid-only is all skipped too.
		status, res, raw = send(t, lineMain, "123", "abc")
		if status != 200 || len(res.Messages) != 0 || res.Billing.RecipientCount != 0 || res.Billing.SkippedCount != 2 || res.Billing.Units != 0 || res.Billing.Type != "sms" {
			t.Errorf("invalid only: %d %s", status, raw)
		}
	})
}

// --- Validation ----------------------------------------------------------------

func TestSendValidation(t *testing.T) {
	t.Parallel()
	valid := func(mod func(*sendBody)) func(t *testing.T) string {
		return func(t *testing.T) string {
			b := sendBody{From: lineMain, To: []string{usA}, Message: "hello"}
			mod(&b)
			return jsonBody(t, b)
		}
	}
	raw := func(s string) func(t *testing.T) string { return func(*testing.T) string { return s } }
	distinct := func(n int) []string {
		var to []string
		for i := range n {
			to = append(to, fmt.Sprintf("1415555%04d", 400+i))
		}
		return to
	}
	small := attach("a.png", "image/png", realImage(t, "image/png"))
	tests := []struct {
		name  string
		body  func(t *testing.T) string
		field string // the message must name it
	}{
		{"missing from", valid(func(b *sendBody) { b.From = "" }), "from"},
		{"missing to", valid(func(b *sendBody) { b.To = nil }), "to"},
		{"empty to", raw(`{"from":"` + lineMain + `","to":[],"message":"hi"}`), "to"},
		{"21 distinct recipients", valid(func(b *sendBody) { b.To = distinct(21) }), "to"},
		{"101 raw entries", valid(func(b *sendBody) { b.To = slices.Repeat([]string{usA}, 101) }), "to"},
		{"message 2001 bytes", valid(func(b *sendBody) { b.Message = strings.Repeat("a", 2001) }), "message"},
		{"message 2001 bytes in 1001 characters", valid(func(b *sendBody) { b.Message = strings.Repeat("é", 1000) + "a" }), "message"},
		{"whitespace-only message", valid(func(b *sendBody) { b.Message = " \t\n " }), "message"},
		{"no message and no attachments", valid(func(b *sendBody) { b.Message = "" }), "message"},
		{"11 attachments", valid(func(b *sendBody) { b.Attachments = slices.Repeat([]attachmentJSON{small}, 11) }), "attachments"},
		{"filename without extension", valid(func(b *sendBody) {
			b.Attachments = []attachmentJSON{attach("photo", "image/png", realImage(t, "image/png"))}
		}), "filename"},
		{"filename ending in a dot", valid(func(b *sendBody) {
			b.Attachments = []attachmentJSON{attach("photo.", "image/png", realImage(t, "image/png"))}
		}), "filename"},
		{"missing filename", valid(func(b *sendBody) {
			b.Attachments = []attachmentJSON{attach("", "image/png", realImage(t, "image/png"))}
		}), "filename"},
		{"bad contentType", valid(func(b *sendBody) {
			b.Attachments = []attachmentJSON{attach("a.webp", "image/webp", realImage(t, "image/png"))}
		}), "contentType"},
		{"html contentType", valid(func(b *sendBody) { b.Attachments = []attachmentJSON{attach("a.html", "text/html", []byte("<b>"))} }), "contentType"},
		{"missing contentType", valid(func(b *sendBody) { b.Attachments = []attachmentJSON{attach("a.png", "", realImage(t, "image/png"))} }), "contentType"},
		// The content must be what its contentType says (the file's signature).
		{"HTML declared image/png", valid(func(b *sendBody) {
			b.Attachments = []attachmentJSON{attach("a.png", "image/png", realImage(t, "image/png")), attach("page.html", "image/png", []byte("<html><script>alert(1)</script>"))}
		}), `attachments[1].content ("page.html") is not image/png`},
		{"SVG declared image/png", valid(func(b *sendBody) {
			b.Attachments = []attachmentJSON{attach("a.svg", "image/png", []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`))}
		}), "attachments[0].content"},
		{"JPEG declared image/png", valid(func(b *sendBody) {
			b.Attachments = []attachmentJSON{attach("a.png", "image/png", realImage(t, "image/jpeg"))}
		}), "attachments[0].content"},
		{"PNG declared image/gif", valid(func(b *sendBody) {
			b.Attachments = []attachmentJSON{attach("a.gif", "image/gif", realImage(t, "image/png"))}
		}), "image/gif"},
		{"text declared image/bmp", valid(func(b *sendBody) { b.Attachments = []attachmentJSON{attach("a.bmp", "image/bmp", []byte("hello"))} }), "image/bmp"},
		{"truncated PNG signature", valid(func(b *sendBody) { b.Attachments = []attachmentJSON{attach("a.png", "image/png", []byte("\x89PNG"))} }), "image/png"},
		{"non-base64 content", valid(func(b *sendBody) {
			b.Attachments = []attachmentJSON{{Filename: "a.png", ContentType: "image/png", Content: "not base64!!"}}
		}), "content"},
		{"url-safe base64 content", valid(func(b *sendBody) {
			b.Attachments = []attachmentJSON{{Filename: "a.png", ContentType: "image/png", Content: "-_-_"}}
		}), "content"},
		{"base64 wrapped in lines (MIME, not standard)", valid(func(b *sendBody) {
			b.Attachments = []attachmentJSON{{Filename: "a.png", ContentType: "image/png", Content: "aGVs\r\nbG8="}}
		}), "content"},
		{"missing content", valid(func(b *sendBody) { b.Attachments = []attachmentJSON{{Filename: "a.png", ContentType: "image/png"}} }), "content"},
		{"5 MiB + 1 decoded", valid(func(b *sendBody) {
			b.Attachments = []attachmentJSON{attach("big.jpg", "image/jpeg", paddedImage(t, "image/jpeg", 5*1024*1024+1))}
		}), "content"},
		{"unknown field", raw(`{"from":"` + lineMain + `","to":["` + usA + `"],"message":"hi","priority":"high"}`), "priority"},
		{"unknown attachment field", raw(`{"from":"` + lineMain + `","to":["` + usA + `"],"attachments":[{"filename":"a.png","contentType":"image/png","content":"eA==","url":"x"}]}`), "url"},
		{"field name in another case", raw(`{"from":"` + lineMain + `","to":["` + usA + `"],"Message":"hi"}`), "Message"},
		{"trailing data", raw(`{"from":"` + lineMain + `","to":["` + usA + `"],"message":"hi"} {}`), ""},
		{"trailing garbage", raw(`{"from":"` + lineMain + `","to":["` + usA + `"],"message":"hi"}x`), ""},
		{"to is a string", raw(`{"from":"` + lineMain + `","to":"` + usA + `","message":"hi"}`), "to"},
		{"message is a number", raw(`{"from":"` + lineMain + `","to":["` + usA + `"],"message":5}`), "message"},
		{"from is a number", raw(`{"from":14155550100,"to":["` + usA + `"],"message":"hi"}`), "from"},
		{"null recipient", raw(`{"from":"` + lineMain + `","to":[null],"message":"hi"}`), "to[0]"},
		{"null among recipients", raw(`{"from":"` + lineMain + `","to":["` + usA + `",null],"message":"hi"}`), "to[1]"},
		{"null attachment", raw(`{"from":"` + lineMain + `","to":["` + usA + `"],"attachments":[null]}`), "attachments[0]"},
		{"key given twice", raw(`{"from":"19999999999","from":"` + lineMain + `","to":["` + usA + `"],"message":"hi"}`), "from"},
		{"attachment key given twice", raw(`{"from":"` + lineMain + `","to":["` + usA + `"],"attachments":[{"filename":"a.png","filename":"b.png","contentType":"image/png","content":"eA=="}]}`), "attachments[0].filename"},
		{"invalid UTF-8 in message", raw(`{"from":"` + lineMain + `","to":["` + usA + `"],"message":"caf` + "\xe9" + `"}`), "UTF-8"},
		{"unpaired high surrogate escape", raw(`{"from":"` + lineMain + `","to":["` + usA + `"],"message":"a\ud800b"}`), "surrogate"},
		{"unpaired low surrogate escape", raw(`{"from":"` + lineMain + `","to":["` + usA + `"],"message":"a\udc00"}`), "surrogate"},
		{"high surrogate escape at the end", raw(`{"from":"` + lineMain + `","to":["` + usA + `"],"message":"\ud83d"}`), "surrogate"},
		{"body is an array", raw(`[]`), ""},
		{"unparseable JSON", raw(`{"from":"` + lineMain + `","to":[`), ""},
		{"not JSON at all", raw(`from=1&to=2`), ""},
		{"empty body", raw(``), ""},
	}
	forEachSendEngine(t, func(t *testing.T, f *sendFixture) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				total0, n0 := f.ledger(t, f.acme)
				count0 := f.sim.Count()
				msgs0 := len(f.messages(t, f.acme))
				var status int
				var body []byte
				if b := tc.body(t); b == "" {
					status, _, body = f.do(t, "POST", sendPath, f.keys["acme"], "")
				} else {
					status, _, body = f.post(t, f.keys["acme"], "", b)
				}
				e := decodeInto[errorEnvelope](t, body)
				if status != 400 || e.Error.Type != "invalid_request" {
					t.Fatalf("got %d %s, want 400 invalid_request", status, body)
				}
				if tc.field != "" && !strings.Contains(e.Error.Message, tc.field) {
					t.Errorf("message %q does not name %s", e.Error.Message, tc.field)
				}
				total, n := f.ledger(t, f.acme)
				if total != total0 || n != n0 || f.sim.Count() != count0 || len(f.messages(t, f.acme)) != msgs0 {
					t.Errorf("a rejected request sent, stored or charged something")
				}
			})
		}
		// The limits themselves are accepted.
		t.Run("at the limits", func(t *testing.T) {
			for name, b := range map[string]sendBody{
				"2000 bytes":          {From: lineMain, To: []string{usA}, Message: strings.Repeat("é", 1000)},
				"20 distinct":         {From: lineMain, To: distinct(20), Message: "hi"},
				"10 attachments":      {From: lineMain, To: []string{usA}, Attachments: slices.Repeat([]attachmentJSON{small}, 10)},
				"5 MiB decoded":       {From: lineMain, To: []string{usA}, Attachments: []attachmentJSON{attach("big.jpg", "image/jpeg", paddedImage(t, "image/jpeg", 5*1024*1024))}},
				"uppercase extension": {From: lineMain, To: []string{usA}, Attachments: []attachmentJSON{attach("PHOTO.JPG", "image/jpeg", realImage(t, "image/jpeg"))}},
				"bmp":                 {From: lineMain, To: []string{usA}, Attachments: []attachmentJSON{attach("a.bmp", "image/bmp", realImage(t, "image/bmp"))}},
				// The blob store's own sidecar suffix: hosted names never come from the client's filename.
				"filename a.attrs":        {From: lineMain, To: []string{usA}, Attachments: []attachmentJSON{attach("a.attrs", "image/png", realImage(t, "image/png"))}},
				"filename X.ATTRS":        {From: lineMain, To: []string{usA}, Attachments: []attachmentJSON{attach("X.ATTRS", "image/gif", realImage(t, "image/gif"))}},
				"formatted from":          {From: "+1 (415) 555-0100", To: []string{usA}, Message: "hi"},
				"line assigned to a user": {From: lineBob, To: []string{usA}, Message: "hi"},
			} {
				status, _, body := f.post(t, f.keys["acme"], "", jsonBody(t, b))
				if status != 201 {
					t.Errorf("%s: %d %.300s", name, status, body)
				} else if res := decodeSend(t, body); name == "formatted from" && res.From != lineMain {
					t.Errorf("from = %s, want %s", res.From, lineMain)
				}
			}
		})
	})
}

// TestSendEscapesKeptExact checks the escapes that must reach the message as
// written: a surrogate pair is one emoji (and is priced as one), and an
// escaped backslash before "u" is text, not an escape.
func TestSendEscapesKeptExact(t *testing.T) {
	t.Parallel()
	forEachSendEngine(t, func(t *testing.T, f *sendFixture) {
		for _, tc := range []struct{ json, want string }{
			{`\ud83d\ude00 hi`, "😀 hi"},
			{`\\ud800 is text`, `\ud800 is text`},
			{`\u00e9t\u00E9`, "été"},
		} {
			body := `{"from":"` + lineMain + `","to":["` + usA + `"],"message":"` + tc.json + `"}`
			status, _, raw := f.post(t, f.keys["acme"], "", body)
			if status != 201 {
				t.Fatalf("%s: %d %s", tc.json, status, raw)
			}
			if got := f.lastMessage(t, f.acme).Body; got != tc.want {
				t.Errorf("%s: stored %q, want %q", tc.json, got, tc.want)
			}
		}
	})
}

// TestSendBodyDeclaredTooLarge checks that a body whose Content-Length is over
// the limit is refused before it is read: the client never sends a byte of it.
func TestSendBodyDeclaredTooLarge(t *testing.T) {
	t.Parallel()
	f := setupSend(t, store.SQLite)
	for _, idem := range []string{"", "k-too-large"} {
		pr, pw := io.Pipe() // nothing is ever written: reading it would hang
		req, err := http.NewRequest("POST", f.url+sendPath, pr)
		must(t, err)
		req.ContentLength = 72<<20 + 1
		req.Header.Set("Authorization", "Bearer "+f.keys["acme"])
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		c := apitest.Client(t)
		c.Timeout = 10 * time.Second
		resp, err := c.Do(req)
		pw.Close()
		if err != nil {
			t.Fatalf("Idempotency-Key %q: %v (the server read the body instead of refusing it)", idem, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 413 || !strings.Contains(string(b), "invalid_request") {
			t.Errorf("Idempotency-Key %q: %d %s, want 413 invalid_request", idem, resp.StatusCode, b)
		}
	}
}

// --- Authentication and permissions --------------------------------------------

func TestSendPermissions(t *testing.T) {
	t.Parallel()
	digits := regexp.MustCompile(`[0-9]+`)
	forEachSendEngine(t, func(t *testing.T, f *sendFixture) {
		tests := []struct {
			name, key, from string
			wantStatus      int
			wantType        string
			wantScope       string
		}{
			{"from not a line", "acme", notALine, 403, "permission_denied", ""},
			{"from another account's line", "acme", lineBeta, 403, "permission_denied", ""},
			{"from another account's line, formatted", "acme", "(212) 555-0100", 403, "permission_denied", ""},
			{"from a line that cannot text", "acme", lineFax, 403, "permission_denied", ""},
			{"from garbage", "acme", "main line", 403, "permission_denied", ""},
			{"from as +-prefixed ten digits is not guessed", "acme", "+4155550100", 403, "permission_denied", ""},
			{"from without its country code is not guessed", "acme", "4155550100", 403, "permission_denied", ""},
			{"formatted from without its country code is not guessed", "acme", "(415) 555-0100", 403, "permission_denied", ""},
			{"beta key, acme line", "beta", lineMain, 403, "permission_denied", ""},
			{"key without sms:send", "acme-nosend", lineMain, 403, "insufficient_scope", "sms:send"},
			{"no credential", "", lineMain, 401, "unauthenticated", ""},
		}
		var denied []string
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				total0, n0 := f.ledger(t, f.acme)
				betaTotal0, betaN0 := f.ledger(t, f.beta)
				count0 := f.sim.Count()
				status, h, body := f.post(t, f.keys[tc.key], "", jsonBody(t, sendBody{From: tc.from, To: []string{usA}, Message: "hi"}))
				e := decodeInto[errorEnvelope](t, body)
				if status != tc.wantStatus || e.Error.Type != tc.wantType || e.Error.Scope != tc.wantScope || e.Error.Message == "" {
					t.Fatalf("got %d %s, want %d %s scope %q", status, body, tc.wantStatus, tc.wantType, tc.wantScope)
				}
				if tc.wantStatus == 401 || tc.wantType == "insufficient_scope" {
					if ch := h.Get("WWW-Authenticate"); !strings.Contains(ch, `scope="sms:send"`) {
						t.Errorf("WWW-Authenticate = %q, want scope sms:send", ch)
					}
				}
				if tc.wantType == "permission_denied" && tc.key == "acme" {
					denied = append(denied, digits.ReplaceAllString(e.Error.Message, "N"))
				}
				total, n := f.ledger(t, f.acme)
				betaTotal, betaN := f.ledger(t, f.beta)
				if total != total0 || n != n0 || betaTotal != betaTotal0 || betaN != betaN0 || f.sim.Count() != count0 {
					t.Errorf("a refused request sent or charged something")
				}
			})
		}
		// Another account's line is indistinguishable from a number that is nobody's.
		if len(denied) >= 2 && denied[0] != denied[1] {
			t.Errorf("another account's line answers %q, a stranger's number %q: the difference reveals the line exists", denied[1], denied[0])
		}
		if strings.Contains(strings.Join(denied, " "), "Beta") {
			t.Errorf("denial mentions the other account: %v", denied)
		}
	})
}

// --- Unpriced destinations ---------------------------------------------------

func TestSendNoRate(t *testing.T) {
	t.Parallel()
	forEachSendEngine(t, func(t *testing.T, f *sendFixture) {
		for _, tc := range []struct {
			name string
			to   []string
		}{
			{"japan", []string{"+81 3 1234 5678"}},
			{"france in a group", []string{usA, frParis}},
			{"unpriced first", []string{jpTokyo, usA, usB}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				total0, n0 := f.ledger(t, f.acme)
				count0 := f.sim.Count()
				msgs0 := len(f.messages(t, f.acme))
				status, _, body := f.post(t, f.keys["acme"], "", jsonBody(t, sendBody{From: lineMain, To: tc.to, Message: "hi"}))
				e := decodeInto[errorEnvelope](t, body)
				if status != 422 || e.Error.Type != "invalid_request" || e.Error.Message == "" {
					t.Fatalf("got %d %s, want 422 invalid_request", status, body)
				}
				total, n := f.ledger(t, f.acme)
				if total != total0 || n != n0 || f.sim.Count() != count0 || len(f.messages(t, f.acme)) != msgs0 {
					t.Errorf("an unpriced send was sent, stored or charged")
				}
			})
		}
		// Beta has no rate for the UK: its own card applies, not acme's.
		status, _, body := f.post(t, f.keys["beta"], "", jsonBody(t, sendBody{From: lineBeta, To: []string{ukLondon}, Message: "hi"}))
		if status != 422 {
			t.Errorf("beta to the UK: %d %s, want 422", status, body)
		}
		status, _, body = f.post(t, f.keys["beta"], "", jsonBody(t, sendBody{From: lineBeta, To: []string{usA}, Message: "hi"}))
		if res := decodeSend(t, body); status != 201 || res.Billing.TotalPrice.String() != "0.01" {
			t.Errorf("beta to the US: %d %s, want 201 at beta's 0.01", status, body)
		}
	})
}

// --- Carrier failure ----------------------------------------------------------------

func TestSendCarrierFailure(t *testing.T) {
	t.Parallel()
	forEachSendEngine(t, func(t *testing.T, f *sendFixture) {
		check503 := func(t *testing.T, body sendBody, wantTo []string) {
			t.Helper()
			total0, n0 := f.ledger(t, f.acme)
			count0 := f.sim.Count()
			status, _, raw := f.post(t, f.keys["acme"], "", jsonBody(t, body))
			e := decodeInto[errorEnvelope](t, raw)
			if status != 503 || e.Error.Type != "unavailable" {
				t.Fatalf("got %d %s, want 503 unavailable", status, raw)
			}
			total, n := f.ledger(t, f.acme)
			if total != total0 || n != n0 || f.sim.Count() != count0 {
				t.Errorf("a refused message was charged or counted as sent")
			}
			m := f.lastMessage(t, f.acme)
			if m.Status != domain.StatusFailed || !slices.Equal(m.To, wantTo) {
				t.Errorf("stored message = %+v, want status failed to %v", m, wantTo)
			}
		}
		t.Run("destination refused", func(t *testing.T) {
			f.sim.FailDestinations("1212")
			defer f.sim.FailDestinations()
			check503(t, sendBody{From: lineMain, To: []string{usB}, Message: "hi"}, []string{usB})
			check503(t, sendBody{From: lineMain, To: []string{usA, usB}, Message: "hi"}, []string{usA, usB})
		})
		t.Run("carrier down", func(t *testing.T) {
			f.sim.SetDown(true)
			check503(t, sendBody{From: lineMain, To: []string{usA}, Message: "hi"}, []string{usA})
			check503(t, sendBody{From: lineMain, To: []string{usA}, Attachments: []attachmentJSON{attach("a.png", "image/png", realImage(t, "image/png"))}}, []string{usA})
			f.sim.SetDown(false)
			status, _, raw := f.post(t, f.keys["acme"], "", jsonBody(t, sendBody{From: lineMain, To: []string{usA}, Message: "hi"}))
			if status != 201 {
				t.Errorf("after recovery: %d %s", status, raw)
			}
		})
		t.Run("no events for refused messages", func(t *testing.T) {
			evs, err := f.st.Events(ctx, f.acme, 0, 1000)
			must(t, err)
			failed := map[int64]bool{}
			for _, m := range f.messages(t, f.acme) {
				if m.Status == domain.StatusFailed {
					failed[m.ID] = true
				}
			}
			for _, ev := range evs {
				p := decodeInto[smsEventJSON](t, ev.Payload)
				if failed[p.MessageID] {
					t.Errorf("event for a refused message: %s", ev.Payload)
				}
			}
		})
	})
}

// --- Media --------------------------------------------------------------------------

func TestSendMedia(t *testing.T) {
	t.Parallel()
	files := []struct {
		name, contentType string
		data              []byte
	}{
		{"one.png", "image/png", []byte("\x89PNG\r\n\x1a\nfirst")},
		{"two.JPG", "image/jpeg", []byte("\xff\xd8\xff\xe0second")},
		{"three.gif", "image/gif", []byte("GIF89a third")},
		{"four.bmp", "image/bmp", []byte("BM fourth <html>")},
		// Names the client chose are not the hosted names' extensions.
		{"five.html", "image/png", realImage(t, "image/png")},
		{"six.attrs", "image/jpeg", realImage(t, "image/jpeg")},
	}
	exts := map[string]string{"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/bmp": ".bmp"}
	forEachSendEngine(t, func(t *testing.T, f *sendFixture) {
		var atts []attachmentJSON
		for _, fl := range files {
			atts = append(atts, attach(fl.name, fl.contentType, fl.data))
		}
		status, _, raw := f.post(t, f.keys["acme"], "", jsonBody(t, sendBody{From: lineMain, To: []string{usA}, Message: "pics", Attachments: atts}))
		if status != 201 {
			t.Fatalf("status %d: %s", status, raw)
		}
		res := decodeSend(t, raw)
		m := res.Messages[0]
		if m.Type != "mms" || len(m.Media) != len(files) {
			t.Fatalf("message = %+v, want mms with %d media", m, len(files))
		}
		if res.Billing.TotalPrice.String() != "0.02" {
			t.Errorf("totalPrice = %s, want 0.02", res.Billing.TotalPrice)
		}
		seen := map[string]bool{}
		for i, u := range m.Media {
			if !strings.HasPrefix(u, f.url+"/media/") || seen[u] {
				t.Errorf("media[%d] = %s", i, u)
			}
			if !strings.HasSuffix(u, exts[files[i].contentType]) {
				t.Errorf("media[%d] (%s, %s) = %s, want the %s extension of its type", i, files[i].name, files[i].contentType, u, exts[files[i].contentType])
			}
			seen[u] = true
			resp, err := http.Get(u)
			must(t, err)
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !bytes.Equal(got, files[i].data) {
				t.Errorf("GET media[%d]: %d %q, want %q (order must be preserved)", i, resp.StatusCode, got, files[i].data)
			}
			h := resp.Header
			if h.Get("Content-Type") != files[i].contentType || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" ||
				!strings.Contains(h.Get("Content-Security-Policy"), "sandbox") {
				t.Errorf("media[%d] headers = %v", i, h)
			}
		}
		// The carrier was given the same URLs, in order, and the store keeps the names in order.
		sent := f.sim.Sent()
		if last := sent[len(sent)-1]; !slices.Equal(last.Media, m.Media) {
			t.Errorf("carrier media = %v, want %v", last.Media, m.Media)
		}
		stored, err := f.st.Message(ctx, f.acme, m.ID)
		must(t, err)
		if len(stored.Media) != len(m.Media) {
			t.Fatalf("stored media = %v", stored.Media)
		}
		for i, name := range stored.Media {
			if !strings.HasSuffix(m.Media[i], "/"+name) {
				t.Errorf("stored media[%d] = %s, URL %s", i, name, m.Media[i])
			}
		}
		// An unknown name is a plain 404.
		resp, err := http.Get(f.url + "/media/" + strings.Repeat("A", 43) + ".png")
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("unknown media: %d", resp.StatusCode)
		}
	})
}

// --- Idempotency-Key --------------------------------------------------------------------

func TestSendIdempotency(t *testing.T) {
	t.Parallel()
	forEachSendEngine(t, func(t *testing.T, f *sendFixture) {
		key := f.keys["acme"]
		body := jsonBody(t, sendBody{From: lineMain, To: []string{usA}, Message: "once only"})

		t.Run("same key and body replays", func(t *testing.T) {
			status, h, first := f.post(t, key, "order-1", body)
			if status != 201 {
				t.Fatalf("first: %d %s", status, first)
			}
			if h.Get("Idempotent-Replayed") != "" {
				t.Errorf("first response marked replayed")
			}
			total0, n0 := f.ledger(t, f.acme)
			count0 := f.sim.Count()
			for range 2 {
				status2, h2, again := f.post(t, key, "order-1", body)
				if status2 != status || !bytes.Equal(again, first) || h2.Get("Idempotent-Replayed") != "true" {
					t.Errorf("replay: %d %q %s, want %d and the same bytes %s", status2, h2.Get("Idempotent-Replayed"), again, status, first)
				}
			}
			total, n := f.ledger(t, f.acme)
			if total != total0 || n != n0 || f.sim.Count() != count0 {
				t.Errorf("a replay sent or charged again")
			}
		})
		t.Run("same key, different body", func(t *testing.T) {
			f.post(t, key, "order-2", body)
			count0 := f.sim.Count()
			other := jsonBody(t, sendBody{From: lineMain, To: []string{usA}, Message: "something else"})
			status, _, raw := f.post(t, key, "order-2", other)
			if e := decodeInto[errorEnvelope](t, raw); status != 422 || e.Error.Type != "invalid_request" {
				t.Errorf("got %d %s, want 422 invalid_request", status, raw)
			}
			if f.sim.Count() != count0 {
				t.Errorf("sent with a reused key")
			}
		})
		t.Run("keys are per account", func(t *testing.T) {
			status, _, _ := f.post(t, key, "shared-key", body)
			if status != 201 {
				t.Fatalf("acme: %d", status)
			}
			betaBody := jsonBody(t, sendBody{From: lineBeta, To: []string{usA}, Message: "once only"})
			status, h, raw := f.post(t, f.keys["beta"], "shared-key", betaBody)
			res := decodeSend(t, raw)
			if status != 201 || h.Get("Idempotent-Replayed") != "" || res.From != lineBeta {
				t.Errorf("beta with acme's key: %d %s", status, raw)
			}
			// Same body bytes as acme's first request is still beta's own request.
			status, h, raw = f.post(t, f.keys["beta"], "order-1", body)
			if e := decodeInto[errorEnvelope](t, raw); status != 403 || e.Error.Type != "permission_denied" || h.Get("Idempotent-Replayed") != "" {
				t.Errorf("beta replayed acme's response: %d %s", status, raw)
			}
		})
		t.Run("another user's request is not replayed", func(t *testing.T) {
			// Ann may send from the main line; Eve's role covers only lines
			// assigned to her, and none is. The same key and body from Eve
			// must not hand her Ann's stored answer.
			mk := func(numbers domain.NumberAccess) string {
				u := storetest.User(t, f.st, f.acme, &storetest.UserOpts{Permissions: &domain.Permissions{Numbers: numbers}})
				tok, err := userAccessToken(ctx, f.st, u.ID, auth.SMSSend)
				must(t, err)
				return tok
			}
			ann, eve := mk(domain.NumbersAll), mk(domain.NumbersAssigned)
			status, _, raw := f.post(t, ann, "users-key", body)
			if status != 201 {
				t.Fatalf("Ann: %d %s", status, raw)
			}
			count0 := f.sim.Count()
			status, h, raw := f.post(t, eve, "users-key", body)
			if status == 201 || h.Get("Idempotent-Replayed") != "" {
				t.Errorf("Eve got Ann's stored answer: %d %q %s", status, h.Get("Idempotent-Replayed"), raw)
			}
			if f.sim.Count() != count0 {
				t.Errorf("Eve's request sent a message")
			}
		})
		t.Run("key length", func(t *testing.T) {
			count0 := f.sim.Count()
			status, _, raw := f.post(t, key, strings.Repeat("k", 256), body)
			if e := decodeInto[errorEnvelope](t, raw); status != 400 || e.Error.Type != "invalid_request" || !strings.Contains(e.Error.Message, "Idempotency-Key") {
				t.Errorf("256 chars: %d %s, want 400", status, raw)
			}
			if f.sim.Count() != count0 {
				t.Errorf("sent with an invalid key")
			}
			status, _, raw = f.post(t, key, strings.Repeat("k", 255), body)
			if status != 201 {
				t.Errorf("255 chars: %d %s, want 201", status, raw)
			}
		})
		t.Run("empty or repeated header", func(t *testing.T) {
			// An empty key is a mistake, not "no key": sending anyway would
			// bill a retry the client believes is protected.
			for name, values := range map[string][]string{"empty": {""}, "blank": {"   "}, "twice": {"a", "b"}} {
				count0 := f.sim.Count()
				req, err := http.NewRequest("POST", f.url+sendPath, strings.NewReader(body))
				must(t, err)
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				req.Header["Idempotency-Key"] = values
				resp, err := f.client.Do(req)
				must(t, err)
				raw, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				must(t, err)
				if e := decodeInto[errorEnvelope](t, raw); resp.StatusCode != 400 || e.Error.Type != "invalid_request" || !strings.Contains(e.Error.Message, "Idempotency-Key") {
					t.Errorf("%s: %d %s, want 400 naming the header", name, resp.StatusCode, raw)
				}
				if f.sim.Count() != count0 {
					t.Errorf("%s: sent anyway", name)
				}
			}
		})
		t.Run("4xx is replayed", func(t *testing.T) {
			for _, tc := range []struct {
				name, body string
				status     int
			}{
				{"400", jsonBody(t, sendBody{To: []string{usA}, Message: "no from"}), 400},
				{"403", jsonBody(t, sendBody{From: notALine, To: []string{usA}, Message: "hi"}), 403},
				{"422", jsonBody(t, sendBody{From: lineMain, To: []string{jpTokyo}, Message: "hi"}), 422},
				{"200 all skipped", jsonBody(t, sendBody{From: lineMain, To: []string{"123"}, Message: "hi"}), 200},
			} {
				idem := "replay-" + tc.name
				status, _, first := f.post(t, key, idem, tc.body)
				if status != tc.status {
					t.Fatalf("%s: first %d %s", tc.name, status, first)
				}
				status, h, again := f.post(t, key, idem, tc.body)
				if status != tc.status || !bytes.Equal(again, first) || h.Get("Idempotent-Replayed") != "true" {
					t.Errorf("%s: replay %d %q %s, want %d %s", tc.name, status, h.Get("Idempotent-Replayed"), again, tc.status, first)
				}
			}
		})
		t.Run("retry after 503 sends", func(t *testing.T) {
			f.sim.SetDown(true)
			status, _, raw := f.post(t, key, "after-503", body)
			f.sim.SetDown(false)
			if status != 503 {
				t.Fatalf("carrier down: %d %s", status, raw)
			}
			total0, n0 := f.ledger(t, f.acme)
			status, h, first := f.post(t, key, "after-503", body)
			if status != 201 || h.Get("Idempotent-Replayed") != "" {
				t.Fatalf("retry: %d %q %s, want a fresh 201", status, h.Get("Idempotent-Replayed"), first)
			}
			if total, n := f.ledger(t, f.acme); n != n0+1 || total-total0 != int64(storetest.Money(t, "0.0079")) {
				t.Errorf("retry charged %d in %d rows", total-total0, n-n0)
			}
			status, h, again := f.post(t, key, "after-503", body)
			if status != 201 || !bytes.Equal(again, first) || h.Get("Idempotent-Replayed") != "true" {
				t.Errorf("replay after the retry: %d %s", status, again)
			}
		})
		t.Run("concurrent duplicates send once", func(t *testing.T) {
			// Slow the carrier so every duplicate arrives while the first is in flight.
			f.sim.SetLatency(200 * time.Millisecond)
			defer f.sim.SetLatency(0)
			total0, n0 := f.ledger(t, f.acme)
			count0 := f.sim.Count()
			const n = 16
			var (
				wg       sync.WaitGroup
				start    = make(chan struct{})
				mu       sync.Mutex
				statuses = map[int]int{}
			)
			for range n {
				wg.Go(func() {
					<-start
					status, h, _, err := f.postWith(f.client, key, "race", body)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						statuses[-1]++
					} else if h.Get("Idempotent-Replayed") == "true" {
						statuses[-status]++
					} else {
						statuses[status]++
					}
				})
			}
			close(start)
			wg.Wait()
			total, rows := f.ledger(t, f.acme)
			if sent := f.sim.Count() - count0; sent != 1 || rows != n0+1 || total-total0 != int64(storetest.Money(t, "0.0079")) || statuses[201] != 1 {
				t.Errorf("%d concurrent requests with one Idempotency-Key: carrier got %d messages, %d charges; statuses %v (negative = replayed); want exactly one send",
					n, sent, rows-n0, statuses)
			}
		})
		t.Run("in progress is 409", func(t *testing.T) {
			f.sim.SetLatency(time.Second)
			defer f.sim.SetLatency(0)
			before := len(f.messages(t, f.acme))
			done := make(chan int, 1)
			go func() {
				status, _, _, err := f.postWith(f.client, key, "slow", body)
				if err != nil {
					status = -1
				}
				done <- status
			}()
			// Wait until the first request has written its intent (and so holds the key).
			apitest.Eventually(t, "the first request's intent", func() bool { return len(f.messages(t, f.acme)) > before })
			status, h, raw := f.post(t, key, "slow", body)
			if e := decodeInto[errorEnvelope](t, raw); status != 409 || e.Error.Type != "conflict" || h.Get("Idempotent-Replayed") != "" {
				t.Errorf("concurrent duplicate: %d %s, want 409 conflict", status, raw)
			}
			if first := <-done; first != 201 {
				t.Errorf("first request: %d", first)
			}
		})
	})
}

// --- Interrupted sends through the HTTP server --------------------------------------------

// TestSendInterrupted crashes the handler (panic http.ErrAbortHandler, as a
// process dying would) at each step after the intent, with an Idempotency-Key,
// and checks what a client's retries then see.
func TestSendInterrupted(t *testing.T) {
	t.Parallel()
	forEachSendEngine(t, func(t *testing.T, f *sendFixture) {
		// A fresh connection per request: Go's transport would otherwise
		// retry a request carrying Idempotency-Key on a reused connection by
		// itself, hiding the abort from the test.
		noReuse := &http.Client{Transport: apitest.Transport(t, &http.Transport{DisableKeepAlives: true})}
		key := f.keys["acme"]
		body := jsonBody(t, sendBody{From: lineMain, To: []string{usA}, Message: "interrupted"})
		crashAt := func(step string) {
			f.setFault(func(s string) error {
				if s == step {
					panic(http.ErrAbortHandler)
				}
				return nil
			})
		}

		t.Run("after intent", func(t *testing.T) {
			total0, n0 := f.ledger(t, f.acme)
			count0 := f.sim.Count()
			crashAt("after-intent")
			if status, _, raw, err := f.postWith(noReuse, key, "crash-1", body); err == nil {
				t.Fatalf("request survived the crash: %d %s", status, raw)
			}
			f.setFault(nil)
			m := f.lastMessage(t, f.acme)
			if m.Status != domain.StatusPending || f.sim.Count() != count0 {
				t.Errorf("after the crash: message %+v, carrier count %d → %d", m, count0, f.sim.Count())
			}
			if total, n := f.ledger(t, f.acme); total != total0 || n != n0 {
				t.Errorf("a pending message was charged")
			}
			// The key is held by the pending message.
			status, _, raw := f.post(t, key, "crash-1", body)
			if e := decodeInto[errorEnvelope](t, raw); status != 409 || e.Error.Type != "conflict" {
				t.Errorf("retry while pending: %d %s, want 409", status, raw)
			}
			n, err := f.svc.Reconcile(ctx, 0)
			must(t, err)
			if n != 1 {
				t.Errorf("reconciled %d, want 1", n)
			}
			if got, err := f.st.Message(ctx, f.acme, m.ID); err != nil || got.Status != domain.StatusAbandoned {
				t.Errorf("after reconcile: %+v %v, want abandoned", got, err)
			}
			if total, n := f.ledger(t, f.acme); total != total0 || n != n0 {
				t.Errorf("an abandoned message was charged")
			}
			// Abandoned is not proof that nothing was sent (a crash during the
			// carrier call looks the same): the key still stands for the first
			// message, and the retry is told so instead of sending again.
			for range 2 {
				status, h, raw := f.post(t, key, "crash-1", body)
				if e := decodeInto[errorEnvelope](t, raw); status != 409 || e.Error.Type != "conflict" || h.Get("Idempotent-Replayed") != "true" ||
					!strings.Contains(e.Error.Message, "interrupted") {
					t.Errorf("retry after reconcile: %d %q %s, want the replayed 409 that says the first request was interrupted", status, h.Get("Idempotent-Replayed"), raw)
				}
			}
			if total, n := f.ledger(t, f.acme); total != total0 || n != n0 || f.sim.Count() != count0 {
				t.Errorf("the retry sent or charged: ledger %d rows (was %d), carrier count %d (was %d)", n, n0, f.sim.Count(), count0)
			}
		})

		// Issue 15: a send killed during the carrier call (the carrier took
		// the message, its receipt is slow), retried with the same key after
		// the reconciler abandoned it, sent a second message and the late
		// receipt charged the first: two texts, two charges. The key must keep
		// pointing at the first message.
		t.Run("during the carrier call, retried after reconcile", func(t *testing.T) {
			total0, n0 := f.ledger(t, f.acme)
			count0 := f.sim.Count()
			f.sim.SetReceiptDelay(time.Hour) // the receipt is late: it comes from the test below
			defer f.sim.SetReceiptDelay(0)
			crashAt("after-carrier")
			if status, _, raw, err := f.postWith(noReuse, key, "crash-4", body); err == nil {
				t.Fatalf("request survived the crash: %d %s", status, raw)
			}
			f.setFault(nil)
			m := f.lastMessage(t, f.acme)
			if f.sim.Count() != count0+1 || m.Status != domain.StatusPending {
				t.Fatalf("after the crash: carrier count %d → %d, message %s; want one accepted, pending", count0, f.sim.Count(), m.Status)
			}
			if n, err := f.svc.Reconcile(ctx, 0); err != nil || n != 1 {
				t.Fatalf("reconcile = %d %v, want 1", n, err)
			}
			status, h, raw := f.post(t, key, "crash-4", body)
			if e := decodeInto[errorEnvelope](t, raw); status != 409 || e.Error.Type != "conflict" || h.Get("Idempotent-Replayed") != "true" {
				t.Errorf("retry after reconcile: %d %q %s, want the replayed 409", status, h.Get("Idempotent-Replayed"), raw)
			}
			if f.sim.Count() != count0+1 {
				t.Fatalf("the retry sent a second message: carrier count %d → %d", count0, f.sim.Count())
			}
			// The late receipt proves the carrier took the first message: it
			// is charged once, and from then on the key answers with it.
			must(t, f.svc.Receipt(ctx, carrier.Receipt{MessageID: m.ID, Status: "delivered", At: time.Now()}))
			status, h, raw = f.post(t, key, "crash-4", body)
			res := decodeSend(t, raw)
			if status != 201 || h.Get("Idempotent-Replayed") != "true" || len(res.Messages) != 1 || res.Messages[0].ID != m.ID || res.Messages[0].Status != "sent" {
				t.Errorf("retry after the late receipt: %d %q %s, want the replayed 201 of message %d", status, h.Get("Idempotent-Replayed"), raw, m.ID)
			}
			if total, n := f.ledger(t, f.acme); n != n0+1 || money.Micros(total-total0) != m.Price || f.sim.Count() != count0+1 {
				t.Errorf("one text: carrier count %d → %d, ledger %d in %d rows; want one message charged %d once", count0, f.sim.Count(), total-total0, n-n0, m.Price)
			}
		})

		t.Run("after carrier", func(t *testing.T) {
			total0, n0 := f.ledger(t, f.acme)
			count0 := f.sim.Count()
			crashAt("after-carrier")
			if status, _, raw, err := f.postWith(noReuse, key, "crash-2", body); err == nil {
				t.Fatalf("request survived the crash: %d %s", status, raw)
			}
			f.setFault(nil)
			if f.sim.Count() != count0+1 {
				t.Fatalf("carrier count %d → %d, want one accepted", count0, f.sim.Count())
			}
			m := f.lastMessage(t, f.acme)
			// The carrier's receipt is the evidence of acceptance: it marks the message sent and charges it.
			apitest.Eventually(t, "the receipt", func() bool {
				got, err := f.st.Message(ctx, f.acme, m.ID)
				return err == nil && got.Status == domain.StatusSent && got.DeliveryStatus != ""
			})
			total, n := f.ledger(t, f.acme)
			if n != n0+1 || money.Micros(total-total0) != m.Price {
				t.Errorf("charged %d in %d rows, want %d once", total-total0, n-n0, m.Price)
			}
			// The retry gets the original outcome, not a second message.
			status, h, raw := f.post(t, key, "crash-2", body)
			res := decodeSend(t, raw)
			if status != 201 || h.Get("Idempotent-Replayed") != "true" || len(res.Messages) != 1 || res.Messages[0].ID != m.ID || res.Billing.TotalPrice.String() != "0.0079" {
				t.Errorf("retry after the receipt: %d %q %s, want the replayed 201 of message %d", status, h.Get("Idempotent-Replayed"), raw, m.ID)
			}
			if f.sim.Count() != count0+1 {
				t.Errorf("the retry sent again")
			}
			// A late reconcile changes nothing.
			if _, err := f.svc.Reconcile(ctx, 0); err != nil {
				t.Fatal(err)
			}
			if _, n := f.ledger(t, f.acme); n != n0+1 {
				t.Errorf("ledger rows %d, want %d", n, n0+1)
			}
		})

		t.Run("before intent", func(t *testing.T) {
			total0, n0 := f.ledger(t, f.acme)
			count0 := f.sim.Count()
			msgs0 := len(f.messages(t, f.acme))
			crashAt("before-intent")
			if _, _, _, err := f.postWith(noReuse, key, "crash-3", body); err == nil {
				t.Fatalf("request survived the crash")
			}
			f.setFault(nil)
			if total, n := f.ledger(t, f.acme); total != total0 || n != n0 || f.sim.Count() != count0 || len(f.messages(t, f.acme)) != msgs0 {
				t.Errorf("a crash before the intent left something behind")
			}
			// Nothing linked to the key yet; within the lease it is reported busy, never double-sent.
			status, _, raw := f.post(t, key, "crash-3", body)
			if status != 409 && status != 201 {
				t.Errorf("retry: %d %s, want 409 (lease) or 201", status, raw)
			}
		})
	})
}

// --- Receipts and events --------------------------------------------------------------------

type smsEventJSON struct {
	Event     string   `json:"event"`
	MessageID int64    `json:"messageId"`
	Direction string   `json:"direction"`
	Line      string   `json:"line"`
	Numbers   []string `json:"numbers"`
	Status    string   `json:"status"`
	Delivery  *struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		At     string `json:"at"`
	} `json:"delivery"`
}

func TestSendReceiptsAndEvents(t *testing.T) {
	t.Parallel()
	forEachSendEngine(t, func(t *testing.T, f *sendFixture) {
		f.sim.UndeliverableDestinations("1212")
		type sent struct {
			id     int64
			to     []string
			status string
			errTxt string
		}
		var all []sent
		for _, tc := range []struct {
			to             []string
			status, errTxt string
		}{
			{[]string{usA}, sim.StatusDelivered, ""},
			{[]string{usB}, sim.StatusUndelivered, sim.UndeliveredError},
			{[]string{usA, ukLondon}, sim.StatusDelivered, ""},
		} {
			status, _, raw := f.post(t, f.keys["acme"], "", jsonBody(t, sendBody{From: lineMain, To: tc.to, Message: "hi"}))
			if status != 201 {
				t.Fatalf("send: %d %s", status, raw)
			}
			all = append(all, sent{decodeSend(t, raw).Messages[0].ID, tc.to, tc.status, tc.errTxt})
		}
		for _, s := range all {
			var m domain.Message
			apitest.Eventually(t, fmt.Sprintf("receipt of message %d", s.id), func() bool {
				var err error
				m, err = f.st.Message(ctx, f.acme, s.id)
				must(t, err)
				return m.DeliveryStatus != ""
			})
			if m.DeliveryStatus != s.status || m.DeliveryError != s.errTxt || m.DeliveryAt == nil || m.Status != domain.StatusSent {
				t.Errorf("message %d after receipt: %+v, want delivery %s %q", s.id, m, s.status, s.errTxt)
			}
		}
		// An undelivered message was still accepted, hence charged.
		if _, n := f.ledger(t, f.acme); n != len(all) {
			t.Errorf("ledger rows %d, want %d", n, len(all))
		}

		must(t, f.sim.Inject(ctx, carrier.Inbound{From: "(415) 555-0123", To: lineMain, Text: "hello back"}))

		evs, err := f.st.Events(ctx, f.acme, 0, 1000)
		must(t, err)
		count := map[string]int{}
		var received []smsEventJSON
		for _, ev := range evs {
			if ev.Type != "AccountSMS" {
				t.Errorf("event type %s", ev.Type)
				continue
			}
			p := decodeInto[smsEventJSON](t, ev.Payload)
			count[fmt.Sprint(p.Event, p.MessageID)]++
			if p.Event == "message.received" {
				received = append(received, p)
			}
			for _, s := range all {
				if p.MessageID != s.id {
					continue
				}
				if p.Direction != "out" || p.Line != lineMain || !slices.Equal(p.Numbers, s.to) {
					t.Errorf("event %s", ev.Payload)
				}
				if p.Event == "message.delivery" && (p.Delivery == nil || p.Delivery.Status != s.status || p.Delivery.Error != s.errTxt || p.Delivery.At == "") {
					t.Errorf("delivery event %s", ev.Payload)
				}
				if p.Event == "message.sent" && p.Status != "sent" {
					t.Errorf("sent event %s", ev.Payload)
				}
			}
		}
		for _, s := range all {
			for _, e := range []string{"message.sent", "message.delivery"} {
				if n := count[fmt.Sprint(e, s.id)]; n != 1 {
					t.Errorf("%d %s events for message %d, want 1", n, e, s.id)
				}
			}
		}
		if len(received) != 1 || received[0].Direction != "in" || received[0].Line != lineMain || !slices.Equal(received[0].Numbers, []string{usA}) || received[0].MessageID == 0 {
			t.Errorf("received events = %+v", received)
		}
		// Beta sees none of it.
		if evs, err := f.st.Events(ctx, f.beta, 0, 1000); err != nil || len(evs) != 0 {
			t.Errorf("beta events = %d %v", len(evs), err)
		}
	})
}

// --- The ledger agrees with the responses -------------------------------------------------

func TestSendLedgerAgrees(t *testing.T) {
	t.Parallel()
	forEachSendEngine(t, func(t *testing.T, f *sendFixture) {
		f.sim.FailDestinations("4930")
		bodies := []sendBody{
			{From: lineMain, To: []string{usA}, Message: "short"},
			{From: lineMain, To: []string{usB}, Message: strings.Repeat("b", 400)},
			{From: lineBob, To: []string{ukLondon}, Message: strings.Repeat("€", 100)},
			{From: lineMain, To: []string{ukMobile}, Message: "😀 " + strings.Repeat("x", 100)},
			{From: lineMain, To: []string{usA, usB, ukLondon}, Message: "group"},
			{From: lineMain, To: []string{usA}, Attachments: []attachmentJSON{attach("a.png", "image/png", realImage(t, "image/png"))}},
			{From: lineMain, To: []string{deBerlin}, Message: "refused by the carrier"}, // 503
			{From: lineMain, To: []string{jpTokyo}, Message: "unpriced"},                // 422
			{From: lineMain, To: []string{"123"}, Message: "all skipped"},               // 200
			{From: lineMain, To: []string{usA}},                                         // 400
			{From: notALine, To: []string{usA}, Message: "x"},                           // 403
		}
		var (
			mu       sync.Mutex
			total    money.Micros
			created  int
			statuses = map[int]int{}
			wg       sync.WaitGroup
		)
		encoded := make([]string, len(bodies))
		for i, b := range bodies {
			encoded[i] = jsonBody(t, b)
		}
		for i := range 4 {
			for j, body := range encoded {
				wg.Go(func() {
					status, _, raw, err := f.postWith(f.client, f.keys["acme"], "", body)
					if err != nil {
						t.Errorf("request %d/%d: %v", i, j, err)
						return
					}
					mu.Lock()
					defer mu.Unlock()
					statuses[status]++
					if status != 201 {
						return
					}
					var res struct {
						Data sendResult `json:"data"`
					}
					if err := json.Unmarshal(raw, &res); err != nil {
						t.Errorf("decode: %v", err)
						return
					}
					p, err := money.Parse(res.Data.Billing.TotalPrice.String())
					if err != nil {
						t.Errorf("totalPrice %s: %v", res.Data.Billing.TotalPrice, err)
						return
					}
					total += p
					created++
				})
			}
		}
		wg.Wait()
		if want := map[int]int{201: 24, 503: 4, 422: 4, 200: 4, 400: 4, 403: 4}; !mapsEqual(statuses, want) {
			t.Errorf("statuses = %v, want %v", statuses, want)
		}
		// Receipts arrive after the responses; they must not add charges.
		apitest.Eventually(t, "receipts", func() bool { return f.sim.Pending() == 0 })
		got, n := f.ledger(t, f.acme)
		if money.Micros(got) != total || n != created {
			t.Errorf("ledger %s in %d rows, responses %s in %d", money.Micros(got), n, total, created)
		}
		// And every charge matches a sent message's price.
		var sum money.Micros
		for _, m := range f.messages(t, f.acme) {
			if m.Status == domain.StatusSent {
				sum += m.Price
			}
		}
		if sum != total {
			t.Errorf("sent messages total %s, responses %s", sum, total)
		}
	})
}

func mapsEqual(a, b map[int]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestSendTwoAuthorizationHeaders checks that two Authorization headers are no
// credential, whichever order the valid one comes in: picking one would be a
// guess, and a proxy in front may have checked the other.
func TestSendTwoAuthorizationHeaders(t *testing.T) {
	t.Parallel()
	f := setupSend(t, store.SQLite)
	good := "Bearer " + f.keys["acme"]
	for _, pair := range [][2]string{{good, "Bearer junk"}, {"Bearer junk", good}, {good, good}} {
		count0 := f.sim.Count()
		req, err := http.NewRequest("POST", f.url+sendPath, strings.NewReader(jsonBody(t, sendBody{From: lineMain, To: []string{usA}, Message: "hi"})))
		must(t, err)
		req.Header.Add("Authorization", pair[0])
		req.Header.Add("Authorization", pair[1])
		resp, err := f.client.Do(req)
		must(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 || !strings.Contains(string(b), "unauthenticated") || !strings.Contains(string(b), "one Authorization header") || f.sim.Count() != count0 {
			t.Errorf("%q then %q: %d %s (sent %d), want 401 unauthenticated and nothing sent", pair[0], pair[1], resp.StatusCode, b, f.sim.Count()-count0)
		}
	}
}
