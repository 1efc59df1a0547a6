package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"switchboard/internal/apitest"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// The composer and line screen test works a conversation in the app as a
// person would: a saved reply, a text with an emoji (UCS-2) and its live
// quote, an attachment, a double-clicked Send, a draft across a reload, a
// scheduled message cancelled from the line screen, a sender blocked and
// unblocked. Every effect is checked through the public API, not the page.
func TestAppComposerInBrowser(t *testing.T) {
	t.Parallel()
	requireAxe(t)
	// One engine: the flow is the app's, not the store's (the API's
	// behaviour on both engines is covered by the API tests).
	testAppComposer(t, storetest.DSN(t, store.SQLite))
}

const (
	cmpLine  = "14155550100"
	cmpPeer  = "14155550199"
	cmpBlock = "14155550177"
)

func testAppComposer(t *testing.T, db string) {
	// ---- provisioning: a person, a line, prices, and a thread to answer ----
	acct := createAccount(t, db, "Composer Co")
	// A front-desk person: her own lines only, no reports.
	if out, exit := cli(t, db, "role", "create", "--account", fmt.Sprint(acct), "--name", "front-desk", "--permissions", "users:self,numbers:assigned"); exit != 0 {
		t.Fatalf("role create: exit %d: %s", exit, out)
	}
	dana := createUser(t, db, acct, "--first", "Dana", "--last", "Reyes", "--username", "dana", "--password", "composer pass", "--role", "front-desk")
	createLine(t, db, acct, "--number", cmpLine, "--name", "Front desk", "--users", ids(dana))
	if _, exit := cli(t, db, "rate", "set", "--account", fmt.Sprint(acct), "--prefix", "1", "--sms", "0.0079", "--mms", "0.0213"); exit != 0 {
		t.Fatalf("rate set: exit %d", exit)
	}
	key := createKey(t, db, acct, "checks", "all").Key
	base := startServer(t, db)
	if r := postJSON(t, base+apiPrefix+"/sms/messages", key,
		fmt.Sprintf(`{"from": %q, "to": [%q], "message": "Your table is booked for 8pm."}`, cmpLine, cmpPeer)); r.status != http.StatusCreated {
		t.Fatalf("seed the thread: POST /sms/messages: status %d, want 201\n%s", r.status, r.body)
	}

	b := newAppBrowser(t)
	a := b.signIn(base, "dana", "composer pass")
	net := watchAPI(t, a)

	threadURL := base + "/app/inbox/" + cmpLine + "/" + cmpPeer
	a.do("open the thread", chromedp.Navigate(threadURL))
	textarea := `form.composer textarea[name="message"]`
	a.do("wait for the composer", chromedp.WaitVisible(textarea))
	if label := appEval[string](a, "the textarea's label", `(() => { const t = document.querySelector('form.composer textarea');
		return t.labels.length ? t.labels[0].innerText : ''; })()`); !strings.Contains(label, "(415) 555-0199") {
		t.Errorf("composer: the textarea's label is %q, want one naming the recipient", label)
	}

	// ---- saved replies: save the text as one, then insert it, by keyboard ----
	a.do("save a reply",
		chromedp.SendKeys(textarea, "We are open 9 to 5, Monday to Friday."),
		chromedp.Focus(`.cmp-replies summary`), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(`.cmp-save-reply input`),
		chromedp.SendKeys(`.cmp-save-reply input`, "Opening hours\r"),
		chromedp.WaitVisible(`.cmp-reply`),
		chromedp.KeyEvent("\x1b"))
	if got := appEval[string](a, "focus", `document.activeElement.tagName`); got != "SUMMARY" {
		t.Errorf("saved replies: Escape left focus on %s, want the menu's button", got)
	}
	cmpClear(a, textarea)
	// The list is on the page already (from the save above), so what shows
	// the menu open is focus reaching its first reply: the details' toggle
	// event, which moves it, comes a moment after the key.
	a.do("open the saved replies: focus moves to the first reply",
		chromedp.Focus(`.cmp-replies summary`), chromedp.KeyEvent("\r"),
		cmpPoll(`document.activeElement === document.querySelector('.cmp-reply')`))
	a.do("insert the saved reply", chromedp.KeyEvent("\r"), cmpPoll(`document.querySelector('form.composer textarea').value.includes('open 9 to 5')`))
	if got := appEval[string](a, "focus", `document.activeElement.tagName`); got != "TEXTAREA" {
		t.Errorf("saved replies: focus went to %s after inserting, want the textarea", got)
	}
	cmpClear(a, textarea)

	// ---- a UCS-2 text and its live quote ----
	text := "Hello 😀 from the app"
	a.do("type a text with an emoji", chromedp.Focus(textarea), chromedp.SendKeys(textarea, "Hello "))
	if _, err := chromedp.Call(a.ctx, input.InsertText, input.InsertTextParams{Text: "😀"}); err != nil {
		t.Fatalf("type the emoji: %v", err)
	}
	a.do("type the rest", chromedp.SendKeys(textarea, " from the app"),
		cmpPoll(`(document.querySelector('.cmp-preview')?.innerText || '').includes('UCS-2')`))
	preview := appEval[string](a, "read the preview", `document.querySelector('.cmp-preview').innerText`)
	for _, want := range []string{"UCS-2", "😀", "1 segment", "$0.0079"} {
		if !strings.Contains(preview, want) {
			t.Errorf("preview got %q, want it to say %q", preview, want)
		}
	}
	a.screenshots("composer-ucs2")
	q := net.last(t, "POST", "/sms/quote")
	var quote struct {
		Data struct {
			Billing  map[string]any `json:"billing"`
			Messages []struct {
				Encoding       string   `json:"encoding"`
				UCS2Characters []string `json:"ucs2Characters"`
				Units          int      `json:"units"`
			} `json:"messages"`
		} `json:"data"`
	}
	cmpDecode(t, "the quote's answer", q.body, &quote)
	if len(quote.Data.Messages) != 1 || quote.Data.Messages[0].Encoding != "UCS-2" || strings.Join(quote.Data.Messages[0].UCS2Characters, "") != "😀" {
		t.Errorf("the quote the preview shows: %s, want one UCS-2 message naming 😀", q.body)
	}

	// ---- an attachment, uploaded through POST /sms/media ----
	img := filepath.Join(t.TempDir(), "menu.png")
	writePNG(t, img)
	a.do("attach an image",
		chromedp.SetUploadFiles(`form.composer input[type="file"]`, []string{img}, chromedp.NodeReady),
		cmpPoll(`(() => { const n = document.querySelector('.cmp-thumb-note'); return n && !n.innerText.includes('Uploading'); })()`),
		cmpPoll(`(document.querySelector('.cmp-preview')?.innerText || '').includes('MMS')`))
	if note := appEval[string](a, "the thumbnail", `document.querySelector('.cmp-thumb').innerText`); strings.Contains(note, "Not attached") {
		t.Fatalf("attachment: %q", note)
	}
	// Too big: refused at once, with the limit, and never uploaded.
	big := filepath.Join(t.TempDir(), "poster.png")
	if err := os.WriteFile(big, append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 6<<20)...), 0o644); err != nil {
		t.Fatal(err)
	}
	a.do("attach an image over 5 MB",
		chromedp.SetUploadFiles(`form.composer input[type="file"]`, []string{big}, chromedp.NodeReady),
		cmpPoll(`!document.querySelector('.cmp-error').hidden`))
	if msg := appEval[string](a, "the error", `document.querySelector('.cmp-error').innerText`); !strings.Contains(msg, "poster.png") || !strings.Contains(msg, "5 MB") {
		t.Errorf("an image over 5 MB: the composer says %q, want it to name the file and the 5 MB limit", msg)
	}
	if n := appEval[float64](a, "count the thumbnails", `document.querySelectorAll('.cmp-thumb').length`); n != 1 {
		t.Errorf("an image over 5 MB: %v thumbnails, want only the first image's", n)
	}
	if m := net.all("POST", "/sms/media"); len(m) != 1 || m[0].status != http.StatusCreated {
		t.Errorf("attachment: POST /sms/media answers %v, want one 201", m)
	}
	if !strings.Contains(appEval[string](a, "the preview", `document.querySelector('.cmp-preview').innerText`), "$0.0213") {
		t.Errorf("preview with an image: got %q, want the MMS price $0.0213", appEval[string](a, "the preview", `document.querySelector('.cmp-preview').innerText`))
	}
	a.screenshots("composer-attachment")
	a.axe("the composer")

	// ---- Send: the answer is lost on the way back ----
	// The server sends the message, but the browser sees the connection
	// reset: the person cannot know whether it went, and tries again.
	quoteBefore := net.last(t, "POST", "/sms/quote")
	loseNextAnswer(t, a, "/sms/messages")
	a.do("Send, and lose the answer",
		chromedp.Click(`button.cmp-send`),
		cmpPoll(`!document.querySelector('.cmp-error').hidden`))
	if msg := appEval[string](a, "the error", `document.querySelector('.cmp-error').innerText`); !strings.Contains(msg, "never sent twice") {
		t.Errorf("after a lost answer the composer says %q, want it to say that trying again is safe", msg)
	}
	if got := appEval[string](a, "the textarea", `document.querySelector('form.composer textarea').value`); got != text {
		t.Errorf("after a lost answer the textarea holds %q, want the text kept for the retry", got)
	}

	// ---- the retry: Send double-clicked, and Ctrl+Enter on top ----
	a.do("double-click Send and press Ctrl+Enter",
		chromedp.DoubleClick(`button.cmp-send`),
		chromedp.Focus(textarea),
		chromedp.KeyEvent("\r", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		cmpPoll(`!!document.querySelector('.cmp-sent')`))
	sends := net.all("POST", "/sms/messages")
	if len(sends) != 2 || sends[0].status != 0 || sends[1].status != http.StatusCreated {
		t.Errorf("Send: POST /sms/messages requests %v, want exactly 2: the lost one and one retry (a double click and Ctrl+Enter while sending are one)", sends)
	}
	keys := map[string]bool{}
	for _, s := range sends {
		keys[s.idempotencyKey] = true
	}
	if len(sends) == 0 || keys[""] || len(keys) != 1 {
		t.Errorf("Send: Idempotency-Key of the attempts: %v, want one key, present on every attempt", keys)
	}
	sends = sends[len(sends)-1:]
	thread := getData[struct {
		Messages []struct {
			Direction string   `json:"direction"`
			Text      string   `json:"text"`
			Media     []string `json:"media"`
		} `json:"messages"`
	}](t, base+apiPrefix+"/sms/conversations/"+cmpLine+"/"+cmpPeer, key)
	out := 0
	for _, m := range thread.Messages {
		if m.Direction == "out" {
			out++
		}
	}
	if out != 2 || len(thread.Messages) == 0 || thread.Messages[0].Text != text || len(thread.Messages[0].Media) != 1 {
		t.Errorf("thread after Send: %s, want 2 messages sent (the seed and one from the app, newest %q with 1 image)", jsonString(thread), text)
	}
	// The quote the person saw is what the send charged: same billing.
	var sent, quoted struct {
		Data struct {
			Billing map[string]any `json:"billing"`
		} `json:"data"`
	}
	if len(sends) > 0 {
		cmpDecode(t, "the send's answer", sends[0].body, &sent)
		cmpDecode(t, "the quote's answer", quoteBefore.body, &quoted)
		if jsonString(sent.Data.Billing) != jsonString(quoted.Data.Billing) || sent.Data.Billing["totalPrice"] == nil {
			t.Errorf("quote versus send: the quote's billing %s, the send's %s, want the same", jsonString(quoted.Data.Billing), jsonString(sent.Data.Billing))
		}
		if shown := appEval[string](a, "the charge shown", `document.querySelector('.cmp-sent').innerText`); !strings.Contains(shown, "$0.0213") {
			t.Errorf("after Send the composer says %q, want the charge $0.0213", shown)
		}
	}
	if got := appEval[string](a, "the textarea", `document.querySelector('form.composer textarea').value`); got != "" {
		t.Errorf("after Send the textarea holds %q, want it empty", got)
	}

	// ---- a draft survives a reload ----
	draft := "Checking with the kitchen about the allergy"
	a.do("type a draft", chromedp.SendKeys(textarea, draft), cmpPoll(`document.querySelector('.cmp-status').innerText.includes('Draft saved')`))
	a.do("reload the page", chromedp.Reload())
	a.do("wait for the draft", chromedp.WaitVisible(textarea),
		cmpPoll(fmt.Sprintf(`document.querySelector('form.composer textarea').value === %q`, draft)))

	// ---- schedule it ----
	sendAt := time.Now().Add(48 * time.Hour).Truncate(time.Minute)
	a.do("open Schedule", chromedp.Click(`.cmp-schedule summary`), chromedp.WaitVisible(`.cmp-schedule input[type="datetime-local"]`))
	a.screenshots("schedule")
	a.do("choose the time and schedule",
		chromedp.SetValue(`.cmp-schedule input[type="datetime-local"]`, sendAt.Format("2006-01-02T15:04")),
		chromedp.Click(`.cmp-schedule-button`),
		cmpPoll(`!!document.querySelector('.cmp-scheduled')`))
	scheduled := getData[[]struct {
		ID     int64     `json:"id"`
		Text   string    `json:"text"`
		SendAt time.Time `json:"sendAt"`
	}](t, base+apiPrefix+"/sms/lines/"+cmpLine+"/scheduled", key)
	if len(scheduled) != 1 || scheduled[0].Text != draft || !scheduled[0].SendAt.Equal(sendAt) {
		t.Fatalf("scheduled messages: %s, want one, %q at %s", jsonString(scheduled), draft, sendAt.UTC())
	}
	// Scheduling discarded the draft (the person's, so asked with their token).
	if got := appEval[float64](a, "the draft after scheduling", fmt.Sprintf(`import('/app/js/api.js').then((m) =>
		m.api('GET', '/sms/drafts/sms-%s-%s').then(() => 200, (e) => e.status))`, cmpLine, cmpPeer)); got != 404 {
		t.Errorf("GET the draft after scheduling: %v, want 404 (discarded)", got)
	}

	// ---- the line screen: the scheduled message, a blocked sender ----
	a.do("open the line screen from the confirmation",
		chromedp.Click(`.cmp-status a`), chromedp.WaitVisible(fmt.Sprintf(`.ln-row[data-id="%d"]`, scheduled[0].ID)))
	a.do("block a sender",
		chromedp.SendKeys(`#block-number`, "(415) 555-0177"), chromedp.SendKeys(`#block-reason`, "Spam about car warranties"),
		chromedp.Click(`.ln-block-form button[type="submit"]`),
		chromedp.WaitVisible(fmt.Sprintf(`.ln-row[data-number="%s"]`, cmpBlock)))
	blocked := getData[[]struct {
		Number, Reason string
	}](t, base+apiPrefix+"/sms/lines/"+cmpLine+"/blocked", key)
	if len(blocked) != 1 || blocked[0].Number != cmpBlock || blocked[0].Reason != "Spam about car warranties" {
		t.Errorf("blocked senders after Block: %s, want %s with the reason", jsonString(blocked), cmpBlock)
	}
	a.screenshots("line")
	a.axe("the line screen")

	a.do("cancel the scheduled message",
		chromedp.Click(`.ln-cancel`), chromedp.WaitVisible(`.ln-yes`), chromedp.Click(`.ln-yes`),
		cmpPoll(`document.querySelector('main').innerText.includes('Nothing scheduled')`))
	if left := getData[[]json.RawMessage](t, base+apiPrefix+"/sms/lines/"+cmpLine+"/scheduled", key); len(left) != 0 {
		t.Errorf("scheduled messages after Cancel: %d, want none", len(left))
	}
	a.do("unblock the sender",
		chromedp.Click(`.ln-unblock`), chromedp.WaitVisible(`.ln-yes`), chromedp.Click(`.ln-yes`),
		cmpPoll(`document.querySelector('main').innerText.includes('No blocked senders')`))
	if left := getData[[]json.RawMessage](t, base+apiPrefix+"/sms/lines/"+cmpLine+"/blocked", key); len(left) != 0 {
		t.Errorf("blocked senders after Unblock: %d, want none", len(left))
	}
	if n := net.validate(t); n < 20 {
		t.Errorf("validated %d of the page's API answers against the OpenAPI document, want every one (at least 20)", n)
	}
}

// loseNextAnswer makes the browser lose the answer to the page's next
// request to the API path: the request reaches the server, which acts on
// it, and the page sees the connection reset.
func loseNextAnswer(t *testing.T, a *appTab, path string) {
	t.Helper()
	if _, err := chromedp.Call(a.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
		{URLPattern: "*" + apiPrefix + path, RequestStage: fetch.RequestStageResponse}}}); err != nil {
		t.Fatalf("Fetch.enable: %v", err)
	}
	go func() {
		for ev, err := range chromedp.Events(a.ctx, fetch.RequestPaused) {
			if err != nil {
				return
			}
			chromedp.Call(a.ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonConnectionReset})
			chromedp.Call(a.ctx, fetch.Disable, cdp.Empty{})
			return
		}
	}()
}

// cmpPoll waits (within the step's time) until expression is truthy.
func cmpPoll(expression string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expression, chromedp.WithPollingInterval(50*time.Millisecond))
}

// cmpClear empties a text field as a person does: select all, delete.
func cmpClear(a *appTab, sel string) {
	a.t.Helper()
	a.do("clear "+sel, chromedp.Focus(sel),
		chromedp.KeyEvent("a", chromedp.KeyModifiers(chromedp.ModifierCtrl)),
		chromedp.KeyEvent("\b"),
		cmpPoll(fmt.Sprintf(`document.querySelector(%q).value === ''`, sel)))
}

func cmpDecode(t *testing.T, what string, body []byte, v any) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber() // prices compare as the decimals the server wrote
	if err := d.Decode(v); err != nil {
		t.Fatalf("%s: %v: %s", what, err, body)
	}
}

// writePNG writes a small real PNG (the API checks the signature).
func writePNG(t *testing.T, path string) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 40, 30))
	for x := 0; x < 40; x++ {
		for y := 0; y < 30; y++ {
			img.Set(x, y, color.RGBA{uint8(x * 6), uint8(y * 8), 160, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ---- the API calls the page makes, as the browser saw them ----

type apiCall struct {
	method, path, url string
	idempotencyKey    string
	status            int64
	header            http.Header
	body              []byte
	read              bool // body read from the browser (or none to read)
}

func (c apiCall) String() string { return fmt.Sprintf("%s %s -> %d", c.method, c.path, c.status) }

type apiWatch struct {
	t     *testing.T
	mu    sync.Mutex
	calls map[network.RequestID]*apiCall
	order []network.RequestID
	done  map[network.RequestID]chan struct{}
}

// watchAPI records the page's requests to the public API with their answers'
// bodies (read from the browser once each has loaded).
func watchAPI(t *testing.T, a *appTab) *apiWatch {
	w := &apiWatch{t: t, calls: map[network.RequestID]*apiCall{}, done: map[network.RequestID]chan struct{}{}}
	finished := make(chan network.RequestID, 1024)
	err := chromedp.Listen(a.ctx, func(ev any) {
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			i := strings.Index(e.Request.URL, apiPrefix+"/")
			if i < 0 || e.Request.Method == "OPTIONS" {
				return
			}
			path := e.Request.URL[i+len(apiPrefix):]
			if q := strings.IndexByte(path, '?'); q >= 0 {
				path = path[:q]
			}
			var k string
			for name, v := range e.Request.Headers {
				if strings.EqualFold(name, "Idempotency-Key") {
					k, _ = v.(string)
				}
			}
			w.mu.Lock()
			w.calls[e.RequestID] = &apiCall{method: e.Request.Method, path: path, url: e.Request.URL, idempotencyKey: k}
			w.order = append(w.order, e.RequestID)
			w.done[e.RequestID] = make(chan struct{})
			w.mu.Unlock()
		case *network.EventResponseReceived:
			w.mu.Lock()
			if c := w.calls[e.RequestID]; c != nil {
				c.status = e.Response.Status
				c.header = browserHeader(e.Response.Headers)
			}
			w.mu.Unlock()
		case *network.EventLoadingFinished:
			select {
			case finished <- e.RequestID:
			default:
			}
		case *network.EventLoadingFailed:
			w.mu.Lock()
			if ch := w.done[e.RequestID]; ch != nil {
				close(ch)
				delete(w.done, e.RequestID)
			}
			w.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatalf("watch the page's requests: %v", err)
	}
	go func() {
		for id := range finished {
			w.mu.Lock()
			c, ch := w.calls[id], w.done[id]
			w.mu.Unlock()
			if c == nil || ch == nil {
				continue
			}
			if !strings.HasPrefix(c.path, "/events") {
				r, err := chromedp.Call(a.ctx, network.GetResponseBody, network.GetResponseBodyParams{RequestID: id})
				w.mu.Lock()
				c.body, c.read = r.Body, err == nil
				w.mu.Unlock()
			}
			w.mu.Lock()
			close(ch)
			delete(w.done, id)
			w.mu.Unlock()
		}
	}()
	return w
}

// all returns the calls of method to path, oldest first, once each has
// finished (status 0: it failed without an answer).
func (w *apiWatch) all(method, path string) []apiCall {
	w.mu.Lock()
	var wait []chan struct{}
	for _, id := range w.order {
		if c := w.calls[id]; c.method == method && c.path == path && w.done[id] != nil {
			wait = append(wait, w.done[id])
		}
	}
	w.mu.Unlock()
	for _, ch := range wait {
		select {
		case <-ch:
		case <-time.After(stepTimeout):
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []apiCall
	for _, id := range w.order {
		if c := w.calls[id]; c.method == method && c.path == path {
			out = append(out, *c)
		}
	}
	return out
}

// validate checks every answer the page got from the API (but the event
// stream's) against api/openapi.yaml, as the API tests' client does.
func (w *apiWatch) validate(t *testing.T) int {
	t.Helper()
	w.mu.Lock()
	var calls []apiCall
	for _, id := range w.order {
		if c := w.calls[id]; c.status != 0 && c.read {
			calls = append(calls, *c)
		}
	}
	w.mu.Unlock()
	for _, c := range calls {
		req, err := http.NewRequest(c.method, c.url, nil)
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.url, err)
		}
		resp := &http.Response{StatusCode: int(c.status), Header: c.header, Body: io.NopCloser(bytes.NewReader(c.body)), Request: req}
		apitest.Validate(t, req, resp)
	}
	return len(calls)
}

// last returns the newest answered call of method to path with a 2xx status.
func (w *apiWatch) last(t *testing.T, method, path string) apiCall {
	t.Helper()
	calls := w.all(method, path)
	for i := len(calls) - 1; i >= 0; i-- {
		if calls[i].status >= 200 && calls[i].status < 300 {
			return calls[i]
		}
	}
	t.Fatalf("the page made no successful %s %s (calls: %v)", method, path, calls)
	return apiCall{}
}
