package webapp

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func serve(t *testing.T, h http.Handler, method, path string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestServesTheAppUnderItsPolicy(t *testing.T) {
	h, err := New("/app/", "")
	if err != nil {
		t.Fatal(err)
	}
	index, _ := static.ReadFile("static/index.html")
	for _, path := range []string{"/app/", "/app/callback", "/app/inbox/14155550100/12125550100", "/app/calls/1772323200.1"} {
		w := serve(t, h, http.MethodGet, path)
		if w.Code != http.StatusOK || !bytes.Equal(w.Body.Bytes(), index) {
			t.Errorf("GET %s: %d, body %.60q; want 200 and index.html", path, w.Code, w.Body.String())
		}
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
		csp := w.Header().Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-") || strings.Contains(csp, "http") {
			t.Errorf("GET %s: CSP %q allows inline code or another origin", path, csp)
		}
		for k, want := range map[string]string{"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache"} {
			if got := w.Header().Get(k); got != want {
				t.Errorf("GET %s: %s %q, want %q", path, k, got, want)
			}
		}
	}
	if w := serve(t, h, http.MethodGet, "/app/missing.js"); w.Code != http.StatusNotFound {
		t.Errorf("GET a missing file: %d, want 404", w.Code)
	}
	if w := serve(t, h, http.MethodPost, "/app/"); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d Allow %q, want 405 GET, HEAD", w.Code, w.Header().Get("Allow"))
	}
}

func TestRevalidatesAndCompresses(t *testing.T) {
	h, err := New("/app/", "")
	if err != nil {
		t.Fatal(err)
	}
	// The largest file shows compression (internal/staticfiles); every file
	// revalidates by ETag.
	var name string
	var body []byte
	fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if b, _ := static.ReadFile(p); err == nil && !d.IsDir() && len(b) > len(body) {
			name, body = strings.TrimPrefix(p, "static/"), b
		}
		return err
	})
	w := serve(t, h, http.MethodGet, "/app/"+name, "Accept-Encoding", "br, gzip;q=0.8")
	if w.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("%s: Content-Encoding %q, want gzip", name, w.Header().Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(w.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(zr); !bytes.Equal(got, body) {
		t.Fatalf("%s: gzipped body does not decompress to the file", name)
	}
	etag := w.Header().Get("ETag")
	if w := serve(t, h, http.MethodGet, "/app/"+name, "If-None-Match", etag); w.Code != http.StatusNotModified || w.Body.Len() != 0 {
		t.Errorf("If-None-Match %s: %d, %d bytes; want 304 and no body", etag, w.Code, w.Body.Len())
	}
}

func TestRefusedSaysWhy(t *testing.T) {
	h, err := New("/app/", "plain http <on> a public host")
	if err != nil {
		t.Fatal(err)
	}
	w := serve(t, h, http.MethodGet, "/app/inbox")
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "plain http &lt;on&gt; a public host") {
		t.Errorf("refused app: %d %q", w.Code, w.Body.String())
	}
	if w.Header().Get("Content-Security-Policy") == "" {
		t.Error("refused page without a CSP")
	}
}
