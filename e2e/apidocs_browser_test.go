package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"switchboard/api"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestAPIReferenceInBrowser loads the API reference (/api/docs) in
// Chromium: Redoc, served from the binary, renders every operation of the
// server's own OpenAPI document with its summary, scope and role
// permission, and nothing is requested from another origin or refused by
// the page's policy.
func TestAPIReferenceInBrowser(t *testing.T) {
	t.Parallel()
	b := newAppBrowser(t)
	base := startServer(t, storetest.DSN(t, store.SQLite))

	doc, err := api.Load()
	if err != nil {
		t.Fatal(err)
	}
	type operation struct{ ID, Summary, Scope, Role string }
	var ops []operation
	opPaths, opMethods := map[string]string{}, map[string]string{}
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			scope, _ := op.Extensions["x-required-scope"].(string)
			role, _ := op.Extensions["x-role-permission"].(string)
			ops = append(ops, operation{op.OperationID, op.Summary, scope, role})
			opPaths[op.OperationID], opMethods[op.OperationID] = path, method
		}
	}
	if len(ops) < 50 {
		t.Fatalf("%d operations in the document: want them all", len(ops))
	}

	a := b.openDocs(base)
	a.waitJS("every operation rendered", fmt.Sprintf(`document.querySelectorAll('[data-section-id^="operation/"]').length >= %d`, len(ops)), 20*time.Second)
	type section struct{ ID, Text string }
	rendered := appEval[[]section](a, "read the rendered operations", `[...document.querySelectorAll('[data-section-id^="operation/"]')].map(e => ({ID: e.dataset.sectionId.slice("operation/".length), Text: e.innerText}))`)
	byID := map[string]string{}
	for _, s := range rendered {
		byID[s.ID] = s.Text
	}
	for _, op := range ops {
		text, ok := byID[op.ID]
		switch {
		case !ok:
			t.Errorf("%s: not rendered", op.ID)
		case !strings.Contains(text, op.Summary):
			t.Errorf("%s: the rendered section lacks its summary %q", op.ID, op.Summary)
		case op.Scope != "" && !strings.Contains(text, op.Scope):
			t.Errorf("%s: the rendered section lacks its scope %s", op.ID, op.Scope)
		case op.Role != "" && !strings.Contains(text, op.Role):
			t.Errorf("%s: the rendered section lacks its role permission %q", op.ID, op.Role)
		}
	}
	// Every operation shows its response samples, and one that takes a body
	// its request samples: the document's own examples, not ones Redoc makes
	// up (the send's first request example, and its 200's skipped recipient).
	for _, op := range ops {
		text := byID[op.ID]
		if !strings.Contains(text, "Response samples") {
			t.Errorf("%s: no response samples rendered", op.ID)
		}
		if o := doc.Paths.Find(opPaths[op.ID]).GetOperation(opMethods[op.ID]); o.RequestBody != nil && !strings.Contains(text, "Request samples") {
			t.Errorf("%s: no request samples rendered", op.ID)
		}
	}
	if send := byID["sendSMS"]; !strings.Contains(send, "Your order has shipped.") || !strings.Contains(send, `"opted_out"`) {
		t.Errorf("the send's section does not show the document's examples:\n%s", send[strings.Index(send, "Request samples"):])
	}
	a.screenshots("reference")
	a.do("scroll to the send", chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-section-id="operation/sendSMS"]').scrollIntoView({block: "start"})`), chromedp.Sleep(300*time.Millisecond))
	a.screenshots("send")

	violations := appEval[[]string](a, "read the policy violations", `window.__violations`)
	for _, v := range violations {
		t.Errorf("the page's policy refused %s", v)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !slices.ContainsFunc(a.requests, func(u string) bool { return strings.HasSuffix(u, "/api/public/v1/openapi.json") }) {
		t.Errorf("the page did not load the server's document; requests: %v", a.requests)
	}
	for _, m := range a.console {
		if strings.Contains(strings.ToLower(m), "error") {
			t.Errorf("console: %s", m)
		}
	}
}

// openDocs opens base/api/docs in a fresh incognito context at the desktop
// size, recording every request (appTab.checkOrigin fails the test for any
// outside the origin), the console, and every violation of the page's
// Content-Security-Policy (window.__violations).
func (b *appBrowser) openDocs(base string) *appTab {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	b.t.Cleanup(cancel)
	a := &appTab{t: b.t, b: b, ctx: ctx, base: base, who: "reader"}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(appDesktopWidth, appDesktopHeight)); err != nil {
		b.t.Fatalf("browser: new context: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		b.t.Fatalf("browser: Network.enable: %v", err)
	}
	// A request the policy blocks is never sent, so the recorder below
	// would not see it: the page reports it here instead.
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
		window.__violations = [];
		document.addEventListener("securitypolicyviolation", e => window.__violations.push(e.effectiveDirective + " " + e.blockedURI));`}); err != nil {
		b.t.Fatalf("browser: add the violation recorder: %v", err)
	}
	go func() {
		for ev, err := range chromedp.Events(ctx, network.RequestWillBeSent) {
			if err != nil {
				return
			}
			u := ev.Request.URL
			a.mu.Lock()
			a.requests = append(a.requests, u)
			if !strings.HasPrefix(u, base+"/") && u != base && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "blob:") && u != "about:blank" {
				a.offOrigin = append(a.offOrigin, u)
			}
			a.mu.Unlock()
		}
	}()
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			a.mu.Lock()
			a.console = append(a.console, m.String())
			a.mu.Unlock()
		}
	}()
	b.t.Cleanup(a.checkOrigin)
	a.do("open the API reference", chromedp.Navigate(base+"/api/docs"))
	return a
}
