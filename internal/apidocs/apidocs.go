// Package apidocs serves the API reference at /api/docs: a page that renders
// the server's own OpenAPI document (GET /api/public/v1/openapi.json) with
// Redoc, whose standalone bundle is vendored here at a pinned version
// (static/, refreshed with vendor.sh) and served from the binary, so the
// page loads nothing from another origin.
package apidocs

import (
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"strings"

	"switchboard/internal/staticfiles"
)

// RedocVersion is the version of the npm package redoc whose
// bundles/redoc.standalone.js is in static/ (see vendor.sh).
const RedocVersion = "2.5.4"

// Path is where the reference is served; its files are under Path + "/".
const Path = "/api/docs"

//go:embed static
var static embed.FS

// contentSecurityPolicy is the app's policy (internal/webapp) with what
// Redoc needs and nothing more: inline styles (styled-components writes
// <style> elements at run time) and a worker from a blob: URL (the search
// index is built in a worker whose code is inside the bundle). Scripts,
// data and fonts still come from this origin only, and images from it or
// data: URLs (Redoc's icons).
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self'; connect-src 'self'; worker-src blob:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the page at Path and its files under Path + "/".
type Handler struct {
	files map[string]*staticfiles.File
}

// New returns the handler for Path and everything under it.
func New() (*Handler, error) {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		return nil, fmt.Errorf("apidocs: %w", err)
	}
	files, err := staticfiles.Load(sub)
	if err != nil {
		return nil, fmt.Errorf("apidocs: %w", err)
	}
	for _, name := range []string{"index.html", "redoc.standalone.js"} {
		if files[name] == nil {
			return nil, fmt.Errorf("apidocs: %s is missing from the embedded files", name)
		}
	}
	return &Handler{files: files}, nil
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !staticfiles.Page(w, r, contentSecurityPolicy) {
		return
	}
	name, sub := strings.CutPrefix(r.URL.Path, Path+"/")
	switch {
	case r.URL.Path == Path:
		name = "index.html"
	case sub && name == "":
		// The page loads its files by absolute paths, so it works at either
		// address; one address keeps links and bookmarks the same.
		http.Redirect(w, r, Path, http.StatusMovedPermanently)
		return
	}
	f := h.files[name]
	if f == nil || (sub && name == "index.html") {
		http.NotFound(w, r)
		return
	}
	f.ServeHTTP(w, r)
}
