package webapp

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// appBudget is what the app's script and style may weigh, gzipped file by
// file as the server sends them (issue 25's budget, kept by issue 33).
const appBudget = 150 * 1024

func TestAppScriptAndStyleWithinBudget(t *testing.T) {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		t.Fatal(err)
	}
	total, files := 0, 0
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".js") || strings.HasSuffix(p, ".css")) {
			return err
		}
		body, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(body)
		zw.Close()
		total += buf.Len()
		files++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the app's script and style: %d files, %.1f KB gzipped", files, float64(total)/1024)
	if total > appBudget {
		t.Errorf("the app's script and style weigh %.1f KB gzipped, over the budget of %d KB", float64(total)/1024, appBudget/1024)
	}
}

// The screens are built from small modules: no top-level function of the
// app's script runs over maxFunctionLines (a screen that is one long
// closure is split into parts), and no script leaves a hook on window for
// tests (they drive the real page).
const maxFunctionLines = 150

var topLevelFunction = regexp.MustCompile(`^(export )?(async )?function (\w+)`)

func TestAppScriptIsSmallFunctionsWithoutTestHooks(t *testing.T) {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		t.Fatal(err)
	}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") {
			return err
		}
		body, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		if bytes.Contains(body, []byte("window.__")) {
			t.Errorf("%s sets or reads a window.__ hook: tests drive the real page instead", p)
		}
		var name string
		start := 0
		sc := bufio.NewScanner(bytes.NewReader(body))
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			if m := topLevelFunction.FindStringSubmatch(line); m != nil {
				name, start = m[3], n
			} else if line == "}" && name != "" {
				if lines := n - start + 1; lines > maxFunctionLines {
					t.Errorf("%s: function %s is %d lines long, want at most %d (build it from smaller parts)", p, name, lines, maxFunctionLines)
				}
				name = ""
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
}
