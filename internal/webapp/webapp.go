// Package webapp serves the Switchboard app: the shared inbox, call history
// and webhook administration in a browser. The app is static files embedded
// in the binary (ES modules and CSS, no build step); everything it shows it
// reads from the public API with an OAuth token of the person signed in, so
// this package only serves files, under a strict Content-Security-Policy.
package webapp

import (
	"embed"
	"fmt"
	"html"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"switchboard/internal/staticfiles"
)

//go:embed static
var static embed.FS

// contentSecurityPolicy allows scripts, styles and connections to this
// origin only: no inline script or style, no other origin, no framing.
// Images and audio may also be blob: URLs (attachment previews before
// upload).
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; " +
	"media-src 'self' blob:; connect-src 'self'; font-src 'self'; manifest-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Handler serves the app's files. mount is the path the app is served under
// ("/app/"). When refused is not empty the app cannot sign anyone in on this
// server (see oauth.Server.RegisterApp) and every page says why instead.
type Handler struct {
	mount   string
	files   map[string]*staticfiles.File
	refused string
}

// New returns the handler for the app mounted at mount (with its trailing
// slash).
func New(mount, refused string) (*Handler, error) {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		return nil, fmt.Errorf("webapp: %w", err)
	}
	files, err := staticfiles.Load(sub)
	if err != nil {
		return nil, fmt.Errorf("webapp: %w", err)
	}
	h := &Handler{mount: mount, files: files, refused: refused}
	if h.files["index.html"] == nil {
		return nil, fmt.Errorf("webapp: index.html is missing from the embedded files")
	}
	return h, nil
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// No address of the app should travel as a referrer: Page sends
	// no referrer.
	if !staticfiles.Page(w, r, contentSecurityPolicy) {
		return
	}
	w.Header().Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=()")
	if h.refused != "" {
		h.refusedPage(w)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, h.mount)
	f := h.files[name]
	if f == nil {
		// Screens are addresses inside the app (/app/inbox/…, the
		// signed-out screen): they all load the page, which reads its address. A
		// missing file (a name with an extension) is a plain 404. An
		// extension of digits only is no file type: a call's id is unix
		// seconds, a dot and a sequence (/app/calls/1772323200.1).
		if name != "" && isFileName(path.Base(name)) {
			http.NotFound(w, r)
			return
		}
		f = h.files["index.html"]
	}
	f.ServeHTTP(w, r)
}

// refusedPage explains why the app cannot be used on this server.
func (h *Handler) refusedPage(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintf(w, `<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Switchboard app unavailable</title><h1>The Switchboard app is not available on this server</h1><p>%s</p></html>`, html.EscapeString(h.refused))
}

// isFileName reports whether the last segment of an address names a file:
// it has an extension with a letter in it (app.css, missing.js), not one of
// digits only (a call id such as 1772323200.1).
func isFileName(base string) bool {
	ext := path.Ext(base)
	return strings.ContainsFunc(ext, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' })
}
