package api

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestEveryOperationIsDocumented checks what the rendered reference
// (/api/docs) shows for every operation: a summary, the scope (or
// x-any-credential, or none for the public document) and the role
// permission behind it, and an example of every request body and every
// response body, success and error alike.
func TestEveryOperationIsDocumented(t *testing.T) {
	doc, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			name := method + " " + path
			if strings.TrimSpace(op.Summary) == "" {
				t.Errorf("%s: no summary", name)
			}
			if role, _ := op.Extensions["x-role-permission"].(string); strings.TrimSpace(role) == "" {
				t.Errorf("%s: no x-role-permission (say which role permission an OAuth token's person needs, or that none applies)", name)
			}
			if op.RequestBody != nil {
				for ct, mt := range op.RequestBody.Value.Content {
					if !hasExample(mt) {
						t.Errorf("%s: request body %s has no example", name, ct)
					}
				}
			}
			for code, ref := range op.Responses.Map() {
				for ct, mt := range ref.Value.Content {
					if !hasExample(mt) {
						t.Errorf("%s %s: %s response has no example", name, code, ct)
					}
				}
			}
		}
	}
}

func hasExample(mt *openapi3.MediaType) bool { return mt.Example != nil || len(mt.Examples) > 0 }

// TestExamplesMatchTheirSchemas validates every example of a request or
// response body against its schema, as a request (the test client's) or a
// response (the server's, which internal/apitest validates), so that an
// example never shows a client something the server would not send or
// accept.
func TestExamplesMatchTheirSchemas(t *testing.T) {
	doc, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	check := func(where string, mt *openapi3.MediaType, as openapi3.SchemaValidationOption) {
		if mt.Schema == nil {
			t.Errorf("%s: an example without a schema", where)
			return
		}
		values := map[string]any{}
		if mt.Example != nil {
			values["example"] = mt.Example
		}
		for name, ex := range mt.Examples {
			values["examples."+name] = ex.Value.Value
		}
		for _, key := range slices.Sorted(maps.Keys(values)) {
			n++
			if err := mt.Schema.Value.VisitJSON(values[key], as, openapi3.MultiErrors()); err != nil {
				t.Errorf("%s %s does not match its schema: %v", where, key, err)
			}
		}
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			name := method + " " + path
			if op.RequestBody != nil {
				for ct, mt := range op.RequestBody.Value.Content {
					check(fmt.Sprintf("%s request %s", name, ct), mt, openapi3.VisitAsRequest())
				}
			}
			for code, ref := range op.Responses.Map() {
				for ct, mt := range ref.Value.Content {
					check(fmt.Sprintf("%s %s %s", name, code, ct), mt, openapi3.VisitAsResponse())
				}
			}
		}
	}
	if n < 100 {
		t.Errorf("%d examples checked: want at least one per request and response body", n)
	}
}
