package api

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedClientIsCurrent runs the pinned generator (the go.mod tool
// oapi-codegen) on openapi.yaml, as `go generate ./api/` does, into a
// temporary directory and fails if the committed client/client.gen.go
// differs: the client must be regenerated whenever the document changes.
// It lives here, not in the client's module, so that the client's go.mod
// needs no generator.
func TestGeneratedClientIsCurrent(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed to run the generator: %v", err)
	}
	out := filepath.Join(t.TempDir(), "client.gen.go")
	cmd := exec.Command("go", "tool", "oapi-codegen", "-config", "../client/oapi-codegen.yaml", "-o", out, "openapi.yaml")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go tool oapi-codegen: %v\n%s", err, msg)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("../client/client.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Fatalf("client/client.gen.go differs from what the generator makes of api/openapi.yaml (first difference at line %d): run `go generate ./api/` and commit the result", firstDiffLine(fresh, committed))
	}
}

func firstDiffLine(a, b []byte) int {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}
