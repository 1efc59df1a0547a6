package telnyx

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// requireProvidersEnv switches on the tests against Telnyx's own Node
// library; CI sets it.
const requireProvidersEnv = "SWITCHBOARD_TEST_PROVIDERS"

// runPeer runs testdata/peer.js with job on its stdin and decodes its
// answer into result.
func runPeer(t *testing.T, job, result any) {
	t.Helper()
	if os.Getenv(requireProvidersEnv) != "1" {
		t.Skipf("set %s=1 to check against Telnyx's own Node library (needs node and `npm ci --prefix e2e`)", requireProvidersEnv)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("%s=1 but node is not installed: %v", requireProvidersEnv, err)
	}
	modules, err := filepath.Abs("../../../e2e/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(modules, "telnyx", "package.json")); err != nil {
		t.Fatalf("%s=1 but the telnyx Node library is not installed (run `npm ci --prefix e2e`): %v", requireProvidersEnv, err)
	}
	in, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "testdata/peer.js")
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node testdata/peer.js: %v\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), result); err != nil {
		t.Fatalf("peer.js wrote %q: %v", stdout.String(), err)
	}
}

type peerVerdict struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Error string `json:"error"`
}

type peerSigned struct {
	Name         string `json:"name"`
	Body         string `json:"body"`
	Timestamp    string `json:"timestamp"`
	Signature    string `json:"signature"`
	SelfVerified bool   `json:"selfVerified"`
}

// TestPeerVerifiesGoSignatures: webhooks signed the way Verify expects
// Telnyx to sign them pass the library's check, and the ones Verify
// refuses fail it too.
func TestPeerVerifiesGoSignatures(t *testing.T) {
	pub, priv := newKey(t)
	_, otherPriv := newKey(t)
	pubB64 := base64.StdEncoding.EncodeToString(pub)
	finalized := readTestdata(t, "message_finalized_failed.json")
	unicode := `{"data":{"event_type":"message.received","payload":{"text":"héllo 👋 ünïcode\u2028"}}}`
	// The library checks timestamps against its own clock.
	at := time.Now()

	type signed struct {
		Name      string `json:"name"`
		PublicKey string `json:"publicKey"`
		Body      string `json:"body"`
		Signature string `json:"signature"`
		Timestamp string `json:"timestamp"`
		wantOK    bool
	}
	item := func(name, body string, sig, ts string, wantOK bool) signed {
		return signed{Name: name, PublicKey: pubB64, Body: body, Signature: sig, Timestamp: ts, wantOK: wantOK}
	}
	sig, ts := sign(priv, finalized, at)
	uSig, uTS := sign(priv, unicode, at)
	eSig, eTS := sign(priv, "{}", at)
	staleSig, staleTS := sign(priv, finalized, at.Add(-2*Tolerance))
	aheadSig, aheadTS := sign(priv, finalized, at.Add(2*Tolerance))
	otherSig, _ := sign(otherPriv, finalized, at)
	items := []signed{
		item("a message.finalized", finalized, sig, ts, true),
		item("unicode", unicode, uSig, uTS, true),
		item("an empty object", "{}", eSig, eTS, true),
		item("body tampered", strings.Replace(finalized, "delivery_failed", "delivered", 1), sig, ts, false),
		item("timestamp changed", finalized, sig, strconv.FormatInt(at.Unix()-1, 10), false),
		item("ten minutes old", finalized, staleSig, staleTS, false),
		item("ten minutes ahead", finalized, aheadSig, aheadTS, false),
		item("another key", finalized, otherSig, ts, false),
		item("no signature", finalized, "", ts, false),
	}
	var result struct {
		Verified []peerVerdict `json:"verified"`
	}
	runPeer(t, map[string]any{"verify": items}, &result)
	if len(result.Verified) != len(items) {
		t.Fatalf("peer gave %d verdicts for %d webhooks", len(result.Verified), len(items))
	}
	for i, it := range items {
		v := result.Verified[i]
		if v.Name != it.Name || v.OK != it.wantOK {
			t.Errorf("%s: the library says ok=%v (%s), want %v", it.Name, v.OK, v.Error, it.wantOK)
		}
		if !v.OK && !strings.HasPrefix(v.Error, "TelnyxWebhookVerificationError") {
			t.Errorf("%s: the library refused it for another reason: %s", it.Name, v.Error)
		}
		goErr := Verify(pub, []byte(it.Body), it.Signature, it.Timestamp, time.Now())
		if (goErr == nil) != it.wantOK {
			t.Errorf("%s: Verify says %v, the library ok=%v", it.Name, goErr, v.OK)
		}
	}
}

// TestPeerSignaturesVerify: webhooks signed by node's Ed25519 over
// timestamp|body, which the library accepts, pass Verify.
func TestPeerSignaturesVerify(t *testing.T) {
	at := time.Now()
	unix := func(d time.Duration) string { return strconv.FormatInt(at.Add(d).Unix(), 10) }
	finalized := readTestdata(t, "message_finalized_failed.json")
	received := readTestdata(t, "message_received_mms.json")
	type toSign struct {
		Name      string `json:"name"`
		Body      string `json:"body"`
		Timestamp string `json:"timestamp"`
		want      error
	}
	items := []toSign{
		{Name: "message.finalized", Body: finalized, Timestamp: unix(0)},
		{Name: "message.received with emoji", Body: received, Timestamp: unix(0)},
		{Name: "a minute old", Body: finalized, Timestamp: unix(-time.Minute)},
		{Name: "ten minutes old", Body: finalized, Timestamp: unix(-2 * Tolerance), want: ErrStale},
		{Name: "ten minutes ahead", Body: finalized, Timestamp: unix(2 * Tolerance), want: ErrStale},
	}
	var result struct {
		PublicKey string       `json:"publicKey"`
		Signed    []peerSigned `json:"signed"`
	}
	runPeer(t, map[string]any{"sign": items}, &result)
	pub, err := ParsePublicKey(result.PublicKey)
	if err != nil {
		t.Fatalf("ParsePublicKey(node's key %q): %v", result.PublicKey, err)
	}
	if len(result.Signed) != len(items) {
		t.Fatalf("peer signed %d of %d webhooks", len(result.Signed), len(items))
	}
	for i, it := range items {
		s := result.Signed[i]
		if s.Name != it.Name || s.Body != it.Body || s.Timestamp != it.Timestamp {
			t.Fatalf("peer answered %q for %q", s.Name, it.Name)
		}
		if s.SelfVerified != (it.want == nil) {
			t.Errorf("%s: the library says its own signature ok=%v, want %v", it.Name, s.SelfVerified, it.want == nil)
		}
		err := Verify(pub, []byte(s.Body), s.Signature, s.Timestamp, time.Now())
		if !errors.Is(err, it.want) {
			t.Errorf("%s: Verify: %v, want %v", it.Name, err, it.want)
		}
		if it.want != nil {
			continue
		}
		tampered := strings.Replace(s.Body, "+15557654321", "+15557654322", 1)
		if err := Verify(pub, []byte(tampered), s.Signature, s.Timestamp, time.Now()); !errors.Is(err, ErrSignature) {
			t.Errorf("%s, body tampered: Verify: %v, want ErrSignature", it.Name, err)
		}
		if _, err := ParseEvent([]byte(s.Body)); err != nil {
			t.Errorf("%s: ParseEvent: %v", it.Name, err)
		}
	}
}

// TestPeerSend: the library's own client sends to the fake API, so the
// fake is held to what the real client sends and reads, and Send's request
// is held to the library's.
func TestPeerSend(t *testing.T) {
	api := newFakeAPI(t)
	api.setAnswer(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ To string }
		raw, _ := io.ReadAll(r.Body)
		json.Unmarshal(raw, &body)
		switch body.To {
		case "+15550000422":
			answerJSON(422, telnyxErrors("10004", "Missing required parameter", "The 'text' parameter is required."))(w, r)
		case "+15550000429":
			answerJSON(429, telnyxErrors("10011", "Too many requests", "You have exceeded the maximum number of allowed requests."))(w, r)
		default:
			answerJSON(200, `{"data":{"record_type":"message","id":"40385f64-aaaa-bbbb-cccc-2c963f66afa6"}}`)(w, r)
		}
	})
	const profile = "4001767e-ce0f-4cae-9d5f-0d5e636e7809"
	full := map[string]any{
		"from": "+15551234567", "to": "+15557654321", "text": "Hello & <welcome>, ünïcode ✓",
		"media_urls":           []any{"https://media.example/a.jpg"},
		"webhook_url":          "https://switchboard.example/carrier/telnyx/webhook",
		"messaging_profile_id": profile,
	}
	refused := map[string]any{"from": "+15551234567", "to": "+15550000422", "text": "x"}
	throttled := map[string]any{"from": "+15551234567", "to": "+15550000429", "text": "x"}
	var result struct {
		Sent []struct {
			ID         string `json:"id"`
			Status     int    `json:"status"`
			ErrorClass string `json:"errorClass"`
			Error      struct {
				Errors []Problem `json:"errors"`
			} `json:"error"`
		} `json:"sent"`
	}
	runPeer(t, map[string]any{"send": map[string]any{
		"baseURL": api.srv.URL + "/v2", "apiKey": testAPIKey,
		"messages": []any{full, refused, throttled},
	}}, &result)

	got := api.requests()
	if len(got) != 3 || len(result.Sent) != 3 {
		t.Fatalf("the library made %d requests and reported %d results, want 3 and 3", len(got), len(result.Sent))
	}
	for i, want := range []map[string]any{full, refused, throttled} {
		checkRequest(t, got[i], testAPIKey, want)
	}
	if result.Sent[0].ID != "40385f64-aaaa-bbbb-cccc-2c963f66afa6" {
		t.Errorf("the library read id %q from the fake's answer", result.Sent[0].ID)
	}
	for i, want := range []struct {
		status int
		class  string
		code   string
	}{{422, "UnprocessableEntityError", "10004"}, {429, "RateLimitError", "10011"}} {
		s := result.Sent[i+1]
		if s.Status != want.status || s.ErrorClass != want.class || len(s.Error.Errors) != 1 || s.Error.Errors[0].Code != want.code {
			t.Errorf("the library read the fake's %d as %d %s %+v, want %s with code %s", want.status, s.Status, s.ErrorClass, s.Error.Errors, want.class, want.code)
		}
	}

	// Send's request for the same message must be the library's.
	c := newTestClient(t, Config{APIBase: api.srv.URL, MessagingProfileID: profile})
	id, err := c.Send(context.Background(), Message{
		From: "+15551234567", To: "+15557654321", Text: "Hello & <welcome>, ünïcode ✓",
		MediaURLs:  []string{"https://media.example/a.jpg"},
		WebhookURL: "https://switchboard.example/carrier/telnyx/webhook",
	})
	if err != nil || id != result.Sent[0].ID {
		t.Fatalf("Send = %q, %v; want %q as the library read it", id, err, result.Sent[0].ID)
	}
	got = api.requests()
	checkRequest(t, got[3], testAPIKey, got[0].Body)
}
