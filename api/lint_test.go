package api

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestLintRecommended checks what a standard OpenAPI linter's recommended
// rules found wrong in this document once (Redocly's operation-4xx-response,
// no-unused-components and info-license), so that endpoints added later keep
// it clean in `go test`, without Node. CI runs the full rule set with every
// warning an error (.ci/run: redocly lint api/openapi.yaml, redocly.yaml).
func TestLintRecommended(t *testing.T) {
	doc, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if doc.Info.License == nil || doc.Info.License.Name == "" || doc.Info.License.URL == "" {
		t.Error("info.license: want a name and a URL")
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			has4xx := false
			for code := range op.Responses.Map() {
				has4xx = has4xx || strings.HasPrefix(code, "4")
			}
			if !has4xx {
				t.Errorf("%s %s: no 4xx response (every operation says how a client error looks)", method, path)
			}
		}
	}

	// Every component is referenced from somewhere else in the document.
	refs := map[string]bool{}
	for _, m := range regexp.MustCompile(`#/components/([A-Za-z]+)/([A-Za-z0-9._-]+)`).FindAllStringSubmatch(string(YAML()), -1) {
		refs[m[1]+"/"+m[2]] = true
	}
	c := doc.Components
	kinds := map[string][]string{}
	for name := range c.Schemas {
		kinds["schemas"] = append(kinds["schemas"], name)
	}
	for name := range c.Responses {
		kinds["responses"] = append(kinds["responses"], name)
	}
	for name := range c.Parameters {
		kinds["parameters"] = append(kinds["parameters"], name)
	}
	for name := range c.Headers {
		kinds["headers"] = append(kinds["headers"], name)
	}
	for name := range c.RequestBodies {
		kinds["requestBodies"] = append(kinds["requestBodies"], name)
	}
	for name := range c.Examples {
		kinds["examples"] = append(kinds["examples"], name)
	}
	for name := range c.Links {
		kinds["links"] = append(kinds["links"], name)
	}
	for name := range c.Callbacks {
		kinds["callbacks"] = append(kinds["callbacks"], name)
	}
	var unused []string
	for kind, names := range kinds {
		for _, name := range names {
			if !refs[kind+"/"+name] {
				unused = append(unused, "components."+kind+"."+name)
			}
		}
	}
	// Security schemes are used by name in security requirements.
	used := map[string]bool{}
	for _, req := range doc.Security {
		for name := range req {
			used[name] = true
		}
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.Security != nil {
				for _, req := range *op.Security {
					for name := range req {
						used[name] = true
					}
				}
			}
		}
	}
	for name := range c.SecuritySchemes {
		if !used[name] {
			unused = append(unused, "components.securitySchemes."+name)
		}
	}
	slices.Sort(unused)
	if len(unused) > 0 {
		t.Errorf("unused components (reference them or remove them): %s", strings.Join(unused, ", "))
	}
}
