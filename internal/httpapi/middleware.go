package httpapi

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
)

// RequestIDHeader carries the request id on every response (and is honoured
// on requests, so a caller's id follows the request through the logs).
const RequestIDHeader = "X-Request-Id"

type requestIDKey struct{}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// withRequestID gives every response its request id, and the headers every
// response carries.
func (s *Server) withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !validRequestID(id) {
			id = newRequestID()
		}
		h := w.Header()
		h.Set(RequestIDHeader, id)
		// Every body is exactly the type it declares: no browser may guess
		// another (a JSON error echoing input must never run as HTML).
		h.Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

// requestIDs are a random per-process prefix and a counter: unique across
// nodes and restarts without a random read per request.
var (
	requestIDPrefix = func() string {
		var b [6]byte
		rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	requestIDSeq atomic.Uint64
)

func newRequestID() string {
	return requestIDPrefix + "-" + strconv.FormatUint(requestIDSeq.Add(1), 36)
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// withRecover turns a panic into a logged 500 in the error envelope.
func (s *Server) withRecover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				writeError(w, r, s.log, fmt.Errorf("panic: %v", p))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// statusWriter remembers the status code for logs and metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += n
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack hands the connection over. The one handler that takes it, GET
// /events on HTTP/1.1, answers 200 itself on it: the log and the metrics
// count that (at the hand-over: the stream then runs without its handler).
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil && w.status == 0 {
		w.status = http.StatusOK
	}
	return c, rw, err
}

// withAccessLog logs one line per request. The query string is left out (it
// may carry numbers or a carrier's secret), and so are media names, which
// are the only thing protecting an attachment.
func (s *Server) withAccessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		s.log.LogAttrs(r.Context(), levelFor(sw.status), "http",
			slogStr("method", r.Method), slogStr("path", loggablePath(r.URL.Path)), slogInt("status", sw.status),
			slogInt("bytes", sw.bytes), slogDur("duration", time.Since(start)), slogStr("request_id", requestID(r.Context())))
	})
}

// handlerFunc is a handler that returns its error for the one error writer.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// route registers pattern with metrics and error writing.
func (s *Server) route(pattern string, h handlerFunc) {
	s.mux.Handle(pattern, s.metrics.wrap(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			writeError(w, r, s.log, s.unavailable(r, err))
		}
	})))
}

// api registers an authenticated public API endpoint that needs scope and
// takes the query parameters named by query (none when empty). The scope
// check happens before the handler runs; role permissions, which depend on
// the object addressed, are checked by the domain code (one that a whole
// family needs whatever it addresses is the table's: apiRole). So does the
// query check: a parameter the endpoint does not take, or one given twice, is 400
// before anything else about the request is looked at (its body, an
// Idempotency-Key's stored answer), and the handler reads the parsed query
// with queryOf.
func (s *Server) api(pattern string, scope auth.Scope, h handlerFunc, query ...string) {
	s.apiScoped(pattern, scope, func(p auth.Principal) error { return p.Require(scope) }, h, query...)
}

// apiScoped is api for an endpoint that takes any of several scopes:
// allowed checks the credential's, and scope is the one the document and
// an unauthenticated answer name (GET /events).
func (s *Server) apiScoped(pattern string, scope auth.Scope, allowed func(auth.Principal) error, h handlerFunc, query ...string) {
	s.register(pattern, apiRoute{scope: scope, query: query}, allowed, h)
}

// rolePermission is a role permission that every route of a family needs,
// whatever the route addresses, so the route table checks it (after the
// scope, before the query and the handler); name is how the document's
// x-role-permission says it.
type rolePermission struct {
	name  string
	check func(auth.Principal) error
}

// apiRole is api for a route that also needs role.
func (s *Server) apiRole(pattern string, scope auth.Scope, role rolePermission, h handlerFunc, query ...string) {
	allowed := func(p auth.Principal) error {
		if err := p.Require(scope); err != nil {
			return err
		}
		return role.check(p)
	}
	s.register(pattern, apiRoute{scope: scope, role: role.name, query: query}, allowed, h)
}

// register adds the route described by pattern and rt to the table and
// serves it: authentication, allowed, the query check, then h.
func (s *Server) register(pattern string, rt apiRoute, allowed func(auth.Principal) error, h handlerFunc) {
	method, path, _ := strings.Cut(pattern, " ")
	rt.method, rt.path = method, path
	s.apiRoutes = append(s.apiRoutes, rt)
	scope, query := rt.scope, rt.query
	params := pathParams(path)
	s.route(method+" "+Prefix+path, func(w http.ResponseWriter, r *http.Request) error {
		// Every answer is one account's data, and some carry a secret or a
		// signed link (a webhook's secret, recording and media URLs): no
		// cache, private or shared, keeps any of them.
		w.Header().Set("Cache-Control", "no-store")
		ctx := s.store.ReadScope(r.Context())
		p, err := s.authenticate(ctx, r, scope)
		if err != nil {
			return err
		}
		if err := allowed(p); err != nil {
			return err
		}
		q := parseQuery(r, query...)
		if err := q.err(); err != nil {
			return err
		}
		if err := pathText(r, params); err != nil {
			return err
		}
		return h(w, r.WithContext(withQuery(auth.NewContext(ctx, p), q)))
	})
}

func (s *Server) authenticate(ctx context.Context, r *http.Request, scope auth.Scope) (auth.Principal, error) {
	token, missing := bearer(r)
	if missing != "" {
		return auth.Principal{}, &domain.Error{Code: domain.Unauthenticated, Message: missing, Scope: string(scope)}
	}
	p, err := s.auth.Authenticate(ctx, token)
	if e, ok := err.(*domain.Error); ok && e.Code == domain.Unauthenticated {
		// A copy: the error may be a value other requests share, and
		// writing this endpoint's scope into it would race with them.
		named := *e
		named.Scope = string(scope)
		return p, &named
	}
	return p, err
}

// bearer extracts the token of an "Authorization: Bearer <token>" header, or
// says why there is none. The scheme is case-insensitive (RFC 7235); the token
// must be non-empty. Two Authorization headers are no credential: which one
// counts would be a guess (and a proxy may have picked the other).
func bearer(r *http.Request) (token, missing string) {
	hs := r.Header.Values("Authorization")
	if len(hs) > 1 {
		return "", "send one Authorization header, not several"
	}
	if len(hs) == 1 {
		scheme, t, ok := strings.Cut(hs[0], " ")
		if t = strings.TrimSpace(t); ok && strings.EqualFold(scheme, "Bearer") && t != "" {
			return t, ""
		}
	}
	return "", "a bearer credential is required"
}

func principal(r *http.Request) auth.Principal {
	p, _ := auth.FromContext(r.Context())
	return p
}

// loggablePath is p with attachment names and recording links, which are
// secrets, left out. The path is judged cleaned ("//media/x" and "/a/../media/x" lead there too).
func loggablePath(p string) string {
	if strings.Contains(p, "/media/") && strings.HasPrefix(path.Clean("/"+p), "/media/") {
		return "/media/[redacted]"
	}
	// Signed recording links are secrets too.
	if strings.Contains(p, "/recordings/") && strings.HasPrefix(path.Clean("/"+p), "/recordings/") {
		return "/recordings/[redacted]"
	}
	return p
}
