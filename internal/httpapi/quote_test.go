package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"switchboard/internal/auth"
	"switchboard/internal/carrier"
	"switchboard/internal/domain"
	"switchboard/internal/store/storetest"
)

const quotePath = "/api/public/v1/sms/quote"

// quoteResult mirrors SendQuote; billing and skipped stay raw, to be
// compared byte for byte with a send's.
type quoteResult struct {
	From     string          `json:"from"`
	Billing  json.RawMessage `json:"billing"`
	Messages []struct {
		To             []string    `json:"to"`
		Type           string      `json:"type"`
		Encoding       string      `json:"encoding"`
		Length         int         `json:"length"`
		UCS2Characters []string    `json:"ucs2Characters"`
		Units          int         `json:"units"`
		UnitPrice      json.Number `json:"unitPrice"`
		Price          json.Number `json:"price"`
	} `json:"messages"`
	Skipped json.RawMessage `json:"skipped"`
}

// rawSend is a SendResult with billing and skipped raw.
type rawSend struct {
	From     string          `json:"from"`
	Billing  json.RawMessage `json:"billing"`
	Messages []struct {
		To        []string    `json:"to"`
		Type      string      `json:"type"`
		Units     int         `json:"units"`
		UnitPrice json.Number `json:"unitPrice"`
		Price     json.Number `json:"price"`
	} `json:"messages"`
	Skipped json.RawMessage `json:"skipped"`
}

// quote sends POST /sms/quote.
func (f *sendFixture) quote(t *testing.T, key, body string) (int, []byte) {
	t.Helper()
	status, _, raw := f.do(t, "POST", quotePath, key, body)
	return status, raw
}

// footprint is what a send leaves in the database, and every write the
// store made: a quote must change none of it.
type footprint struct {
	writes, batches  int64
	ledger           int64
	charges          int
	messages, events int
	media            int64
}

func (f *sendFixture) footprint(t *testing.T) footprint {
	t.Helper()
	st := f.st.CommitStats()
	total, n := f.ledger(t, f.acme)
	events, err := f.st.Events(ctx, f.acme, 0, 100000)
	must(t, err)
	usage, err := f.st.MediaUsage(ctx, f.acme)
	must(t, err)
	return footprint{writes: st.Writes, batches: st.Batches, ledger: total, charges: n,
		messages: len(f.messages(t, f.acme)), events: len(events), media: usage.Used}
}

// TestQuoteIsTheSendsAnswer quotes bodies of every kind, checking that each
// quote writes nothing at all, then sends the same bodies and holds each
// quote to the send's answer: billing and skipped byte for byte, the
// message's recipients, type and prices.
func TestQuoteIsTheSendsAnswer(t *testing.T) {
	t.Parallel()
	png := realImage(t, "image/png")
	tests := []struct {
		name        string
		to          []string
		message     string
		attachments []attachmentJSON
		sendStatus  int
		// What only the quote says, for its message (none when every
		// recipient is skipped: wantMessage false).
		wantMessage bool
		encoding    string
		length      int
		chars       []string
		units       int
		unitPrice   string
	}{
		{"gsm-7", []string{usA}, "Your order has shipped.", nil, 201, true, "GSM-7", 23, []string{}, 1, "0.0079"},
		{"gsm-7 extension characters count 2", []string{usA}, "Total: 5€ [net]", nil, 201, true, "GSM-7", 18, []string{}, 1, "0.0079"},
		{"ucs-2 with emoji", []string{usA}, "Shipped 📦 – thanks 📦", nil, 201, true, "UCS-2", 22, []string{"📦", "–"}, 1, "0.0079"},
		{"long gsm-7, three segments", []string{usA}, strings.Repeat("a", 306) + "€", nil, 201, true, "GSM-7", 308, []string{}, 3, "0.0079"},
		{"long ucs-2, three segments", []string{"+44 7911 123456"}, strings.Repeat("ж", 135), nil, 201, true, "UCS-2", 135, []string{"ж"}, 3, "0.04"},
		{"group with skipped recipients", []string{usA, "123", ukLondon, "(415) 555-0123", usB, deBerlin}, "Meet at 5 ✓", nil, 201, true,
			"UCS-2", 11, []string{"✓"}, 1, "0.12"},
		{"attachment", []string{deBerlin}, "See attached", []attachmentJSON{attach("map.png", "image/png", png)}, 201, true, "GSM-7", 12, []string{}, 1, "0.09"},
		{"every recipient skipped", []string{usB, "123", "12125550123"}, "hi", nil, 200, false, "", 0, nil, 0, ""},
	}
	forEachSendEngine(t, func(t *testing.T, f *sendFixture) {
		key := f.keys["acme"]
		// usB sent STOP to the main line: opted out there.
		must(t, f.sim.Inject(ctx, carrier.Inbound{From: usB, To: lineMain, Text: "STOP"}))

		bodies := make([]string, len(tests))
		quotes := make([]quoteResult, len(tests))
		for i, tc := range tests {
			bodies[i] = jsonBody(t, sendBody{From: lineMain, To: tc.to, Message: tc.message, Attachments: tc.attachments})
			before := f.footprint(t)
			status, raw := f.quote(t, key, bodies[i])
			if status != 200 {
				t.Fatalf("%s: quote %d %s", tc.name, status, raw)
			}
			if after := f.footprint(t); after != before {
				t.Errorf("%s: the quote wrote: %+v, before %+v", tc.name, after, before)
			}
			if strings.Contains(string(raw), `"id"`) || strings.Contains(string(raw), `"media"`) || strings.Contains(string(raw), `"status"`) {
				t.Errorf("%s: a quote names an id, media or status: %s", tc.name, raw)
			}
			quotes[i] = decodeInto[struct {
				Data quoteResult `json:"data"`
			}](t, raw).Data
			q := quotes[i]
			if !tc.wantMessage {
				if len(q.Messages) != 0 || !strings.Contains(string(raw), `"messages":[]`) {
					t.Errorf("%s: messages %s, want []", tc.name, raw)
				}
				continue
			}
			if len(q.Messages) != 1 {
				t.Fatalf("%s: %d messages, want 1: %s", tc.name, len(q.Messages), raw)
			}
			m := q.Messages[0]
			if m.Encoding != tc.encoding || m.Length != tc.length || !slices.Equal(m.UCS2Characters, tc.chars) || m.Units != tc.units || m.UnitPrice.String() != tc.unitPrice {
				t.Errorf("%s: got encoding %s length %d chars %q units %d unitPrice %s, want %s %d %q %d %s",
					tc.name, m.Encoding, m.Length, m.UCS2Characters, m.Units, m.UnitPrice, tc.encoding, tc.length, tc.chars, tc.units, tc.unitPrice)
			}
		}

		for i, tc := range tests {
			status, _, raw := f.post(t, key, "", bodies[i])
			if status != tc.sendStatus {
				t.Fatalf("%s: send %d %s, want %d", tc.name, status, raw, tc.sendStatus)
			}
			s := decodeInto[struct {
				Data rawSend `json:"data"`
			}](t, raw).Data
			q := quotes[i]
			if q.From != s.From || !bytes.Equal(q.Billing, s.Billing) || !bytes.Equal(q.Skipped, s.Skipped) {
				t.Errorf("%s: quote from %s billing %s skipped %s; send from %s billing %s skipped %s",
					tc.name, q.From, q.Billing, q.Skipped, s.From, s.Billing, s.Skipped)
			}
			if len(q.Messages) != len(s.Messages) {
				t.Fatalf("%s: quote has %d messages, send %d", tc.name, len(q.Messages), len(s.Messages))
			}
			for j := range s.Messages {
				qm, sm := q.Messages[j], s.Messages[j]
				if !slices.Equal(qm.To, sm.To) || qm.Type != sm.Type || qm.Units != sm.Units || qm.UnitPrice != sm.UnitPrice || qm.Price != sm.Price {
					t.Errorf("%s: quoted message %+v, sent %+v", tc.name, qm, sm)
				}
			}
		}
		// The group's skips, in request order, are the send's own; checked
		// here once against literal values so that the comparison above
		// cannot pass on two empty answers.
		if got, want := string(quotes[5].Skipped), `[{"to":"123","reason":"invalid"},{"to":"(415) 555-0123","reason":"duplicate"},{"to":"12125550123","reason":"opted_out"}]`; got != want {
			t.Errorf("group skipped = %s, want %s", got, want)
		}
		if got := string(quotes[0].Billing); got != `{"billed":true,"currency":"USD","type":"sms","units":1,"totalPrice":0.0079,"recipientCount":1,"skippedCount":0}` {
			t.Errorf("gsm-7 billing = %s", got)
		}
	})
}

// TestQuoteRefusesAsTheSendDoes sends bad bodies to both endpoints: the
// same status and the same error, and nothing sent.
func TestQuoteRefusesAsTheSendDoes(t *testing.T) {
	t.Parallel()
	forEachSendEngine(t, func(t *testing.T, f *sendFixture) {
		eve := storetest.User(t, f.st, f.acme, &storetest.UserOpts{Permissions: &domain.Permissions{Numbers: domain.NumbersAssigned}})
		eveTok, err := userAccessToken(ctx, f.st, eve.ID, auth.SMSRead, auth.SMSSend)
		must(t, err)
		twentyOne := make([]string, 21)
		for i := range twentyOne {
			twentyOne[i] = fmt.Sprintf("1415555%04d", 300+i)
		}
		png := realImage(t, "image/png")
		key := f.keys["acme"]
		for _, tc := range []struct {
			name, key, body string
			status          int
			typ             string
		}{
			{"no from", key, jsonBody(t, sendBody{To: []string{usA}, Message: "hi"}), 400, "invalid_request"},
			{"no to", key, jsonBody(t, sendBody{From: lineMain, Message: "hi"}), 400, "invalid_request"},
			{"only whitespace", key, jsonBody(t, sendBody{From: lineMain, To: []string{usA}, Message: " \n "}), 400, "invalid_request"},
			{"too long", key, jsonBody(t, sendBody{From: lineMain, To: []string{usA}, Message: strings.Repeat("a", 2001)}), 400, "invalid_request"},
			{"21 distinct recipients", key, jsonBody(t, sendBody{From: lineMain, To: twentyOne, Message: "hi"}), 400, "invalid_request"},
			{"unknown field", key, `{"from":"` + lineMain + `","to":["` + usA + `"],"message":"hi","priority":"high"}`, 400, "invalid_request"},
			{"trailing data", key, `{"from":"` + lineMain + `","to":["` + usA + `"],"message":"hi"} {}`, 400, "invalid_request"},
			{"attachment type", key, jsonBody(t, sendBody{From: lineMain, To: []string{usA}, Attachments: []attachmentJSON{attach("a.pdf", "application/pdf", png)}}), 400, "invalid_request"},
			{"attachment signature", key, jsonBody(t, sendBody{From: lineMain, To: []string{usA}, Attachments: []attachmentJSON{attach("a.jpg", "image/jpeg", png)}}), 400, "invalid_request"},
			{"not a line", key, jsonBody(t, sendBody{From: notALine, To: []string{usA}, Message: "hi"}), 403, "permission_denied"},
			{"another account's line", key, jsonBody(t, sendBody{From: lineBeta, To: []string{usA}, Message: "hi"}), 403, "permission_denied"},
			{"not SMS-capable", key, jsonBody(t, sendBody{From: lineFax, To: []string{usA}, Message: "hi"}), 403, "permission_denied"},
			{"a line the role does not grant", eveTok, jsonBody(t, sendBody{From: lineBob, To: []string{usA}, Message: "hi"}), 403, "permission_denied"},
			{"no rate", key, jsonBody(t, sendBody{From: lineMain, To: []string{jpTokyo}, Message: "hi"}), 422, "invalid_request"},
			{"no rate in a group", key, jsonBody(t, sendBody{From: lineMain, To: []string{usA, frParis}, Message: "hi"}), 422, "invalid_request"},
			{"no credential", "", jsonBody(t, sendBody{From: lineMain, To: []string{usA}, Message: "hi"}), 401, "unauthenticated"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				count0 := f.sim.Count()
				qs, _, qraw := f.do(t, "POST", quotePath, tc.key, tc.body)
				ss, _, sraw := f.post(t, tc.key, "", tc.body)
				qe, se := decodeInto[errorEnvelope](t, qraw), decodeInto[errorEnvelope](t, sraw)
				if qs != tc.status || qe.Error.Type != tc.typ {
					t.Errorf("quote: %d %s, want %d %s", qs, qraw, tc.status, tc.typ)
				}
				// The same refusal, word for word, except for the scope a 401 names.
				if qs != ss || qe.Error.Type != se.Error.Type || (qs != 401 && qe.Error.Message != se.Error.Message) {
					t.Errorf("quote answered %d %s; the send %d %s", qs, qraw, ss, sraw)
				}
				if f.sim.Count() != count0 {
					t.Errorf("sent")
				}
			})
		}
	})
}

// TestQuoteScopes: sms:read or sms:send, either one; a person only from
// their own lines.
func TestQuoteScopes(t *testing.T) {
	t.Parallel()
	forEachSendEngine(t, func(t *testing.T, f *sendFixture) {
		_, readOnly := storetest.Key(t, f.st, f.acme, auth.SMSRead)
		_, sendOnly := storetest.Key(t, f.st, f.acme, auth.SMSSend)
		_, neither := storetest.Key(t, f.st, f.acme, auth.SMSWrite, auth.MessagesRead, auth.WebhooksRead)
		bob, err := userAccessToken(ctx, f.st, f.users["Bob"].ID, auth.SMSRead)
		must(t, err)
		body := jsonBody(t, sendBody{From: lineMain, To: []string{usA}, Message: "hi"})
		for name, k := range map[string]string{"sms:read": readOnly, "sms:send": sendOnly} {
			if status, raw := f.quote(t, k, body); status != 200 {
				t.Errorf("%s: %d %s, want 200", name, status, raw)
			}
		}
		status, raw := f.quote(t, neither, body)
		if e := decodeInto[errorEnvelope](t, raw); status != 403 || e.Error.Type != "insufficient_scope" || e.Error.Scope != "sms:read" {
			t.Errorf("neither scope: %d %s, want 403 insufficient_scope naming sms:read", status, raw)
		}
		// Bob has no role in this fixture: no Phone numbers permission.
		status, raw = f.quote(t, bob, body)
		if e := decodeInto[errorEnvelope](t, raw); status != 403 || e.Error.Type != "permission_denied" {
			t.Errorf("a person without Phone numbers: %d %s, want 403 permission_denied", status, raw)
		}
		// A person whose role grants assigned lines quotes from their own line.
		carl := storetest.User(t, f.st, f.acme, &storetest.UserOpts{Permissions: &domain.Permissions{Numbers: domain.NumbersAssigned}})
		carlTok, err := userAccessToken(ctx, f.st, carl.ID, auth.SMSRead)
		must(t, err)
		if status, raw := f.quote(t, carlTok, body); status != 200 || decodeInto[struct {
			Data quoteResult `json:"data"`
		}](t, raw).Data.From != lineMain {
			t.Errorf("a person from an unassigned line: %d %s, want 200", status, raw)
		}
		// Attachments beyond the hosted-media quota: the send's 409, word for word.
		png := realImage(t, "image/png")
		must(t, f.st.SetMediaQuota(ctx, f.acme, int64(len(png))-1))
		big := jsonBody(t, sendBody{From: lineMain, To: []string{usA}, Attachments: []attachmentJSON{attach("a.png", "image/png", png)}})
		qs, qraw := f.quote(t, readOnly, big)
		ss, _, sraw := f.post(t, f.keys["acme"], "", big)
		if e := decodeInto[errorEnvelope](t, qraw); qs != 409 || e.Error.Type != "conflict" || ss != 409 || e.Error.Message != decodeInto[errorEnvelope](t, sraw).Error.Message {
			t.Errorf("over the quota: quote %d %s, send %d %s; want the same 409", qs, qraw, ss, sraw)
		}

		// A query parameter is refused, as everywhere.
		if status, _, raw := f.do(t, "POST", quotePath+"?dryRun=true", readOnly, body); status != 400 {
			t.Errorf("query parameter: %d %s, want 400", status, raw)
		}
	})
}
