// Package api holds the OpenAPI 3.0 description of Switchboard's public API
// (openapi.yaml in this directory), embedded in the binary.
//
// The document is the machine-readable form of the contract in
// spec/public-api.md. The server serves it as JSON at
// /api/public/v1/openapi.json, and the tests validate every response they see
// against it (see internal/apitest).
package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

//go:embed openapi.yaml
var openapiYAML []byte

// YAML returns the OpenAPI document as written. The caller must not modify
// the returned slice.
func YAML() []byte { return openapiYAML }

// JSON returns the OpenAPI document converted to JSON. It is computed once;
// the caller must not modify the returned slice.
func JSON() ([]byte, error) { return jsonOnce() }

var jsonOnce = sync.OnceValues(func() ([]byte, error) {
	doc, err := Load()
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("api: encoding OpenAPI document as JSON: %w", err)
	}
	return b, nil
})

// Load parses the embedded document with kin-openapi and resolves its
// references. Each call returns a fresh *openapi3.T that the caller may
// modify. It does not validate the document; call Validate on the result.
func Load() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(openapiYAML)
	if err != nil {
		return nil, fmt.Errorf("api: loading OpenAPI document: %w", err)
	}
	return doc, nil
}
