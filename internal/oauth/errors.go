package oauth

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Error codes of RFC 6749 §4.1.2.1 and §5.2, RFC 7591 §3.2.2 and RFC 7009.
const (
	errInvalidRequest          = "invalid_request"
	errInvalidClient           = "invalid_client"
	errUnauthorizedClient      = "unauthorized_client"
	errInvalidGrant            = "invalid_grant"
	errUnsupportedGrantType    = "unsupported_grant_type"
	errUnsupportedResponseType = "unsupported_response_type"
	errInvalidScope            = "invalid_scope"
	errAccessDenied            = "access_denied"
	errServerError             = "server_error"
	errInvalidRedirectURI      = "invalid_redirect_uri"
	errInvalidClientMetadata   = "invalid_client_metadata"
	// errRateLimited is not an RFC 7591 code (the RFC lets a server add
	// its own); it is the public API's name for a 429.
	errRateLimited = "rate_limited"
)

// oauthError is the RFC 6749 §5.2 error body. It is deliberately not the
// public API's error envelope: OAuth clients parse this shape.
type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// noStore marks a response as never to be cached (RFC 6749 §5.1).
func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
}

// writeError writes an OAuth error response.
func writeError(w http.ResponseWriter, status int, code, description string) {
	noStore(w)
	writeJSON(w, status, oauthError{Error: code, Description: description})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"server_error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// nulParam names the first parameter of v (by name) whose value holds the
// NUL character. PostgreSQL stores no NUL in text: a client_id or a
// username holding one would be a server error there and a mere miss on
// SQLite, so every form and query is refused with it, alike on both
// (docs/decisions.md).
func nulParam(v url.Values) (string, bool) {
	for _, name := range slices.Sorted(maps.Keys(v)) {
		for _, s := range v[name] {
			if strings.IndexByte(s, 0) >= 0 {
				return name, true
			}
		}
	}
	return "", false
}

// nulMessage says that the parameter name holds the NUL character.
func nulMessage(name string) string {
	return name + " holds the NUL character (U+0000), which no text may hold"
}
