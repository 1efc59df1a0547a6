package e2e

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestCarrierConnectionTelnyx: a line on a telnyx connection sends through
// Telnyx's v2 messages API (a fake here; the client is held to Telnyx's own
// library in internal/carrier/telnyx) with the connection's webhook URL;
// a signed message.finalized settles the message with Telnyx's status word;
// a signed message.received is the line's inbound text; an unsigned or
// wrongly signed webhook is 403 and changes nothing.
func TestCarrierConnectionTelnyx(t *testing.T) {
	t.Parallel()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var sent []map[string]any
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		if r.URL.Path != "/v2/messages" || r.Header.Get("Authorization") != "Bearer KEY-telnyx-secret" {
			http.Error(w, `{"errors":[{"code":"10009","title":"Authentication failed"}]}`, http.StatusUnauthorized)
			return
		}
		mu.Lock()
		sent = append(sent, body)
		n := len(sent)
		mu.Unlock()
		fmt.Fprintf(w, `{"data":{"id":"tx-msg-%d","record_type":"message"}}`, n)
	}))
	t.Cleanup(api.Close)

	db := storetest.DSN(t, store.SQLite)
	acct, key := carrierAccount(t, db)
	cliJSON(t, db, &struct{}{}, "carrier", "add", "tx1", "--kind", "telnyx", "--api-key", "KEY-telnyx-secret",
		"--public-key", base64.StdEncoding.EncodeToString(pub), "--api-base", api.URL)
	line := createLine(t, db, acct, "--number", "4155550100", "--carrier", "tx1").Number
	base := startServer(t, db)

	id := appAPIKeySend(t, base, key, line, "12125550101", "Your table is ready.")
	mu.Lock()
	if len(sent) != 1 || sent[0]["from"] != "+"+line || sent[0]["to"] != "+12125550101" || sent[0]["text"] != "Your table is ready." ||
		sent[0]["webhook_url"] != base+"/carrier/tx1/webhook" {
		t.Fatalf("Telnyx got %v", sent)
	}
	mu.Unlock()

	hook := func(body string, sign bool, tamper bool) int {
		t.Helper()
		ts := fmt.Sprint(time.Now().Unix())
		req, _ := http.NewRequest(http.MethodPost, base+"/carrier/tx1/webhook", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if sign {
			sig := ed25519.Sign(priv, []byte(ts+"|"+body))
			if tamper {
				sig[0] ^= 1
			}
			req.Header.Set("Telnyx-Signature-Ed25519", base64.StdEncoding.EncodeToString(sig))
			req.Header.Set("Telnyx-Timestamp", ts)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	finalized := `{"data":{"event_type":"message.finalized","id":"evt-1","occurred_at":"2026-11-28T10:00:00Z","payload":{"id":"tx-msg-1","to":[{"phone_number":"+12125550101","status":"delivered"}],"errors":[]}}}`
	if code := hook(finalized, false, false); code != http.StatusForbidden {
		t.Errorf("an unsigned webhook: %d, want 403", code)
	}
	if code := hook(strings.Replace(finalized, "delivered", "delivery_failed", 1), true, true); code != http.StatusForbidden {
		t.Errorf("a wrongly signed webhook: %d, want 403", code)
	}
	thread := func(number string) string {
		r := request(t, "GET", base+apiPrefix+"/sms/conversations/"+line+"/"+number, "Bearer "+key)
		if r.status != 200 {
			t.Fatalf("thread: %d %s", r.status, r.body)
		}
		return string(r.body)
	}
	if strings.Contains(thread("12125550101"), "delivery_failed") {
		t.Fatal("a refused webhook changed the message")
	}
	if code := hook(finalized, true, false); code != 200 {
		t.Fatalf("the signed receipt: %d", code)
	}
	if th := thread("12125550101"); !strings.Contains(th, `"delivered"`) || !strings.Contains(th, fmt.Sprintf(`"id":%d`, id)) {
		t.Errorf("the message after its receipt: %s", th)
	}
	received := `{"data":{"event_type":"message.received","id":"evt-2","occurred_at":"2026-11-28T10:01:00Z","payload":{"id":"tx-in-1","from":{"phone_number":"+12125550199"},"to":[{"phone_number":"+14155550100"}],"text":"Running late","media":[]}}}`
	if code := hook(received, true, false); code != 200 {
		t.Fatalf("the signed inbound text: %d", code)
	}
	if !strings.Contains(thread("12125550199"), "Running late") {
		t.Errorf("the inbound text is not in its thread")
	}
}
