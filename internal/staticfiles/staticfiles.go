// Package staticfiles serves files embedded in the binary (the app under
// /app/, the API reference under /api/docs): each file is read, hashed and
// compressed once at startup, then served with a strong ETag (a 304 when the
// browser has it) and gzip when the browser takes it and it pays.
package staticfiles

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

// File is one embedded file, ready to serve.
type File struct {
	body, gzipped []byte // gzipped is nil when compressing does not pay
	contentType   string
	etag          string
}

// New prepares body to be served as contentType.
func New(body []byte, contentType string) *File {
	sum := sha256.Sum256(body)
	f := &File{body: body, contentType: contentType, etag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(body)
	zw.Close()
	if buf.Len() < len(body)*9/10 {
		f.gzipped = buf.Bytes()
	}
	return f
}

// Load prepares every file of fsys, keyed by its slash-separated path in
// fsys; the content type follows the file's extension.
func Load(fsys fs.FS) (map[string]*File, error) {
	files := map[string]*File{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		files[p] = New(body, ct)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("staticfiles: %w", err)
	}
	return files, nil
}

// ServeHTTP writes the file for a GET or HEAD (the caller refuses other
// methods and sets the page's own security headers).
func (f *File) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Type", f.contentType)
	// Revalidated on every load (ETag): a new binary's files are used at
	// once, and an unchanged file costs a 304.
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", f.etag)
	hd.Add("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, f.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := f.body
	if f.gzipped != nil && acceptsGzip(r) {
		hd.Set("Content-Encoding", "gzip")
		body = f.gzipped
	}
	hd.Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	w.Write(body)
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(coding), "gzip") && strings.ReplaceAll(strings.TrimSpace(q), " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// Page sets the headers every page served from the binary carries (its
// csp, no framing, no referrer: an address may carry an authorization
// code) and refuses any method but GET and HEAD. It reports whether the
// request goes on.
func Page(w http.ResponseWriter, r *http.Request, csp string) bool {
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return false
	}
	return true
}
