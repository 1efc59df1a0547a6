package api

// The Go client's generated code (client/client.gen.go, module
// github.com/switchboard-server/switchboard/client) is made from this
// document by the generator pinned in this module's go.mod (tool), so the
// client's own go.mod needs neither: run `go generate ./api/` from the
// repository's root. TestGeneratedClientIsCurrent fails while the committed
// file differs.
//go:generate go tool oapi-codegen -config ../client/oapi-codegen.yaml -o ../client/client.gen.go openapi.yaml
