package httpapi_test

import (
	"strconv"
	"strings"
	"testing"
)

// TestWebhookURLInternationalHost: a host written with full-width or other
// compatibility characters is judged, at save, as the ASCII host a delivery
// would connect to (IDNA lookup mapping): one that maps to a literal address
// that is not publicly routable is refused with the same 400 as the plain
// spelling, and one that maps to a public name is stored in ASCII form.
func TestWebhookURLInternationalHost(t *testing.T) {
	forEachEngine(t, func(t *testing.T, f *fixture) {
		post := func(u string) (int, errorEnvelope, webhookResp) {
			t.Helper()
			body := `{"url":` + strconv.Quote(u) + `,"type":"AccountSMS"}`
			status, _, b := f.do(t, "POST", "/api/public/v1/webhooks", f.keys["acme"], body)
			if status == 201 {
				return status, errorEnvelope{}, decodeInto[struct{ Data webhookResp }](t, b).Data
			}
			return status, decodeInto[errorEnvelope](t, b), webhookResp{}
		}
		_, loopback, _ := post("https://127.0.0.1/")
		_, private, _ := post("https://10.0.0.5/")
		_, local, _ := post("https://localhost/")
		_, metadata, _ := post("https://169.254.169.254/")
		for _, tc := range []struct {
			spelling string
			want     errorEnvelope
		}{
			{"https://127。0。0。1/", loopback},       // U+3002 ideographic full stop
			{"https://127．0．0．1/", loopback},       // U+FF0E full-width full stop
			{"https://127｡0｡0｡1/", loopback},       // U+FF61 half-width ideographic full stop
			{"https://１２７.０.０.１/", loopback},       // full-width digits
			{"https://１２７。０。０。１/", loopback},       // both
			{"https://①②⑦.0.0.1/", loopback},       // circled digits
			{"https://127。0。0。1:8443/h", loopback}, // with a port and a path
			// The separators IDNA maps to a dot, each with a port (issue 32).
			{"https://127。0。0。1:9/", loopback},
			{"https://127．0．0．1:9/", loopback},
			{"https://127｡0｡0｡1:9/", loopback},
			{"https://127。0．0｡1:9/", loopback},                         // mixed
			{"https://127%EF%BC%8E0%EF%BC%8E0%EF%BC%8E1:9/", loopback}, // U+FF0E percent-encoded
			{"https://127%EF%BD%A10%EF%BD%A10%EF%BD%A11:9/", loopback}, // U+FF61 percent-encoded
			{"https://169。254。169。254/latest/meta-data/", metadata},
			{"https://169｡254｡169｡254:80/", metadata},
			{"https://127.0.0.1。/", loopback}, // a final full-width dot
			{"https://127.0.0.1./", loopback}, // a final dot
			{"https://127.0.0.1%E3%80%82/", loopback},
			{"https://10。0。0。5/", private},
			{"https://ｌｏｃａｌｈｏｓｔ/", local},
			{"https://ＬＯＣＡＬＨＯＳＴ。/", local},
		} {
			status, e, w := post(tc.spelling)
			if status != 400 || e != tc.want {
				t.Errorf("%s: %d %+v (saved %q), want 400 %+v as the plain spelling", tc.spelling, status, e.Error, w.URL, tc.want.Error)
			}
		}
		if loopback.Error.Type != "invalid_request" || !strings.Contains(loopback.Error.Message, "loopback") {
			t.Fatalf("https://127.0.0.1/ answered %+v, want a loopback refusal", loopback.Error)
		}
		if metadata.Error.Type != "invalid_request" || !strings.Contains(metadata.Error.Message, "link-local") {
			t.Fatalf("https://169.254.169.254/ answered %+v, want a link-local refusal", metadata.Error)
		}
		// Legacy numeric forms and hosts IDNA refuses are refused too.
		for _, u := range []string{"https://０ｘ７ｆ０００００１/", "https://１２７.１/", "https://exa＿mple.com/", "https://a：b@x.example.com/"} {
			if status, e, w := post(u); status != 400 || e.Error.Type != "invalid_request" || !strings.HasPrefix(e.Error.Message, "url ") {
				t.Errorf("%s: %d %+v (saved %q), want 400 naming url", u, status, e.Error, w.URL)
			}
		}

		// Public names are stored in the ASCII form deliveries use.
		for _, tc := range []struct{ spelling, stored string }{
			{"https://ｅｘａｍｐｌｅ.com", "https://example.com"},
			{"https://ｅｘａｍｐｌｅ。com/hook?a=1", "https://example.com/hook?a=1"},
			{"https://hooks.bücher.example:8443/in", "https://hooks.xn--bcher-kva.example:8443/in"},
			{"https://Hooks.Example.com/In", "https://Hooks.Example.com/In"}, // ASCII is kept as given
		} {
			status, e, w := post(tc.spelling)
			if status != 201 || w.URL != tc.stored {
				t.Errorf("%s: %d %+v, stored %q, want 201 storing %q", tc.spelling, status, e.Error, w.URL, tc.stored)
				continue
			}
			b := mustBody(t, f, "GET", "/webhooks/"+strconv.FormatInt(w.ID, 10), f.keys["acme"])
			if got := decodeInto[struct{ Data webhookResp }](t, b).Data.URL; got != tc.stored {
				t.Errorf("%s: read back as %q, want %q", tc.spelling, got, tc.stored)
			}
		}

		// An update is checked and normalized the same way.
		w := f.createWebhook(t, f.keys["acme"], `{"url":"https://hooks.example.com/in","type":"AccountSMS"}`)
		path := "/api/public/v1/webhooks/" + strconv.FormatInt(w.ID, 10)
		for _, u := range []string{"https://127。0。0。1/", "https://127｡0｡0｡1:9/", "https://127．0．0．1:9/"} {
			for _, method := range []string{"PATCH", "PUT"} {
				if status, _, b := f.do(t, method, path, f.keys["acme"], `{"url":"`+u+`"}`); status != 400 || decodeInto[errorEnvelope](t, b) != loopback {
					t.Errorf("%s to %s: %d %s, want %+v", method, u, status, b, loopback.Error)
				}
			}
		}
		if got := decodeInto[struct{ Data webhookResp }](t, mustBody(t, f, "GET", "/webhooks/"+strconv.FormatInt(w.ID, 10), f.keys["acme"])).Data.URL; got != "https://hooks.example.com/in" {
			t.Errorf("after refused updates the URL is %q, want it unchanged", got)
		}
		status, _, b := f.do(t, "PATCH", path, f.keys["acme"], `{"url":"https://ｅｘａｍｐｌｅ.com/x"}`)
		if got := decodeInto[struct{ Data webhookResp }](t, b).Data.URL; status != 200 || got != "https://example.com/x" {
			t.Errorf("PATCH to a full-width name: %d %s, want it stored as https://example.com/x", status, b)
		}
	})
}
