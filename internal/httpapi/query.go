package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"switchboard/internal/domain"
)

// queryParams reads a request's query string strictly, the one way the
// HTTP layer reads one: a parameter the endpoint does not take, a parameter
// given twice, or a value that does not parse or is out of range is 400
// invalid_request naming the parameter. A bad value is never replaced by a
// default; only an absent parameter is.
//
// Every public API route names the parameters it takes in the route table
// (routes.go); Server.api parses the query with them and refuses unknown
// and repeated names before the handler runs. The handler then reads the
// values; the first problem found is kept and reported by err, so it reads
// every parameter and checks once:
//
//	q := queryOf(r)
//	limit := q.int("limit", 50, 1, 200)
//	unread := q.bool("unread")
//	if err := q.err(); err != nil {
//		return err
//	}
type queryParams struct {
	values  url.Values
	allowed []string
	first   error
}

type queryKey struct{}

// withQuery keeps the parsed query of the request in ctx.
func withQuery(ctx context.Context, q *queryParams) context.Context {
	return context.WithValue(ctx, queryKey{}, q)
}

// queryOf is the query Server.api parsed for the route's parameters.
func queryOf(r *http.Request) *queryParams {
	if q, ok := r.Context().Value(queryKey{}).(*queryParams); ok {
		return q
	}
	return &queryParams{}
}

// parseQuery reads r's query string, which may hold only the allowed names.
// Routes outside the public API table (the OpenAPI document, ingest) call it
// themselves.
func parseQuery(r *http.Request, allowed ...string) *queryParams {
	q := &queryParams{allowed: allowed}
	values, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		q.fail("the query string is malformed: %v", err)
		return q
	}
	q.values = values
	for name, vs := range values {
		switch {
		case !slices.Contains(allowed, name):
			if len(allowed) == 0 {
				q.fail("unknown query parameter %q: this endpoint takes none", name)
			} else {
				q.fail("unknown query parameter %q: this endpoint takes %s", name, strings.Join(allowed, ", "))
			}
		case len(vs) > 1:
			q.fail("query parameter %s is given %d times; give it once (a list is comma-separated)", name, len(vs))
		case strings.IndexByte(vs[0], 0) >= 0:
			q.keep(nulIn("query parameter " + name))
		}
	}
	return q
}

func (q *queryParams) fail(format string, args ...any) {
	q.keep(domain.Errorf(domain.Invalid, format, args...))
}

// keep keeps err unless a problem was found before it.
func (q *queryParams) keep(err error) {
	if q.first == nil {
		q.first = err
	}
}

// err returns the first problem found, or nil.
func (q *queryParams) err() error { return q.first }

// raw returns the parameter's value and whether it was given at all.
func (q *queryParams) raw(name string) (string, bool) {
	if !slices.Contains(q.allowed, name) {
		// A handler reading a parameter its route does not declare would
		// never see it: a programming error, caught by any test of it.
		panic("httpapi: query parameter " + name + " is read but not declared by the route")
	}
	if q.values == nil {
		return "", false
	}
	vs, ok := q.values[name]
	if !ok || len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

// int reads an integer in [min, max]; def when absent.
func (q *queryParams) int(name string, def, min, max int) int {
	s, ok := q.raw(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < min || n > max {
		q.fail("query parameter %s must be an integer from %d to %d; got %q", name, min, max, s)
		return def
	}
	return n
}

// bool reads true or false (exactly those words); false when absent.
func (q *queryParams) bool(name string) bool {
	s, ok := q.raw(name)
	if !ok {
		return false
	}
	switch s {
	case "true":
		return true
	case "false":
		return false
	}
	q.fail("query parameter %s must be true or false; got %q", name, s)
	return false
}

// list reads a comma-separated list of non-empty items (spaces around an
// item are dropped); nil when absent. An empty value or an empty item is a
// problem: "lines=" does not mean "no lines".
func (q *queryParams) list(name string) []string {
	s, ok := q.raw(name)
	if !ok {
		return nil
	}
	items := strings.Split(s, ",")
	for i, it := range items {
		items[i] = strings.TrimSpace(it)
		if items[i] == "" {
			q.fail("query parameter %s must be a comma-separated list without empty items; got %q", name, s)
			return nil
		}
	}
	return items
}

// id reads a positive integer id, such as a page cursor (the last id of
// the previous page); 0 when absent. what names the object, with its
// article: "a delivery".
func (q *queryParams) id(name, what string) int64 {
	s, ok := q.raw(name)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		q.fail("query parameter %s must be %s id, a positive integer; got %q", name, what, s)
		return 0
	}
	return n
}

// time reads an RFC 3339 time; the zero time when absent.
func (q *queryParams) time(name string) time.Time {
	s, ok := q.raw(name)
	if !ok {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		q.fail("query parameter %s must be an RFC 3339 time such as 2025-01-31T09:00:00Z; got %q", name, s)
		return time.Time{}
	}
	return t
}
