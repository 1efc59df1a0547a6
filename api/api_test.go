package api

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

func TestDocumentIsValid(t *testing.T) {
	doc, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(t.Context()); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	if doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi = %q, want 3.0.3", doc.OpenAPI)
	}
	if doc.Info.Version != "1.0.0" {
		t.Errorf("info.version = %q, want 1.0.0", doc.Info.Version)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "/api/public/v1" {
		t.Errorf("servers = %v, want exactly /api/public/v1", doc.Servers)
	}
}

// TestJSONRoundTrip checks that the served JSON is a valid document equal to
// the YAML one.
func TestJSONRoundTrip(t *testing.T) {
	b, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatal("JSON() is not valid JSON")
	}
	fromJSON, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatalf("loading JSON(): %v", err)
	}
	if err := fromJSON.Validate(t.Context()); err != nil {
		t.Fatalf("JSON() is not a valid OpenAPI document: %v", err)
	}
	again, err := json.Marshal(fromJSON)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, again) {
		t.Error("JSON() does not round-trip through the loader unchanged")
	}
	b2, _ := JSON()
	if &b[0] != &b2[0] {
		t.Error("JSON() is recomputed on every call")
	}
}

// TestConventions checks rules that every operation of the document follows.
func TestConventions(t *testing.T) {
	doc, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			name := method + " " + path
			public := op.Security != nil && len(*op.Security) == 0
			want := []string{"500"}
			// x-any-credential: any valid credential, no scope (GET /me), so no 403.
			anyCredential := op.Extensions["x-any-credential"] == true
			switch {
			case anyCredential:
				want = append(want, "401")
				if op.Extensions["x-required-scope"] != nil || op.Responses.Value("403") != nil {
					t.Errorf("%s: x-any-credential with a scope or a 403", name)
				}
			case !public:
				want = append(want, "401", "403")
				if op.Extensions["x-required-scope"] == nil {
					t.Errorf("%s: no x-required-scope", name)
				}
			}
			if len(op.Parameters) > 0 || op.RequestBody != nil {
				want = append(want, "400")
			}
			if op.RequestBody != nil {
				want = append(want, "413")
			}
			for _, code := range want {
				if op.Responses.Value(code) == nil {
					t.Errorf("%s: does not list %s", name, code)
				}
			}
			for code, ref := range op.Responses.Map() {
				resp := ref.Value
				h := resp.Headers["X-Request-Id"]
				if h == nil || h.Ref != "#/components/headers/XRequestId" {
					t.Errorf("%s %s: X-Request-Id header does not reference the component", name, code)
				}
				if strings.HasPrefix(code, "4") || strings.HasPrefix(code, "5") {
					mt := resp.Content.Get("application/json")
					if mt == nil || mt.Schema == nil || mt.Schema.Ref != "#/components/schemas/Error" {
						t.Errorf("%s %s: error response is not the Error envelope", name, code)
					}
				}
			}
		}
	}
	for name, ref := range doc.Components.Responses {
		if h := ref.Value.Headers["X-Request-Id"]; h == nil || h.Ref != "#/components/headers/XRequestId" {
			t.Errorf("components.responses.%s: X-Request-Id header does not reference the component", name)
		}
	}
	typ := doc.Components.Schemas["Error"].Value.Properties["error"].Value.Properties["type"].Value
	if len(typ.Enum) != 0 {
		t.Error("Error.error.type must stay open (no enum): new values may appear")
	}
}
