package client

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestGeneratedClientIsCurrent runs the pinned generator (the go.mod tool
// oapi-codegen) on api/openapi.yaml into a temporary directory and fails if
// the committed client.gen.go differs: the client must be regenerated
// (`go generate ./client/`) whenever the document changes.
func TestGeneratedClientIsCurrent(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed to run the generator: %v", err)
	}
	cfg, err := os.ReadFile("oapi-codegen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The configuration names the output file; point it into the
	// temporary directory, everything else as committed.
	out := filepath.Join(t.TempDir(), "client.gen.go")
	outLine := regexp.MustCompile(`(?m)^output: .*$`)
	if !outLine.Match(cfg) {
		t.Fatal("oapi-codegen.yaml has no output: line")
	}
	tmpCfg := filepath.Join(t.TempDir(), "oapi-codegen.yaml")
	if err := os.WriteFile(tmpCfg, outLine.ReplaceAll(cfg, []byte("output: "+out)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "tool", "oapi-codegen", "-config", tmpCfg, "../api/openapi.yaml")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go tool oapi-codegen: %v\n%s", err, msg)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("client.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Fatalf("client/client.gen.go differs from what the generator makes of api/openapi.yaml (first difference at line %d): run `go generate ./client/` and commit the result", firstDiffLine(fresh, committed))
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
