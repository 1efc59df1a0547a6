package apidocs

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func serve(t *testing.T, h http.Handler, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
	return w
}

func TestServesThePageAndTheBundle(t *testing.T) {
	h, err := New()
	if err != nil {
		t.Fatal(err)
	}
	page := serve(t, h, http.MethodGet, "/api/docs")
	if page.Code != http.StatusOK || !strings.HasPrefix(page.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("GET /api/docs: %d %q", page.Code, page.Header().Get("Content-Type"))
	}
	// The page loads the bundle and the document from this origin.
	for _, want := range []string{`<script src="/api/docs/redoc.standalone.js">`, `spec-url="/api/public/v1/openapi.json"`, "x-role-permission"} {
		if !strings.Contains(page.Body.String(), want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if m := regexp.MustCompile(`(src|href|spec-url)="(https?:)?//`).FindString(page.Body.String()); m != "" {
		t.Errorf("page refers to another origin: %s", m)
	}
	csp := page.Header().Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self';", "connect-src 'self';", "worker-src blob:;", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	// Inline styles are Redoc's one need beyond the app's policy; inline or
	// evaluated script never is.
	if strings.Contains(csp, "http") || strings.Count(csp, "unsafe-") != 1 || !strings.Contains(csp, "style-src 'self' 'unsafe-inline';") {
		t.Errorf("CSP %q allows more than inline styles", csp)
	}
	for k, want := range map[string]string{"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"} {
		if got := page.Header().Get(k); got != want {
			t.Errorf("%s %q, want %q", k, got, want)
		}
	}

	js := serve(t, h, http.MethodGet, "/api/docs/redoc.standalone.js")
	bundle, _ := static.ReadFile("static/redoc.standalone.js")
	if js.Code != http.StatusOK || !bytes.Equal(js.Body.Bytes(), bundle) || !strings.HasPrefix(js.Header().Get("Content-Type"), "text/javascript") {
		t.Errorf("GET the bundle: %d %q, %d bytes", js.Code, js.Header().Get("Content-Type"), js.Body.Len())
	}
	if js.Header().Get("Content-Security-Policy") != csp {
		t.Error("the bundle is served without the page's policy")
	}

	if w := serve(t, h, http.MethodGet, "/api/docs/"); w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != "/api/docs" {
		t.Errorf("GET /api/docs/: %d Location %q, want 301 to /api/docs", w.Code, w.Header().Get("Location"))
	}
	for _, path := range []string{"/api/docs/missing.js", "/api/docs/index.html"} {
		if w := serve(t, h, http.MethodGet, path); w.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, w.Code)
		}
	}
	if w := serve(t, h, http.MethodPost, "/api/docs"); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d Allow %q, want 405 GET, HEAD", w.Code, w.Header().Get("Allow"))
	}
}

// TestBundleLoadsNothingElsewhere guards the one change vendor.sh makes to
// Redoc's bundle: without it every load asks cdn.redoc.ly for a logo.
func TestBundleLoadsNothingElsewhere(t *testing.T) {
	bundle, err := static.ReadFile("static/redoc.standalone.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"cdn.redoc.ly", "fonts.googleapis.com", "fonts.gstatic.com"} {
		if bytes.Contains(bundle, []byte(host)) {
			t.Errorf("the vendored bundle refers to %s: re-run vendor.sh, which removes it", host)
		}
	}
	for _, name := range []string{"static/redoc-LICENSE.txt", "static/redoc.standalone.js.LICENSE.txt"} {
		if _, err := static.ReadFile(name); err != nil {
			t.Errorf("%s: Redoc's licences ship with the bundle", name)
		}
	}
}
