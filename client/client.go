// Package client is a Go client for the Switchboard public API
// (/api/public/v1).
//
// Most of it is generated from api/openapi.yaml by oapi-codegen
// (client.gen.go: one method per operation, a type per schema); the
// server's module regenerates it (`go generate ./api/`). Written by hand
// beside it are what a generator does not give: New (a client that sends
// the credential), the event stream reader with resume (Events), iterators
// over the paged lists (Conversations, ThreadMessages, Deliveries, Calls)
// and APIError. The
// Standard Webhooks verifier for incoming deliveries is package
// github.com/switchboard-server/switchboard/client/webhook.
//
// It is a Go module of its own, which depends on nothing of the server
// (README.md in this directory says how to get it).
//
//	api, err := client.New("https://switchboard.example.com", os.Getenv("SWITCHBOARD_KEY"))
//	sent, err := api.SendSMSWithResponse(ctx, nil, client.SendRequest{From: "+14155550100", To: []string{"+14155550123"}, Message: client.Ptr("hi")})
//	for ev, err := range api.Events(ctx, client.EventsOptions{}) { ... }
package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// PathPrefix is the public API's path on a Switchboard server.
const PathPrefix = "/api/public/v1"

// API is the generated client (every operation as a method, with its
// response decoded) plus the hand-written helpers. Make one with New.
type API struct {
	*ClientWithResponses
	// raw is the client underneath, whose operations return the
	// *http.Response unread: the event stream and the pages are read
	// from it.
	raw *Client
	// sleep waits before a reconnection of the event stream (false if ctx
	// ended first) and now times its connections; tests replace both.
	sleep func(ctx context.Context, d time.Duration) bool
	now   func() time.Time
}

// New returns a client for the server at baseURL that authenticates every
// request with token (an API key or an OAuth access token) as
// "Authorization: Bearer <token>". baseURL is the server's origin
// ("https://switchboard.example.com"); the API's path prefix
// (/api/public/v1) is added unless baseURL already ends with it. opts are
// the generated ClientOptions: WithHTTPClient (a timeout, a proxy, a
// transport), WithRequestEditorFn.
//
// The default HTTP client has no overall timeout, because the event stream
// is one long response; give each call a context with a deadline instead.
func New(baseURL, token string, opts ...ClientOption) (*API, error) {
	if token == "" {
		return nil, fmt.Errorf("client: empty token")
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q is not an http(s) URL", baseURL)
	}
	server := strings.TrimSuffix(baseURL, "/")
	if !strings.HasSuffix(server, PathPrefix) {
		server += PathPrefix
	}
	auth := WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	})
	raw, err := NewClient(server, append([]ClientOption{auth}, opts...)...)
	if err != nil {
		return nil, err
	}
	return &API{ClientWithResponses: &ClientWithResponses{ClientInterface: raw}, raw: raw, sleep: sleepCtx, now: time.Now}, nil
}

// Ptr returns a pointer to v, for the generated types' optional fields.
func Ptr[T any](v T) *T { return &v }

// APIError is an answer outside 2xx: its status and the error envelope's
// type and message (Error in the document).
type APIError struct {
	Status int
	// Type is the stable error kind (invalid_request, not_found, ...);
	// branch on it, never on Message.
	Type    string
	Message string
	// Scope names the missing scope of an insufficient_scope error.
	Scope     string
	RequestID string
	// RetryAfter is the Retry-After header ("" when absent).
	RetryAfter string
}

func (e *APIError) Error() string {
	if e.Type == "" {
		return fmt.Sprintf("switchboard: HTTP %d", e.Status)
	}
	return fmt.Sprintf("switchboard: HTTP %d %s: %s", e.Status, e.Type, e.Message)
}

// ResponseError returns nil for a 2xx response and an *APIError otherwise,
// decoded from body (the generated responses keep it as Body). A 2xx may
// still not be the documented answer (a proxy's HTML page has no JSON201):
// check the field you read is not nil.
//
//	r, err := api.GetMeWithResponse(ctx)
//	if err == nil {
//		err = client.ResponseError(r.HTTPResponse, r.Body)
//	}
func ResponseError(resp *http.Response, body []byte) error {
	if resp == nil {
		return fmt.Errorf("switchboard: no response")
	}
	if resp.StatusCode/100 == 2 {
		return nil
	}
	e := &APIError{Status: resp.StatusCode, RequestID: resp.Header.Get("X-Request-Id"), RetryAfter: resp.Header.Get("Retry-After")}
	var env Error
	if json.Unmarshal(body, &env) == nil {
		e.Type, e.Message = env.Error.Type, env.Error.Message
		if env.Error.Scope != nil {
			e.Scope = *env.Error.Scope
		}
	}
	return e
}

// UnexpectedResponseError is an answer that is not an error (2xx) but not
// the one asked for either: another 2xx status, or another content type (a
// proxy's HTML page, a base URL that is not a Switchboard server). The
// hand-written helpers (Events, the page iterators) return it instead of
// reading such an answer.
type UnexpectedResponseError struct {
	Status      int
	ContentType string
	// Want is the answer expected ("200 application/json").
	Want      string
	RequestID string
}

func (e *UnexpectedResponseError) Error() string {
	return fmt.Sprintf("switchboard: HTTP %d with Content-Type %q, where %s was expected", e.Status, e.ContentType, e.Want)
}

// maxErrorBody bounds how much of an error's body is read.
const maxErrorBody = 1 << 20

// answerError reads and closes resp, an answer other than want ("200
// application/json"), and returns its error: an *APIError outside 2xx, an
// *UnexpectedResponseError otherwise.
func answerError(resp *http.Response, want string) error {
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err := ResponseError(resp, body); err != nil {
		return err
	}
	return &UnexpectedResponseError{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Want: want, RequestID: resp.Header.Get("X-Request-Id")}
}
