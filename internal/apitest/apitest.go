// Package apitest is test support: an HTTP client whose transport validates
// every response of the public API against the OpenAPI document in package
// api, and Eventually, the poll with a deadline that tests wait on
// conditions with. Use it only from _test.go files.
//
//	c := apitest.Client(t)
//	resp, err := c.Get(srv.URL + "/api/public/v1/users")
//
// Every response to a request under /api/public/v1 is checked:
//
//   - it carries a non-empty X-Request-Id header;
//   - if the request matches an operation of the document, the status must be
//     one the operation lists and the headers and body must match that
//     response's description (openapi3filter.ValidateResponse);
//   - if it matches no operation (unknown path, or a method the path does not
//     support), the status must be 404 or 405 (or 401 or 413: auth and size
//     limits may be checked before routing; only 405, 401 or 413 for a known
//     path with a wrong method) and the response must match the document's
//     reusable response for that status: the Error envelope, plus Allow on
//     405 and WWW-Authenticate on 401.
//
// Requests outside /api/public/v1 (health, metrics, OAuth, media) are passed
// through unchecked. Request bodies are never validated: tests send bad ones on
// purpose. A failure is reported with t.Errorf; the response is still returned
// to the caller, with its body intact.
package apitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"switchboard/api"
)

// Prefix is the path prefix of the public API; responses to requests under it
// are validated.
const Prefix = "/api/public/v1"

// RequestIDHeader must be present and non-empty on every validated response.
const RequestIDHeader = "X-Request-Id"

// bodyExcerpt is how much of a failing response's body is quoted.
const bodyExcerpt = 500

// Client returns an HTTP client whose transport validates responses (see
// Transport) over http.DefaultTransport.
func Client(t testing.TB) *http.Client {
	t.Helper()
	return &http.Client{Transport: Transport(t, http.DefaultTransport)}
}

// Transport returns a RoundTripper that sends each request with base (or
// http.DefaultTransport if base is nil), reads and restores the response body,
// and validates the response against the OpenAPI document, reporting every
// mismatch with t.Errorf. It fails the test at once (t.Fatalf) if the document
// itself cannot be loaded.
func Transport(t testing.TB, base http.RoundTripper) http.RoundTripper {
	t.Helper()
	v, err := getValidator()
	if err != nil {
		t.Fatalf("apitest: %v", err)
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{t: t, base: base, v: v}
}

type transport struct {
	t    testing.TB
	base http.RoundTripper
	v    *validator
}

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := tr.base.RoundTrip(req)
	if err != nil || !underPrefix(req.URL.Path) {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		tr.t.Errorf("apitest: %s %s -> %d: reading response body: %v", req.Method, req.URL.RequestURI(), resp.StatusCode, err)
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))

	for _, problem := range tr.v.check(req, resp, body) {
		excerpt := body
		if len(excerpt) > bodyExcerpt {
			excerpt = excerpt[:bodyExcerpt]
		}
		tr.t.Errorf("apitest: %s %s -> %d: %s\nbody: %s", req.Method, req.URL.RequestURI(), resp.StatusCode, problem, excerpt)
	}
	return resp, nil
}

// Validate checks a response that did not come through Transport (one read
// off a raw connection, say) against the OpenAPI document, as Transport does.
// req needs only the method and URL the response answers.
func Validate(t testing.TB, req *http.Request, resp *http.Response) {
	t.Helper()
	v, err := getValidator()
	if err != nil {
		t.Fatalf("apitest: %v", err)
	}
	tr := &transport{t: t, v: v, base: roundTripFunc(func(*http.Request) (*http.Response, error) { return resp, nil })}
	if _, err := tr.RoundTrip(req); err != nil {
		t.Errorf("apitest: %v", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func underPrefix(path string) bool {
	return path == Prefix || strings.HasPrefix(path, Prefix+"/")
}

// validator holds what is built once per process from the document.
type validator struct {
	router routers.Router
	// Synthetic routes for requests that match no operation. Their
	// responses are the document's reusable ones, so the same validator
	// checks status, headers and body.
	unknownPath, wrongMethod *routers.Route
	opts                     *openapi3filter.Options
}

// getValidator loads, validates and indexes the document once per process:
// tests make thousands of requests.
var getValidator = sync.OnceValues(func() (*validator, error) {
	// A contacts export may be a vCard file: a string body, as text/csv's.
	openapi3filter.RegisterBodyDecoder("text/vcard", openapi3filter.FileBodyDecoder)
	doc, err := api.Load()
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("api/openapi.yaml is invalid: %w", err)
	}
	// The document's only server is the relative URL /api/public/v1. The
	// gorillamux router turns a server URL without scheme and host into a
	// route with no host or scheme matcher, so the routes match
	// /api/public/v1/<path> on any host (httptest servers listen on random
	// ports); the prefix is part of the match, so nothing is stripped here.
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("building router: %w", err)
	}
	component := func(name string) *openapi3.ResponseRef {
		ref := doc.Components.Responses[name]
		if ref == nil || ref.Value == nil {
			err = errors.Join(err, fmt.Errorf("api/openapi.yaml has no components.responses.%s", name))
		}
		return ref
	}
	unauth, tooLarge := component("Unauthenticated"), component("PayloadTooLarge")
	errSchema, reqID := doc.Components.Schemas["Error"], doc.Components.Headers["XRequestId"]
	if errSchema == nil || reqID == nil {
		err = errors.Join(err, errors.New("api/openapi.yaml has no components.schemas.Error or components.headers.XRequestId"))
	}
	if err != nil {
		return nil, err
	}
	// What the server answers for a path the document does not describe, or
	// a method a path does not support. The document states these in its
	// general rules rather than as components no operation would reference.
	routeError := func(desc string, extra openapi3.Headers) *openapi3.ResponseRef {
		h := openapi3.Headers{"X-Request-Id": reqID}
		for k, v := range extra {
			h[k] = v
		}
		r := openapi3.NewResponse().WithDescription(desc).
			WithContent(openapi3.Content{"application/json": &openapi3.MediaType{Schema: errSchema}})
		r.Headers = h
		return &openapi3.ResponseRef{Value: r}
	}
	allow := &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: openapi3.Parameter{Required: true,
		Schema: openapi3.NewStringSchema().WithMinLength(1).NewRef()}}}
	notFound := routeError("no such path", nil)
	notAllowed := routeError("method not allowed", openapi3.Headers{"Allow": allow})
	synthetic := func(path string, statuses map[int]*openapi3.ResponseRef) *routers.Route {
		op := openapi3.NewOperation()
		op.Responses = openapi3.NewResponses()
		for status, ref := range statuses {
			op.Responses.Set(fmt.Sprint(status), ref)
		}
		return &routers.Route{Spec: doc, Path: path, PathItem: &openapi3.PathItem{}, Operation: op}
	}
	return &validator{
		router: router,
		unknownPath: synthetic("(no such path)", map[int]*openapi3.ResponseRef{
			http.StatusUnauthorized: unauth, http.StatusRequestEntityTooLarge: tooLarge,
			http.StatusNotFound: notFound, http.StatusMethodNotAllowed: notAllowed,
		}),
		wrongMethod: synthetic("(method not allowed)", map[int]*openapi3.ResponseRef{
			http.StatusUnauthorized: unauth, http.StatusRequestEntityTooLarge: tooLarge,
			http.StatusMethodNotAllowed: notAllowed,
		}),
		opts: &openapi3filter.Options{
			// An undocumented status is a failure, not a pass.
			IncludeResponseStatus: true,
			MultiError:            true,
			// Report the failing JSON pointer and reason, not a dump of the
			// whole schema and value: the body excerpt is quoted anyway.
			SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.DisableSchemaErrorDetails()},
		},
	}, nil
})

// check returns the problems with resp, the response to req whose body is
// body; none means it conforms.
func (v *validator) check(req *http.Request, resp *http.Response, body []byte) []string {
	var problems []string
	if resp.Header.Get(RequestIDHeader) == "" {
		problems = append(problems, "missing or empty "+RequestIDHeader+" header")
	}
	if req.Method == http.MethodHead {
		return problems // no body to check; the validator skips HEAD as well
	}

	route, params, err := v.router.FindRoute(req)
	what := "response does not match " + req.Method + " "
	switch {
	case err == nil:
		what += route.Path
	case errors.Is(err, routers.ErrMethodNotAllowed):
		route, what = v.wrongMethod, "response to a method the path does not support (want 405, 401 or 413 with the Error envelope)"
	case errors.Is(err, routers.ErrPathNotFound):
		route, what = v.unknownPath, "response to a path the document does not describe (want 404, 405, 401 or 413 with the Error envelope)"
	default:
		return append(problems, "finding route: "+err.Error())
	}

	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    req,
			PathParams: params,
			Route:      route,
			Options:    v.opts,
		},
		Status:  resp.StatusCode,
		Header:  resp.Header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: v.opts,
	}
	if err := openapi3filter.ValidateResponse(req.Context(), input); err != nil {
		problems = append(problems, what+": "+err.Error())
	}
	return problems
}
