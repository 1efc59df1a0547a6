package staticfiles

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func get(t *testing.T, f *File, method string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, "/x", nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	f.ServeHTTP(w, r)
	return w
}

func TestServesCompressedAndRevalidates(t *testing.T) {
	big := []byte(strings.Repeat("function f() { return 1 }\n", 200))
	files, err := Load(fstest.MapFS{
		"js/app.js":  {Data: big},
		"tiny.css":   {Data: []byte("a{}")},
		"index.html": {Data: []byte("<!doctype html>")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 || files["js/app.js"] == nil {
		t.Fatalf("Load: %v, want the three files by their paths", files)
	}
	js := files["js/app.js"]
	w := get(t, js, http.MethodGet, "Accept-Encoding", "br, gzip;q=0.8")
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
		t.Errorf("Content-Type %q, want text/javascript", ct)
	}
	if w.Header().Get("Content-Encoding") != "gzip" || w.Header().Get("Vary") != "Accept-Encoding" || w.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("headers %v: want gzip, Vary: Accept-Encoding, no-cache", w.Header())
	}
	zr, err := gzip.NewReader(w.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(zr); !bytes.Equal(got, big) {
		t.Fatal("gzipped body does not decompress to the file")
	}
	if w := get(t, js, http.MethodGet, "Accept-Encoding", "gzip;q=0"); w.Header().Get("Content-Encoding") != "" || !bytes.Equal(w.Body.Bytes(), big) {
		t.Errorf("gzip refused: Content-Encoding %q", w.Header().Get("Content-Encoding"))
	}
	// A file that does not shrink is sent as it is.
	if w := get(t, files["tiny.css"], http.MethodGet, "Accept-Encoding", "gzip"); w.Header().Get("Content-Encoding") != "" || w.Body.String() != "a{}" {
		t.Errorf("tiny file: Content-Encoding %q body %q", w.Header().Get("Content-Encoding"), w.Body.String())
	}
	etag := w.Header().Get("ETag")
	if etag == "" || etag == files["index.html"].etag {
		t.Fatalf("ETag %q: want one per content", etag)
	}
	if w := get(t, js, http.MethodGet, "If-None-Match", `"other", `+etag); w.Code != http.StatusNotModified || w.Body.Len() != 0 {
		t.Errorf("If-None-Match: %d, %d bytes; want 304 and no body", w.Code, w.Body.Len())
	}
	if w := get(t, js, http.MethodHead); w.Code != http.StatusOK || w.Body.Len() != 0 || w.Header().Get("Content-Length") != "5200" {
		t.Errorf("HEAD: %d, %d bytes, Content-Length %q; want 200, no body, 5200", w.Code, w.Body.Len(), w.Header().Get("Content-Length"))
	}
}
