package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

type hostedData struct {
	Data struct {
		URL         string `json:"url"`
		ContentType string `json:"contentType"`
		Size        int64  `json:"size"`
	} `json:"data"`
}

func TestHostMedia(t *testing.T) {
	forEachSendEngine(t, func(t *testing.T, f *sendFixture) {
		gif := realImage(t, "image/gif")
		body, _ := json.Marshal(attach("Photo.JPEG", "image/gif", gif))
		status, _, raw := f.do(t, "POST", "/api/public/v1/sms/media", f.keys["acme"], string(body))
		got := decodeInto[hostedData](t, raw)
		if status != 201 || got.Data.ContentType != "image/gif" || got.Data.Size != int64(len(gif)) || !strings.HasPrefix(got.Data.URL, f.url+"/media/") {
			t.Fatalf("host: %d %s", status, raw)
		}
		// Named for its real type, not the client's name, and served as such.
		if !strings.HasSuffix(got.Data.URL, ".gif") {
			t.Errorf("hosted URL %s does not end in .gif", got.Data.URL)
		}
		resp, err := http.Get(got.Data.URL)
		must(t, err)
		served, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(served) != string(gif) || resp.Header.Get("Content-Type") != "image/gif" {
			t.Errorf("fetch: %d %q, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(served))
		}
		// Nothing was sent or charged.
		if n := f.sim.Sent(); len(n) != 0 {
			t.Errorf("the carrier got %d messages", len(n))
		}

		for _, c := range []struct{ body, want string }{
			{`{"contentType":"image/png","content":"iVBORw0KGgo="}`, "filename is required"},
			{`{"filename":"a","contentType":"image/png","content":"iVBORw0KGgo="}`, "filename must have an extension"},
			{`{"filename":"a.png","contentType":"text/html","content":"PGgxPg=="}`, "contentType"},
			{`{"filename":"a.png","contentType":"image/png","content":"PGgxPg=="}`, "signature"},
			{`{"filename":"a.png","contentType":"image/png","content":"not base64!"}`, "base64"},
			{`{"filename":"a.png","contentType":"image/png"}`, "content is required"},
			{`{"attachments":[]}`, "attachments"},
		} {
			status, _, raw := f.do(t, "POST", "/api/public/v1/sms/media", f.keys["acme"], c.body)
			if e := decodeInto[errorEnvelope](t, raw); status != 400 || !strings.Contains(e.Error.Message, c.want) {
				t.Errorf("host %s: %d %s, want 400 naming %q", c.body, status, raw, c.want)
			}
		}
		if status, _, raw := f.do(t, "POST", "/api/public/v1/sms/media", f.keys["acme-nosend"], string(body)); status != 403 || decodeInto[errorEnvelope](t, raw).Error.Scope != "sms:send" {
			t.Errorf("host without sms:send: %d %s", status, raw)
		}
	})
}
