package httpapi

import (
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"switchboard/api"
	"switchboard/internal/calls"
	"switchboard/internal/sms"
)

// TestRouteQueriesMatchDocument holds the query parameters each route takes
// (the names after its handler in the route table, which Server.api
// enforces) to the ones api/openapi.yaml documents for the operation: a
// documented parameter is never refused, and an undocumented one never
// taken. Every operation documents the 400 an unknown parameter gets.
func TestRouteQueriesMatchDocument(t *testing.T) {
	doc, err := api.Load()
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{SMS: sms.New(sms.Config{}), Calls: calls.New(calls.Config{})})
	if len(s.apiRoutes) == 0 {
		t.Fatal("no routes recorded")
	}
	check := func(key string, item *openapi3.PathItem, op *openapi3.Operation, takes []string) {
		var documented []string
		for _, params := range []openapi3.Parameters{item.Parameters, op.Parameters} {
			for _, p := range params {
				if p.Value.In == openapi3.ParameterInQuery {
					documented = append(documented, p.Value.Name)
				}
			}
		}
		slices.Sort(documented)
		takes = slices.Sorted(slices.Values(takes))
		if !slices.Equal(documented, takes) {
			t.Errorf("%s: the route takes query parameters %q, the document lists %q", key, takes, documented)
		}
		if op.Responses.Status(400) == nil {
			t.Errorf("%s: the document lists no 400, which an unknown query parameter gets", key)
		}
	}
	for _, r := range s.apiRoutes {
		key := r.method + " " + r.path
		item := doc.Paths.Find(r.path)
		if item == nil || item.GetOperation(r.method) == nil {
			continue // TestRoutesMatchDocument reports it
		}
		check(key, item, item.GetOperation(r.method), r.query)
	}
	// The document itself is served outside the table, and takes none.
	item := doc.Paths.Find("/openapi.json")
	check("GET /openapi.json", item, item.Get, nil)
}
