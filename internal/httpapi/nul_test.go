package httpapi_test

import (
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"switchboard/api"
)

// nul is a text with the NUL character in it, which PostgreSQL cannot store
// in any text column (SQLite can): the API refuses it everywhere, on both
// engines alike.
const nul = "a\x00b"

// nulInput is one text input of one operation, and a request holding a NUL
// in it (and nothing else there).
type nulInput struct {
	method, path string
	// field is what the answer must name: a JSON path ("to[0]") or a
	// parameter ("query parameter limit").
	field string
	// query and body of the request; path parameters are filled in by the
	// test, each from pathNUL when it is the input.
	query   string
	body    string
	pathNUL string // the path parameter holding the NUL
}

// nulInputs walks the OpenAPI document: every string a request body's
// schema reaches (through objects, arrays, maps and oneOf/anyOf/allOf),
// every query parameter and every path parameter of every operation. A field
// added to the document is in the walk without a change here.
func nulInputs(t *testing.T) []nulInput {
	t.Helper()
	doc, err := api.Load()
	must(t, err)
	var out []nulInput
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			params := append(slices.Clone(item.Parameters), op.Parameters...)
			for _, p := range params {
				switch p.Value.In {
				case "query":
					out = append(out, nulInput{method: method, path: path, field: "query parameter " + p.Value.Name,
						query: url.Values{p.Value.Name: {nul}}.Encode()})
				case "path":
					out = append(out, nulInput{method: method, path: path, field: "path parameter " + p.Value.Name, pathNUL: p.Value.Name})
				}
			}
			if op.RequestBody == nil || op.RequestBody.Value.Content.Get("application/json") == nil {
				continue
			}
			media := op.RequestBody.Value.Content.Get("application/json")
			seen := map[string]bool{}
			for _, s := range textsIn(media.Schema, 0) {
				if seen[s.path] {
					continue // the same field in two alternatives of a oneOf
				}
				seen[s.path] = true
				b, err := json.Marshal(overlay(example(media), s.value))
				must(t, err)
				out = append(out, nulInput{method: method, path: path, field: `field "` + s.path + `"`, body: string(b)})
			}
		}
	}
	return out
}

// example is the media type's example request, the first of its
// examples by name if it has several, or nil.
func example(media *openapi3.MediaType) any {
	if media.Example != nil || len(media.Examples) == 0 {
		return media.Example
	}
	names := slices.Sorted(maps.Keys(media.Examples))
	return media.Examples[names[0]].Value.Value
}

// overlay is base with v written over it: the document's example request
// with one field holding the NUL, so that without it the request would be
// one the operation takes (and, before, went on to store).
func overlay(base, v any) any {
	switch v := v.(type) {
	case map[string]any:
		b, ok := base.(map[string]any)
		if !ok {
			return v
		}
		out := maps.Clone(b)
		for k, vk := range v {
			out[k] = overlay(b[k], vk)
		}
		return out
	case []any:
		b, ok := base.([]any)
		if !ok || len(b) == 0 {
			return v
		}
		out := slices.Clone(b)
		out[0] = overlay(b[0], v[0])
		return out
	}
	return v
}

// textAt is a string a schema reaches: its path as the API's errors name
// it, and a value of the schema holding nul there and nothing else.
type textAt struct {
	path  string
	value any
}

func textsIn(ref *openapi3.SchemaRef, depth int) []textAt {
	if ref == nil || ref.Value == nil || depth > 10 {
		return nil
	}
	s := ref.Value
	var out []textAt
	for _, alts := range []openapi3.SchemaRefs{s.OneOf, s.AnyOf, s.AllOf} {
		for _, alt := range alts {
			out = append(out, textsIn(alt, depth+1)...)
		}
	}
	switch {
	case s.Type.Is("string"):
		out = append(out, textAt{"", nul})
	case s.Type.Is("array"):
		for _, in := range textsIn(s.Items, depth+1) {
			out = append(out, textAt{joinPath("[0]", in.path), []any{in.value}})
		}
	case s.Type.Is("object") || len(s.Properties) > 0:
		for name, prop := range s.Properties {
			for _, in := range textsIn(prop, depth+1) {
				out = append(out, textAt{joinPath(name, in.path), map[string]any{name: in.value}})
			}
		}
		if ap := s.AdditionalProperties.Schema; ap != nil {
			for _, in := range textsIn(ap, depth+1) {
				out = append(out, textAt{joinPath("k", in.path), map[string]any{"k": in.value}})
			}
		}
	}
	return out
}

// joinPath appends rest, a path inside the value at head, to head.
func joinPath(head, rest string) string {
	if rest == "" || strings.HasPrefix(rest, "[") {
		return head + rest
	}
	return head + "." + rest
}

// TestNULInEveryTextInputIs400 sends a NUL in each text input of every
// operation the document describes: 400 invalid_request naming the input,
// on both engines. Before, PostgreSQL answered 500 (invalid byte sequence
// for encoding "UTF8": 0x00) for each input it went on to store, while
// SQLite stored the NUL.
func TestNULInEveryTextInputIs400(t *testing.T) {
	inputs := nulInputs(t)
	bodies := 0
	for _, in := range inputs {
		if in.body != "" {
			bodies++
		}
	}
	// The document has some 80 body fields and as many parameters; a walk
	// finding far fewer has stopped looking somewhere.
	if bodies < 60 || len(inputs) < 150 {
		t.Fatalf("%d inputs, %d in bodies: the walk of the document misses some", len(inputs), bodies)
	}
	forEachStrict(t, func(t *testing.T, f *strictFixture) {
		for _, in := range inputs {
			values := map[string]string{}
			if in.pathNUL != "" {
				values[in.pathNUL] = url.PathEscape(nul)
			}
			path := f.fill(in.path, values)
			if in.query != "" {
				path += "?" + in.query
			}
			status, _, b := f.do(t, strings.ToUpper(in.method), path, f.keys["acme"], in.body)
			wantError(t, in.method+" "+in.path+" with a NUL in "+in.field+" "+in.body, status, b, 400, "invalid_request", in.field+" holds the NUL character")
		}
	})
}
