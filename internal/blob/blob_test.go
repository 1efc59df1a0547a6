package blob

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	gcblob "gocloud.dev/blob"
)

// wantHeaders are the headers every successful media response carries.
var wantHeaders = map[string]string{
	"X-Content-Type-Options":  "nosniff",
	"Referrer-Policy":         "no-referrer",
	"Cache-Control":           "private, max-age=31536000, immutable",
	"Content-Security-Policy": "default-src 'none'; sandbox",
	"Content-Disposition":     "inline",
}

func openMem(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), "mem://")
	if err != nil {
		t.Fatalf("Open mem: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func openFile(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), fileURL(dir))
	if err != nil {
		t.Fatalf("Open file: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func fileURL(dir string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
}

// stores runs f against a memory store and a file store.
func stores(t *testing.T, f func(t *testing.T, s *Store)) {
	t.Run("mem", func(t *testing.T) { f(t, openMem(t)) })
	t.Run("file", func(t *testing.T) { f(t, openFile(t, t.TempDir())) })
}

// serve mounts the store as the lead does, at /media/ with StripPrefix.
func serve(t *testing.T, s *Store) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/media/", http.StripPrefix("/media/", s.Handler()))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func do(t *testing.T, method, u string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func checkMediaHeaders(t *testing.T, resp *http.Response, contentType string) {
	t.Helper()
	if got := resp.Header.Get("Content-Type"); got != contentType {
		t.Errorf("Content-Type = %q, want %q", got, contentType)
	}
	for k, v := range wantHeaders {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func TestPutGet(t *testing.T) {
	stores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		data := randomBytes(t, 300_000)
		name, err := s.Put(ctx, data, "image/png", "PNG")
		if err != nil {
			t.Fatalf("Put: %v", err)
		}
		if !ValidName(name) || !strings.HasSuffix(name, ".png") || len(name) != 43+4 {
			t.Fatalf("Put returned malformed name %q", name)
		}
		srv := serve(t, s)
		u := s.URL(srv.URL+"/media/", name)

		resp, body := do(t, http.MethodGet, u, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET status = %d", resp.StatusCode)
		}
		if !bytes.Equal(body, data) {
			t.Fatalf("GET body differs: got %d bytes, want %d", len(body), len(data))
		}
		checkMediaHeaders(t, resp, "image/png")
		if resp.Header.Get("Accept-Ranges") != "bytes" {
			t.Errorf("Accept-Ranges = %q", resp.Header.Get("Accept-Ranges"))
		}

		// HEAD: same headers and length, no body.
		resp, body = do(t, http.MethodHead, u, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("HEAD status = %d", resp.StatusCode)
		}
		if len(body) != 0 {
			t.Errorf("HEAD body has %d bytes", len(body))
		}
		if resp.ContentLength != int64(len(data)) {
			t.Errorf("HEAD Content-Length = %d, want %d", resp.ContentLength, len(data))
		}
		checkMediaHeaders(t, resp, "image/png")
	})
}

func TestRange(t *testing.T) {
	stores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		data := randomBytes(t, 100_000)
		name, err := s.Put(ctx, data, "audio/mpeg", "mp3")
		if err != nil {
			t.Fatal(err)
		}
		srv := serve(t, s)
		u := s.URL(srv.URL+"/media", name)

		for _, tc := range []struct {
			rng        string
			start, end int // inclusive
		}{
			{"bytes=0-0", 0, 0},
			{"bytes=1000-1999", 1000, 1999},
			{"bytes=99000-", 99000, 99999},
			{"bytes=-10", 99990, 99999},
			{"bytes=50000-200000", 50000, 99999},
		} {
			resp, body := do(t, http.MethodGet, u, map[string]string{"Range": tc.rng})
			if resp.StatusCode != http.StatusPartialContent {
				t.Fatalf("%s: status = %d, want 206", tc.rng, resp.StatusCode)
			}
			if !bytes.Equal(body, data[tc.start:tc.end+1]) {
				t.Errorf("%s: wrong slice (%d bytes)", tc.rng, len(body))
			}
			wantCR := fmt.Sprintf("bytes %d-%d/%d", tc.start, tc.end, len(data))
			if got := resp.Header.Get("Content-Range"); got != wantCR {
				t.Errorf("%s: Content-Range = %q, want %q", tc.rng, got, wantCR)
			}
			checkMediaHeaders(t, resp, "audio/mpeg")
		}

		// Seeking backwards after a forward range still works (several ranges).
		resp, _ := do(t, http.MethodGet, u, map[string]string{"Range": "bytes=90000-90009,10-19"})
		if resp.StatusCode != http.StatusPartialContent ||
			!strings.HasPrefix(resp.Header.Get("Content-Type"), "multipart/byteranges") {
			t.Errorf("multi-range: status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}

		resp, _ = do(t, http.MethodGet, u, map[string]string{"Range": "bytes=200000-"})
		if resp.StatusCode != http.StatusRequestedRangeNotSatisfiable {
			t.Errorf("unsatisfiable range: status %d, want 416", resp.StatusCode)
		}
		if strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
			t.Errorf("416 carries immutable Cache-Control")
		}
	})
}

// badNames are paths that must be refused without touching the bucket.
func badNames() []string {
	good := strings.Repeat("A", 43)
	return []string{
		"",
		"x",
		"../etc/passwd",
		"..%2Fetc%2Fpasswd",
		"//" + good + ".png",                   // only one leading slash is tolerated
		good[:20] + "/" + good[21:] + ".png",   // slash, right length
		"sub/" + good + ".png",                 // directory
		good + ".png/",                         // trailing slash
		strings.Repeat("A", 42) + "+.png",      // wrong alphabet (std base64)
		strings.Repeat("A", 42) + "=.png",      // padding char
		strings.Repeat("A", 42) + "..png",      // dot in token
		strings.Repeat("A", 42) + "%.png",      // percent
		strings.Repeat("A", 42) + "B.png",      // non-canonical: non-zero trailing bits
		strings.Repeat("A", 42) + "\u00c4.png", // non-ASCII
		good[:42] + ".png",                     // too short
		good + "A.png",                         // too long
		good,                                   // no extension
		good + ".",                             // empty extension
		good + ".PNG",                          // upper-case extension
		good + ".p-g",                          // bad extension alphabet
		good + ".abcdefghijk",                  // extension too long
		good + ".png.attrs",                    // fileblob sidecar
		good + ".attrs",                        // a sidecar-named object Put never makes
		good + ".png.123.tmp",                  // fileblob temp file
		good + ".png%00",
		good + ".png?x=1",
	}
}

func TestBadNames404WithoutTouchingBucket(t *testing.T) {
	// A closed bucket fails every operation, so any request that reaches it
	// turns into a 500; a 404 proves the bucket was never consulted.
	s, err := Open(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	h := s.Handler()

	for _, name := range badNames() {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			r := httptest.NewRequest(method, "/", nil)
			r.URL.Path = name
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusNotFound {
				t.Errorf("%s %q: status %d, want 404", method, name, w.Code)
			}
			if w.Body.Len() != 0 {
				t.Errorf("%s %q: body %q, want empty", method, name, w.Body.String())
			}
		}
	}

	// Control: a well-formed name reaches the (closed) bucket and gets an
	// empty 500, with nothing cacheable.
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.URL.Path = strings.Repeat("A", 43) + ".png"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusInternalServerError || w.Body.Len() != 0 {
		t.Errorf("well-formed name on closed bucket: status %d body %q, want empty 500", w.Code, w.Body.String())
	}
	if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("500 Cache-Control = %q, want no-store", cc)
	}
}

func TestBadNamesThroughServer(t *testing.T) {
	s := openMem(t)
	name, err := s.Put(context.Background(), []byte("secret"), "image/gif", "gif")
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, s)
	for _, p := range []string{
		"/media/..%2Fetc%2Fpasswd",
		"/media/x",
		"/media/" + name + "/",
		"/media/" + name + "%2F",
		"/media/" + name[:20] + "%2F" + name[21:],
		"/media/" + strings.ToUpper(name), // extension case matters
		"/media/",
	} {
		resp, body := do(t, http.MethodGet, srv.URL+p, nil)
		if resp.StatusCode != http.StatusNotFound || len(body) != 0 {
			t.Errorf("GET %s: status %d body %q, want empty 404", p, resp.StatusCode, body)
		}
	}
}

func TestUnknownName404(t *testing.T) {
	stores(t, func(t *testing.T, s *Store) {
		srv := serve(t, s)
		// Well-formed, canonical, but never stored.
		name := "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.png"
		if !ValidName(name) {
			t.Fatal("test name should be valid")
		}
		for _, m := range []string{http.MethodGet, http.MethodHead} {
			resp, body := do(t, m, s.URL(srv.URL+"/media/", name), nil)
			if resp.StatusCode != http.StatusNotFound || len(body) != 0 {
				t.Errorf("%s unknown: status %d body %q, want empty 404", m, resp.StatusCode, body)
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("404 lacks nosniff")
			}
		}
	})
}

func TestMethodNotAllowed(t *testing.T) {
	s := openMem(t)
	srv := serve(t, s)
	name, err := s.Put(context.Background(), []byte("x"), "image/png", "png")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions} {
		resp, body := do(t, m, s.URL(srv.URL+"/media/", name), nil)
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: status %d, want 405", m, resp.StatusCode)
		}
		if got := resp.Header.Get("Allow"); got != "GET, HEAD" {
			t.Errorf("%s: Allow = %q", m, got)
		}
		if len(body) != 0 {
			t.Errorf("%s: body %q", m, body)
		}
	}
	// The object is still there: DELETE over HTTP did nothing.
	resp, _ := do(t, http.MethodGet, s.URL(srv.URL+"/media/", name), nil)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("after DELETE request: status %d", resp.StatusCode)
	}
}

func TestNamesAreUnique(t *testing.T) {
	stores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		data := []byte("same bytes")
		seen := map[string]bool{}
		for range 50 {
			name, err := s.Put(ctx, data, "image/jpeg", "jpg")
			if err != nil {
				t.Fatal(err)
			}
			if seen[name] {
				t.Fatalf("duplicate name %q", name)
			}
			seen[name] = true
		}
	})
}

func TestPutValidation(t *testing.T) {
	s := openMem(t)
	ctx := context.Background()
	for _, ext := range []string{"", ".png", "p-g", "png!", "abcdefghijk", "pn g", "../x", "a/b", "ü", "attrs"} {
		if _, err := s.Put(ctx, []byte("x"), "image/png", ext); !errors.Is(err, ErrInvalidExt) {
			t.Errorf("ext %q: err = %v, want ErrInvalidExt", ext, err)
		}
	}
	for _, ct := range []string{"", "not a type", "image/png\r\nX-Evil: 1", "image/png; charset"} {
		if _, err := s.Put(ctx, []byte("x"), ct, "png"); !errors.Is(err, ErrInvalidContentType) {
			t.Errorf("content type %q: err = %v, want ErrInvalidContentType", ct, err)
		}
	}
	name, err := s.Put(ctx, []byte("x"), "image/png", "JPEG")
	if err != nil || !strings.HasSuffix(name, ".jpeg") {
		t.Errorf("upper-case ext: name %q err %v", name, err)
	}
	// Empty data is allowed.
	if _, err := s.Put(ctx, nil, "image/png", "png"); err != nil {
		t.Errorf("empty Put: %v", err)
	}
}

func TestFileStorePersists(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "does", "not", "exist", "yet")
	data := randomBytes(t, 4096)

	s1, err := Open(ctx, fileURL(dir))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	name, err := s1.Put(ctx, data, "image/bmp", "bmp")
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}

	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		t.Fatalf("store directory not created: %v", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		t.Errorf("store directory mode %v, want no group/other access", perm)
	}
	// No temporary files are left behind; only the object and its sidecar.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 2 || names[0] != name || names[1] != name+".attrs" {
		t.Errorf("directory holds %q, want the object and its .attrs sidecar", names)
	}

	s2 := openFile(t, dir)
	srv := serve(t, s2)
	resp, body := do(t, http.MethodGet, s2.URL(srv.URL+"/media/", name), nil)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("after reopen: status %d, %d bytes", resp.StatusCode, len(body))
	}
	checkMediaHeaders(t, resp, "image/bmp")
}

func TestOpenRejects(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, u := range []string{
		"file://./relative",
		"file://host/abs",
		"file:///" + strings.TrimPrefix(filepath.ToSlash(dir), "/") + "?metadata=skip",
		"nosuchscheme://x",
		"://bad",
	} {
		if s, err := Open(ctx, u); err == nil {
			_ = s.Close()
			t.Errorf("Open(%q) succeeded, want error", u)
		}
	}
}

func TestDelete(t *testing.T) {
	stores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		srv := serve(t, s)
		keep, err := s.Put(ctx, []byte("keep"), "image/png", "png")
		if err != nil {
			t.Fatal(err)
		}
		gone, err := s.Put(ctx, []byte("gone"), "image/png", "png")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, gone); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		resp, _ := do(t, http.MethodGet, s.URL(srv.URL+"/media/", gone), nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("deleted object: status %d, want 404", resp.StatusCode)
		}
		resp, body := do(t, http.MethodGet, s.URL(srv.URL+"/media/", keep), nil)
		if resp.StatusCode != http.StatusOK || string(body) != "keep" {
			t.Errorf("other object: status %d body %q", resp.StatusCode, body)
		}
		// Idempotent.
		if err := s.Delete(ctx, gone); err != nil {
			t.Errorf("second Delete: %v", err)
		}
		for _, bad := range []string{"../etc/passwd", "x", keep + "/"} {
			if err := s.Delete(ctx, bad); !errors.Is(err, ErrInvalidName) {
				t.Errorf("Delete(%q) = %v, want ErrInvalidName", bad, err)
			}
		}
	})
}

func TestDeleteFileStoreRemovesSidecar(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openFile(t, dir)
	name, err := s.Put(ctx, []byte("x"), "image/png", "png")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, name); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("directory not empty after Delete: %d entries", len(entries))
	}
}

var tokenRE = regexp.MustCompile(`[A-Za-z0-9_-]{43}`)

func TestErrorsDoNotRevealName(t *testing.T) {
	ctx := context.Background()

	// A file store Delete that fails inside the bucket: a directory squats on
	// the object's path, so os.Remove fails with an error quoting the path,
	// and gocloud wraps it with the key.
	dir := t.TempDir()
	s := openFile(t, dir)
	name := "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.png"
	if err := os.MkdirAll(filepath.Join(dir, name, "child"), 0o700); err != nil {
		t.Fatal(err)
	}
	err := s.Delete(ctx, name)
	if err == nil {
		t.Fatal("Delete of a non-empty directory succeeded")
	}
	for _, msg := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err)} {
		if strings.Contains(msg, name[:43]) {
			t.Errorf("Delete error reveals name: %s", msg)
		}
	}
	if !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("Delete error not redacted (test no longer exercises redaction?): %v", err)
	}
	t.Logf("Delete error: %v", err)

	// A failing Put must not carry the freshly generated name either.
	stores(t, func(t *testing.T, s *Store) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := s.Put(cctx, []byte("x"), "image/png", "png")
		if err == nil {
			t.Fatal("Put with cancelled context succeeded")
		}
		if tokenRE.MatchString(err.Error()) {
			t.Errorf("Put error may reveal name: %v", err)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Put error lost its cause: %v", err)
		}
	})

	// redact keeps the cause reachable while hiding the secret.
	cause := fmt.Errorf("blob (key %q): %w", name, os.ErrPermission)
	red := redact(cause, name[:43])
	if strings.Contains(red.Error(), name[:43]) || !errors.Is(red, os.ErrPermission) {
		t.Errorf("redact: %v", red)
	}
}

func TestURL(t *testing.T) {
	s := openMem(t)
	name := "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.png"
	for _, base := range []string{"https://sb.example.com/media/", "https://sb.example.com/media"} {
		u := s.URL(base, name)
		if u != "https://sb.example.com/media/"+name {
			t.Errorf("URL(%q) = %q", base, u)
		}
		got, ok := NameFromURL(base, u)
		if !ok || got != name {
			t.Errorf("NameFromURL(%q, %q) = %q, %v", base, u, got, ok)
		}
	}
	for _, u := range []string{
		"https://evil.example.com/media/" + name,
		"https://sb.example.com/media/x",
		"https://sb.example.com/media/" + name + "?a=1",
		"https://sb.example.com/media/../" + name,
	} {
		if _, ok := NameFromURL("https://sb.example.com/media/", u); ok {
			t.Errorf("NameFromURL accepted %q", u)
		}
	}
}

func TestConcurrent(t *testing.T) {
	stores(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		srv := serve(t, s)
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				data := bytes.Repeat([]byte{byte(i)}, 10_000+i)
				name, err := s.Put(ctx, data, "image/png", "png")
				if err != nil {
					t.Error(err)
					return
				}
				resp, err := http.Get(s.URL(srv.URL+"/media/", name))
				if err != nil {
					t.Error(err)
					return
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !bytes.Equal(body, data) {
					t.Errorf("goroutine %d: body differs", i)
				}
				if err := s.Delete(ctx, name); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	})
}

func TestSchemesRegistered(t *testing.T) {
	for _, scheme := range []string{"file", "mem", "s3"} {
		if !gcblob.DefaultURLMux().ValidBucketScheme(scheme) {
			t.Errorf("scheme %q not registered", scheme)
		}
	}
}
