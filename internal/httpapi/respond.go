package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"switchboard/internal/domain"
)

// Every success body goes out through this file: writeData (and writePage
// for a page with a cursor) encodes the envelope {"data": …}, writeEncoded
// writes an encoded body (or a document such as the OpenAPI description),
// appendEnvelope wraps data a hot path encoded itself, and writeNoContent
// answers 204. Handlers never write a success another way, so the envelope,
// its headers and its encoding (HTML not escaped) are the same everywhere.

// envelope is the success body: the payload and, on a page that may have a
// successor, the cursor of the next page (left out when there is none).
type envelope struct {
	Data any    `json:"data"`
	Next *int64 `json:"next,omitempty"`
}

// writeData writes the success envelope {"data": v}.
func writeData(w http.ResponseWriter, status int, v any) {
	writeEnvelope(w, status, envelope{Data: v})
}

// writePage writes the page {"data": data, "next": next} of a newest-first
// list with a cursor; next is left out when nil.
func writePage(w http.ResponseWriter, data any, next *int64) {
	writeEnvelope(w, http.StatusOK, envelope{Data: data, Next: next})
}

func writeEnvelope(w http.ResponseWriter, status int, e envelope) {
	body, err := encodeEnvelope(e)
	if err != nil {
		// Only unencodable types get here: a programming error.
		panic(err)
	}
	writeEncoded(w, status, body)
}

// encodeData encodes the success envelope {"data": v}, for a caller that
// keeps the encoded answer (the users list is cached encoded).
func encodeData(v any) ([]byte, error) { return encodeEnvelope(envelope{Data: v}) }

// encodeEnvelope encodes e without escaping HTML: an answer often holds HTML
// (a webhook endpoint's response, a message), and escaped it takes six bytes
// a character.
func encodeEnvelope(e envelope) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(e)
	return b.Bytes(), err
}

// appendEnvelope appends the envelope {"data": …} around the data that
// appendData appends already encoded, with the newline json.Encoder ends
// with: byte for byte what writeData writes, for a hot path that encodes
// without reflection (a call search page). Write the result with
// writeEncoded.
func appendEnvelope(b []byte, appendData func([]byte) []byte) []byte {
	b = append(b, `{"data":`...)
	b = appendData(b)
	return append(b, "}\n"...)
}

// writeEncoded writes an already encoded JSON body.
func writeEncoded(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

// writeNoContent answers 204: done, and nothing to say.
func writeNoContent(w http.ResponseWriter) {
	w.WriteHeader(http.StatusNoContent)
}

type errorBody struct {
	Type    domain.Code `json:"type"`
	Message string      `json:"message"`
	Scope   string      `json:"scope,omitempty"`
}

// codeStatus and kindStatus are the one mapping from domain errors to HTTP
// statuses: a Kind, when set, decides; otherwise the Code does.
var codeStatus = map[domain.Code]int{
	domain.Invalid:           http.StatusBadRequest,
	domain.Unauthenticated:   http.StatusUnauthorized,
	domain.InsufficientScope: http.StatusForbidden,
	domain.PermissionDenied:  http.StatusForbidden,
	domain.NotFound:          http.StatusNotFound,
	domain.Conflict:          http.StatusConflict,
	domain.Unsupported:       http.StatusBadRequest,
	domain.RateLimited:       http.StatusTooManyRequests,
	domain.Unavailable:       http.StatusServiceUnavailable,
	domain.Internal:          http.StatusInternalServerError,
}

var kindStatus = map[domain.Kind]int{
	domain.Unprocessable:    http.StatusUnprocessableEntity,
	domain.TooLarge:         http.StatusRequestEntityTooLarge,
	domain.MethodNotAllowed: http.StatusMethodNotAllowed,
	domain.NotAcceptable:    http.StatusNotAcceptable,
}

// errorStatus is the HTTP status of err: 500 unless it is a *domain.Error.
func errorStatus(err error) int {
	var e *domain.Error
	if !errors.As(err, &e) {
		return http.StatusInternalServerError
	}
	return statusOf(e)
}

// statusOf is the HTTP status of e.
func statusOf(e *domain.Error) int {
	if s, ok := kindStatus[e.Kind]; ok {
		return s
	}
	if s, ok := codeStatus[e.Code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// unavailable turns a failure to reach the database into the spec's
// unavailable (503: nothing was created or charged, retry with backoff),
// logged once with its cause; any other error is returned as it is.
func (s *Server) unavailable(r *http.Request, err error) error {
	var e *domain.Error
	if errors.As(err, &e) || !s.store.Unavailable(err) {
		return err
	}
	s.log.WarnContext(r.Context(), "database unavailable", "err", err, "method", r.Method, "path", loggablePath(r.URL.Path), "request_id", requestID(r.Context()))
	return domain.Errorf(domain.Unavailable, "the database is unavailable; nothing was created or charged, retry later")
}

// realm names the protection space in WWW-Authenticate challenges.
const realm = "switchboard"

// writeError is the one place errors become HTTP responses. Anything that is
// not a *domain.Error is logged with its cause and answered with a generic 500.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	var e *domain.Error
	if !errors.As(err, &e) {
		log.ErrorContext(r.Context(), "request failed", "err", err, "method", r.Method, "path", loggablePath(r.URL.Path), "request_id", requestID(r.Context()))
		e = &domain.Error{Code: domain.Internal, Message: "internal error; nothing was created or charged"}
	}
	status := statusOf(e)
	body := errorBody{Type: e.Code, Message: e.Message}
	switch e.Code {
	case domain.Unauthenticated:
		w.Header().Set("WWW-Authenticate", challenge("invalid_token", e.Message, e.Scope))
	case domain.InsufficientScope:
		body.Scope = e.Scope
		w.Header().Set("WWW-Authenticate", challenge("insufficient_scope", e.Message, e.Scope))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(struct {
		Error errorBody `json:"error"`
	}{body})
}

// challenge formats an RFC 6750 Bearer challenge.
func challenge(code, description, scope string) string {
	var b strings.Builder
	b.WriteString(`Bearer realm="` + realm + `", error="` + code + `"`)
	if description != "" {
		b.WriteString(`, error_description="` + quoteSafe(description) + `"`)
	}
	if scope != "" {
		b.WriteString(`, scope="` + quoteSafe(scope) + `"`)
	}
	return b.String()
}

// quoteSafe drops characters RFC 6750 does not allow inside quoted values.
func quoteSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < 0x20 || r > 0x7e {
			return -1
		}
		return r
	}, s)
}
