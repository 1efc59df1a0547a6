package blob

import (
	"net/http"
	"strings"

	"gocloud.dev/gcerrors"
)

// Handler serves GET and HEAD of /{name} relative to its mount point; mount it
// with http.StripPrefix, e.g.
//
//	mux.Handle("/media/", http.StripPrefix("/media/", store.Handler()))
//
// Paths that are not exactly a name Put could produce get an empty 404 without
// the bucket being consulted; a well-formed name that does not exist also gets
// 404; any other failure gets an empty 500. Other methods get 405 with
// "Allow: GET, HEAD". Nothing is logged: names are secrets.
func (s *Store) Handler() http.Handler {
	return http.HandlerFunc(s.serve)
}

func (s *Store) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Headers that apply whatever the outcome.
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")

	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		fail(w, http.StatusMethodNotAllowed)
		return
	}
	// Mounted with StripPrefix("/media/") the path is "name"; with
	// StripPrefix("/media") it is "/name". Accept exactly those two forms.
	name := strings.TrimPrefix(r.URL.Path, "/")
	if !ValidName(name) {
		fail(w, http.StatusNotFound)
		return
	}

	rd, err := s.bucket.NewReader(r.Context(), name, nil)
	if err != nil {
		if gcerrors.Code(err) == gcerrors.NotFound {
			fail(w, http.StatusNotFound)
		} else {
			fail(w, http.StatusInternalServerError)
		}
		return
	}
	defer rd.Close()

	ct := rd.ContentType()
	if ct == "" {
		ct = "application/octet-stream"
	}
	h.Set("Content-Type", ct)
	h.Set("Cache-Control", "private, max-age=31536000, immutable")
	h.Set("Content-Disposition", "inline")
	// *blob.Reader implements io.ReadSeeker (Seek reopens a range reader
	// lazily), so Range requests are served without reading the whole object.
	// The empty name keeps ServeContent from guessing a type from it.
	http.ServeContent(w, r, "", rd.ModTime(), rd)
}

// fail writes an error status with an empty body, and keeps caches and proxies
// from storing the error.
func fail(w http.ResponseWriter, code int) {
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
}
