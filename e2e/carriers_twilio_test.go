package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"switchboard/internal/carrier/twilio"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestCarrierConnectionTwilio: a line on a twilio connection sends through
// Twilio's Messages API (a fake here; the client is held to Twilio's own
// library in internal/carrier/twilio) with a status callback of the
// connection's; a signed status callback settles the message with Twilio's
// status word; a signed incoming message is the line's inbound text; a
// callback with a bad signature, or whose message id in the URL was
// changed, is 403 and changes nothing.
func TestCarrierConnectionTwilio(t *testing.T) {
	t.Parallel()
	const sid, token = "AC0123", "twilio-auth-token-value"
	var mu sync.Mutex
	var sent []url.Values
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		if r.URL.Path != "/2010-04-01/Accounts/"+sid+"/Messages.json" || user != sid || pass != token {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"code":20003,"message":"Authenticate","status":401}`)
			return
		}
		r.ParseForm()
		mu.Lock()
		sent = append(sent, r.PostForm)
		n := len(sent)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"sid":"SM%032d","status":"queued"}`, n)
	}))
	t.Cleanup(api.Close)

	db := storetest.DSN(t, store.SQLite)
	acct, key := carrierAccount(t, db)
	cliJSON(t, db, &struct{}{}, "carrier", "add", "tw1", "--kind", "twilio", "--account-sid", sid, "--auth-token", token, "--api-base", api.URL)
	line := createLine(t, db, acct, "--number", "4155550100", "--carrier", "tw1").Number
	base := startServer(t, db)

	id := appAPIKeySend(t, base, key, line, "12125550101", "Your order shipped.")
	status := fmt.Sprintf("%s/carrier/tw1/status?m=%d", base, id)
	mu.Lock()
	if len(sent) != 1 || sent[0].Get("From") != "+"+line || sent[0].Get("To") != "+12125550101" || sent[0].Get("Body") != "Your order shipped." ||
		sent[0].Get("StatusCallback") != status {
		t.Fatalf("Twilio got %v", sent)
	}
	mu.Unlock()

	post := func(u string, form url.Values, signedURL string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Twilio-Signature", twilio.Signature(token, signedURL, form))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	thread := func(number string) string {
		r := request(t, "GET", base+apiPrefix+"/sms/conversations/"+line+"/"+number, "Bearer "+key)
		if r.status != 200 {
			t.Fatalf("thread: %d %s", r.status, r.body)
		}
		return string(r.body)
	}
	delivered := url.Values{"MessageSid": {fmt.Sprintf("SM%032d", 1)}, "MessageStatus": {"delivered"}, "AccountSid": {sid},
		"From": {"+" + line}, "To": {"+12125550101"}}
	failed := url.Values{"MessageSid": {fmt.Sprintf("SM%032d", 1)}, "MessageStatus": {"undelivered"}, "ErrorCode": {"30003"}, "AccountSid": {sid},
		"From": {"+" + line}, "To": {"+12125550101"}}
	// Signed for another message: the URL's id is part of what is signed.
	if code := post(status, failed, fmt.Sprintf("%s/carrier/tw1/status?m=%d", base, id+1)); code != http.StatusForbidden {
		t.Errorf("a callback whose message id was changed: %d, want 403", code)
	}
	bad := url.Values{}
	for k, v := range failed {
		bad[k] = v
	}
	req, _ := http.NewRequest(http.MethodPost, status, strings.NewReader(bad.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("an unsigned callback: %v %v, want 403", resp.StatusCode, err)
	}
	if strings.Contains(thread("12125550101"), "undelivered") {
		t.Fatal("a refused callback changed the message")
	}
	if code := post(status, delivered, status); code/100 != 2 {
		t.Fatalf("the signed status callback: %d", code)
	}
	if th := thread("12125550101"); !strings.Contains(th, `"delivered"`) || !strings.Contains(th, fmt.Sprintf(`"id":%d`, id)) {
		t.Errorf("the message after its status callback: %s", th)
	}
	inbound := base + "/carrier/tw1/inbound"
	in := url.Values{"MessageSid": {"SM-in-1"}, "AccountSid": {sid}, "From": {"+12125550199"}, "To": {"+" + line}, "Body": {"Is it Tuesday?"}, "NumMedia": {"0"}}
	if code := post(inbound, in, inbound); code != 200 {
		t.Fatalf("the signed incoming message: %d", code)
	}
	if !strings.Contains(thread("12125550199"), "Is it Tuesday?") {
		t.Errorf("the inbound text is not in its thread")
	}

	var listed struct{ Carriers []map[string]any }
	cliJSON(t, db, &listed, "carrier", "list", "--public-url", "https://sb.example.com")
	if c := listed.Carriers[0]; c["statusUrl"] != "https://sb.example.com/carrier/tw1/status" || c["inboundUrl"] != "https://sb.example.com/carrier/tw1/inbound" ||
		fmt.Sprint(c["secrets"]) != "map[auth-token:set]" || strings.Contains(fmt.Sprint(c), token) {
		t.Errorf("carrier list: %v", c)
	}
}
