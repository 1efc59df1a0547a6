package twilio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"
)

// requireProvidersEnv switches on the tests against Twilio's own Node
// library; CI sets it.
const requireProvidersEnv = "SWITCHBOARD_TEST_PROVIDERS"

// runPeer runs testdata/peer.js with job on its stdin and decodes its
// answer into result.
func runPeer(t *testing.T, job, result any) {
	t.Helper()
	if os.Getenv(requireProvidersEnv) != "1" {
		t.Skipf("set %s=1 to check against Twilio's own Node library (needs node and `npm ci --prefix e2e`)", requireProvidersEnv)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("%s=1 but node is not installed: %v", requireProvidersEnv, err)
	}
	modules, err := filepath.Abs("../../../e2e/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(modules, "twilio", "package.json")); err != nil {
		t.Fatalf("%s=1 but the twilio Node library is not installed (run `npm ci --prefix e2e`): %v", requireProvidersEnv, err)
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

// signCase is a URL and a form to sign, as peer.js takes them.
type signCase struct {
	Name      string     `json:"name"`
	AuthToken string     `json:"authToken"`
	URL       string     `json:"url"`
	Params    url.Values `json:"params"`
	Signature string     `json:"signature,omitempty"`
}

// signCases cover what the signature depends on: the URL byte for byte,
// names sorted, repeated names, unicode, empty names and values.
var signCases = []signCase{
	{Name: "Twilio's documented example", AuthToken: "12345", URL: "https://mycompany.com/myapp.php?foo=1&bar=2", Params: url.Values{
		"CallSid": {"CA1234567890ABCDE"}, "Caller": {"+12349013030"}, "Digits": {"1234"}, "From": {"+12349013030"}, "To": {"+18005551212"},
	}},
	{Name: "a status callback", AuthToken: testAuthToken, URL: "https://sb.example/carrier/twilio/status?line=7&x=a%20b", Params: statusForm},
	{Name: "an incoming MMS", AuthToken: testAuthToken, URL: "https://sb.example/carrier/twilio/inbound", Params: inboundForm},
	{Name: "repeated names, values out of order and repeated", AuthToken: testAuthToken, URL: "https://sb.example/in", Params: url.Values{
		"MediaUrl": {"https://m.example/b", "https://m.example/a", "https://m.example/b"}, "To": {"+15557654321"},
	}},
	{Name: "unicode, sorted by UTF-16 code unit", AuthToken: testAuthToken, URL: "https://sb.example/in?q=ü", Params: url.Values{
		"Body": {"Привет 😀 ünïcode & = + % \r\n"}, "Ünï": {"x"}, "K": {"！", "😀", "é", "\U0010FFFF"}, "😀": {"1"}, "！": {"2"},
	}},
	{Name: "a port and a query string", AuthToken: testAuthToken, URL: "https://sb.example:8443/in?b=2&a=1", Params: url.Values{"A": {"1"}}},
	{Name: "no parameters", AuthToken: testAuthToken, URL: "https://sb.example/in", Params: url.Values{}},
	{Name: "names differing in case and punctuation, and an empty one", AuthToken: testAuthToken, URL: "http://sb.example/in", Params: url.Values{
		"a": {"1"}, "B": {"2"}, "_": {"3"}, "Z1": {"4"}, "Z": {"5"}, "": {"6"}, "a.b": {"7"}, "a-b": {"8"},
	}},
	{Name: "empty values and a name without values", AuthToken: testAuthToken, URL: "https://sb.example/in", Params: url.Values{
		"Body": {""}, "ErrorCode": {""}, "Gone": {},
	}},
}

// TestPeerSignature: Signature and the library's getExpectedTwilioSignature
// agree byte for byte, and the library's validateRequest accepts Signature's
// output and refuses it for a changed form.
func TestPeerSignature(t *testing.T) {
	var validate []signCase
	for _, c := range signCases {
		c.Signature = Signature(c.AuthToken, c.URL, c.Params)
		validate = append(validate, c)
		changed := c
		changed.Name += ", a parameter added"
		changed.Params = with(c.Params, map[string][]string{"Extra": {"1"}})
		validate = append(validate, changed)
	}
	var result struct {
		Signed    []struct{ Name, Signature string } `json:"signed"`
		Validated []struct {
			Name string
			OK   bool
		} `json:"validated"`
	}
	runPeer(t, map[string]any{"sign": signCases, "validate": validate}, &result)
	if len(result.Signed) != len(signCases) || len(result.Validated) != len(validate) {
		t.Fatalf("peer signed %d of %d and validated %d of %d", len(result.Signed), len(signCases), len(result.Validated), len(validate))
	}
	for i, c := range signCases {
		if got := Signature(c.AuthToken, c.URL, c.Params); result.Signed[i].Signature != got {
			t.Errorf("%s: the library signs %s, Signature %s", c.Name, result.Signed[i].Signature, got)
		}
	}
	for i, v := range result.Validated {
		if want := i%2 == 0; v.Name != validate[i].Name || v.OK != want {
			t.Errorf("%s: the library says ok=%v, want %v", validate[i].Name, v.OK, want)
		}
	}
}

// TestPeerURLVariants: which URL a signature may be over, with and
// without ports: VerifyRequest decides as the library's validateRequest.
func TestPeerURLVariants(t *testing.T) {
	tests := []struct {
		signed, public string
		want           bool
	}{
		{"https://sb.example/in?a=1", "https://sb.example/in?a=1", true},
		{"https://sb.example/in?a=1", "https://sb.example:443/in?a=1", true},
		{"https://sb.example:443/in?a=1", "https://sb.example/in?a=1", true},
		{"http://sb.example/in", "http://sb.example:80/in", true},
		{"http://sb.example:80/in", "http://sb.example/in", true},
		{"https://sb.example/in", "https://sb.example:8443/in", true},
		{"https://sb.example:8443/in", "https://sb.example/in", false},
		{"https://sb.example:443/in", "https://sb.example:8443/in", false},
		{"https://sb.example/in", "http://sb.example/in", false},
		{"https://sb.example/in?a=1", "https://sb.example/in?a=2", false},
		{"https://sb.example/in", "https://sb.example/in/", false},
	}
	c := newTestClient(t, Config{})
	var validate []signCase
	for _, tt := range tests {
		validate = append(validate, signCase{
			Name: tt.signed + " checked as " + tt.public, AuthToken: testAuthToken, URL: tt.public,
			Params: statusForm, Signature: Signature(testAuthToken, tt.signed, statusForm),
		})
	}
	var result struct {
		Validated []struct {
			Name string
			OK   bool
		} `json:"validated"`
	}
	runPeer(t, map[string]any{"validate": validate}, &result)
	if len(result.Validated) != len(tests) {
		t.Fatalf("peer validated %d of %d", len(result.Validated), len(tests))
	}
	for i, tt := range tests {
		_, err := c.VerifyRequest(webhook(testAuthToken, tt.signed, statusForm), tt.public)
		if node := result.Validated[i].OK; node != tt.want || (err == nil) != tt.want {
			t.Errorf("signed over %s, checked as %s: the library says %v, VerifyRequest %v; want ok=%v", tt.signed, tt.public, node, err, tt.want)
		}
	}
}

// TestPeerWebhooks: webhooks encoded and signed by node as Twilio sends
// them pass VerifyRequest over HTTP, and their forms parse; ones signed
// with another token or over another URL do not.
func TestPeerWebhooks(t *testing.T) {
	const public = "https://sb.example/carrier/twilio/webhook?line=7"
	c := newTestClient(t, Config{})
	var (
		mu    sync.Mutex
		forms = map[string]url.Values{}
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		form, err := c.VerifyRequest(r, public)
		switch {
		case errors.Is(err, ErrSignature):
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		forms[r.URL.Query().Get("case")] = form
		mu.Unlock()
	}))
	defer srv.Close()

	repeated := url.Values{"MessageSid": {testSID}, "MessageStatus": {"sent"}, "Tag": {"b", "a", "b"}}
	spaces := with(inboundForm, map[string][]string{"Body": {"a b+c %20 & = ?"}})
	type form struct {
		Name      string     `json:"name"`
		Params    url.Values `json:"params"`
		Encoder   string     `json:"encoder,omitempty"`
		SignToken string     `json:"signToken,omitempty"`
		SignURL   string     `json:"signURL,omitempty"`
		want      int
	}
	items := []form{
		{Name: "status", Params: statusForm, want: 200},
		{Name: "inbound", Params: inboundForm, want: 200},
		{Name: "spaces, URLSearchParams", Params: spaces, want: 200},
		{Name: "spaces, querystring", Params: spaces, Encoder: "querystring", want: 200},
		{Name: "repeated", Params: repeated, Encoder: "querystring", want: 200},
		{Name: "another token", Params: statusForm, SignToken: "0123456789abcdef0123456789abcdef", want: 403},
		{Name: "signed over the server's own URL", Params: statusForm, SignURL: srv.URL + "/?line=7", want: 403},
	}
	var result struct {
		Posted []struct {
			Name   string
			Status int
		} `json:"posted"`
	}
	runPeer(t, map[string]any{"post": map[string]any{
		"target": srv.URL + "/", "authToken": testAuthToken, "publicURL": public, "forms": items,
	}}, &result)
	if len(result.Posted) != len(items) {
		t.Fatalf("peer posted %d of %d webhooks", len(result.Posted), len(items))
	}
	mu.Lock()
	defer mu.Unlock()
	for i, it := range items {
		if got := result.Posted[i].Status; got != it.want {
			t.Errorf("%s: answered %d, want %d", it.Name, got, it.want)
		}
		got, ok := forms[it.Name]
		if ok != (it.want == 200) {
			t.Errorf("%s: form passed %v, want %v", it.Name, ok, it.want == 200)
			continue
		}
		if ok && !reflect.DeepEqual(got, it.Params) {
			t.Errorf("%s: VerifyRequest read\n%v\nnode sent\n%v", it.Name, got, it.Params)
		}
	}
	if s, err := ParseStatus(forms["status"]); err != nil || s.Status != "delivered" || s.MessageSID != testSID {
		t.Errorf("ParseStatus = %+v, %v", s, err)
	}
	for _, name := range []string{"inbound", "spaces, querystring"} {
		if in, err := ParseInbound(forms[name]); err != nil || len(in.Media) != 2 || in.Body != forms[name].Get("Body") {
			t.Errorf("%s: ParseInbound = %+v, %v", name, in, err)
		}
	}
}

// TestPeerSend: the library's own client sends to the fake API, so the
// fake is held to what the real client sends and reads, and Send's
// requests are held to the library's.
func TestPeerSend(t *testing.T) {
	api := newFakeAPI(t)
	api.setAnswer(func(w http.ResponseWriter, r *http.Request) {
		switch r.Form.Get("To") {
		case "+15550000400":
			answerJSON(400, twilioError(21211, "Invalid 'To' Phone Number: +1555000040", 400))(w, r)
		case "+15550000429":
			answerJSON(429, twilioError(20429, "Too Many Requests", 429))(w, r)
		default:
			answerCreated(w, r)
		}
	})
	const callback = "https://switchboard.example/carrier/twilio/status?line=7&x=a%20b"
	body := "Hello & <welcome>, ünïcode ✓ 😀 1+1=2 %20"
	media := []string{"https://media.example/b.png", "https://media.example/a.jpg?x=1&y=2"}
	library := []map[string]any{
		{"to": "+15557654321", "from": "+15551234567", "body": body, "mediaUrl": media, "statusCallback": callback},
		{"to": "+15557654321", "from": "+15551234567", "body": "one medium", "mediaUrl": media[:1]},
		{"to": "+15557654321", "messagingServiceSid": testServiceSID, "body": "through a service"},
		{"to": "+15550000400", "from": "+15551234567", "body": "x"},
		{"to": "+15550000429", "from": "+15551234567", "body": "x"},
	}
	ours := []struct {
		service string
		msg     Message
		want    string // outcome
	}{
		{msg: Message{From: "+15551234567", To: "+15557654321", Body: body, MediaURLs: media, StatusCallback: callback}, want: "ok"},
		{msg: Message{From: "+15551234567", To: "+15557654321", Body: "one medium", MediaURLs: media[:1]}, want: "ok"},
		{service: testServiceSID, msg: Message{From: "+15551234567", To: "+15557654321", Body: "through a service"}, want: "ok"},
		{msg: Message{From: "+15551234567", To: "+15550000400", Body: "x"}, want: "refused"},
		{msg: Message{From: "+15551234567", To: "+15550000429", Body: "x"}, want: "throttled"},
	}
	type libraryError struct {
		ClassName, Message, MoreInfo string
		Status, Code                 int
	}
	var result struct {
		Sent []struct {
			SID, Status string
			Error       *libraryError
		} `json:"sent"`
	}
	runPeer(t, map[string]any{"send": map[string]any{
		"apiBase": api.srv.URL, "accountSid": testAccountSID, "authToken": testAuthToken, "messages": library,
	}}, &result)

	theirs := api.requests()
	if len(theirs) != len(library) || len(result.Sent) != len(library) {
		t.Fatalf("the library made %d requests and reported %d results, want %d", len(theirs), len(result.Sent), len(library))
	}
	checkRequest(t, theirs[0], url.Values{
		"To": {"+15557654321"}, "From": {"+15551234567"}, "Body": {body}, "MediaUrl": media, "StatusCallback": {callback},
	})
	for i, want := range []struct{ sid, status string }{{testSID, "queued"}, {testSID, "queued"}, {testSID, "accepted"}} {
		if s := result.Sent[i]; s.SID != want.sid || s.Status != want.status || s.Error != nil {
			t.Errorf("message %d: the library read %+v from the fake's answer, want sid %s status %s", i, s, want.sid, want.status)
		}
	}
	for i, want := range []libraryError{
		{ClassName: "RestException", Status: 400, Code: 21211, Message: "Invalid 'To' Phone Number: +1555000040", MoreInfo: "https://www.twilio.com/docs/errors/21211"},
		{ClassName: "RestException", Status: 429, Code: 20429, Message: "Too Many Requests", MoreInfo: "https://www.twilio.com/docs/errors/20429"},
	} {
		if got := result.Sent[3+i].Error; got == nil || *got != want {
			t.Errorf("the library read the fake's %d as %+v, want %+v", want.Status, got, want)
		}
	}

	// Send's request for each message must be the library's.
	for i, o := range ours {
		c := newTestClient(t, Config{APIBase: api.srv.URL, MessagingServiceSID: o.service})
		sid, err := c.Send(context.Background(), o.msg)
		if got := outcome(t, err); got != o.want {
			t.Errorf("message %d: Send = %q, %v: outcome %s, want %s", i, sid, err, got, o.want)
		}
		if err == nil && sid != result.Sent[i].SID {
			t.Errorf("message %d: Send read sid %q, the library %q", i, sid, result.Sent[i].SID)
		}
		got := api.requests()[len(library)+i]
		checkRequest(t, got, theirs[i].Form)
	}
}
