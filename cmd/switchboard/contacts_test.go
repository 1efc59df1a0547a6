package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestContactCommands: contact import reports what it did (with progress
// on stderr), contact list and export show the result, escaped for a
// terminal, and each command refuses flags it does not read.
func TestContactCommands(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "sb.db")
	if _, stderr, code := runCLI(t, time.Minute, "account", "create", "--db", db, "--name", "Acme"); code != 0 {
		t.Fatalf("account create: %d %s", code, stderr)
	}
	file := filepath.Join(dir, "book.csv")
	csv := "Name,Phone,Company\nAna \u202eRuiz,(415) 555-6001,Ruiz & Co\nNobody,,\n"
	if err := os.WriteFile(file, []byte(csv), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runCLI(t, time.Minute, "contact", "import", "--db", db, "--account", "1", file)
	if code != 0 || !strings.HasPrefix(out, "created 1, updated 0, skipped 1\n  line 3: no phone number") || !strings.Contains(stderr, "contacts: 2 of 2 rows") {
		t.Fatalf("import: %d\nstdout %q\nstderr %q", code, out, stderr)
	}
	out, _, code = runCLI(t, time.Minute, "contact", "list", "--db", db, "--account", "1", "--q", "ruiz")
	if code != 0 || !strings.Contains(out, `Ana \u202eRuiz`) || !strings.Contains(out, "14155556001") {
		t.Errorf("list: %d %q (the escape must be shown, not sent)", code, out)
	}
	out, _, code = runCLI(t, time.Minute, "contact", "list", "--db", db, "--account", "1", "--json")
	var listed struct{ Contacts []struct{ Name string } }
	if err := json.Unmarshal([]byte(out), &listed); code != 0 || err != nil || len(listed.Contacts) != 1 {
		t.Errorf("list --json: %d %q %v", code, out, err)
	}
	out, _, code = runCLI(t, time.Minute, "contact", "export", "--db", db, "--account", "1", "--format", "vcard")
	if code != 0 || !strings.Contains(out, "TEL;VALUE=uri:tel:+14155556001") {
		t.Errorf("export: %d %q", code, out)
	}
	for _, args := range [][]string{
		{"contact", "import", "--db", db, "--account", "1", "--q", "x", file},
		{"contact", "list", "--db", db, "--account", "1", "--format", "csv"},
		{"contact", "export", "--db", db, "--account", "1", "--q", "x"},
		{"contact", "import", "--db", db, file},
	} {
		if _, _, code := runCLI(t, time.Minute, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
