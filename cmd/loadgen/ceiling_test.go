package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for loadgen when startCeiling
// re-executes os.Executable() with -serve-ceiling, so the subprocess test
// exercises the real re-exec path without building anything.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == serveCeilingArg {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestCeilingBody(t *testing.T) {
	for _, size := range []int{0, 5, 19, 20, 21, 100, 512, 1000, 1024, 4096, 100000} {
		b := ceilingBody(size)
		var doc struct {
			Data []map[string]any `json:"data"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("size %d: invalid JSON %q: %v", size, b, err)
		}
		if size >= 20 && len(b) != size {
			t.Errorf("size %d: got %d bytes", size, len(b))
		}
		if size < 20 && string(b) != `{"data":[]}` {
			t.Errorf("size %d: got %q, want the minimal document", size, b)
		}
		if size >= 1024 && len(doc.Data) == 0 {
			t.Errorf("size %d: no items, want a list-shaped document", size)
		}
	}
}

// TestCeilingHandler checks the handler in-process.
func TestCeilingHandler(t *testing.T) {
	srv := httptest.NewServer(newCeilingServer(300, http.StatusCreated).Handler)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/users?page=2", "application/json", strings.NewReader(`{"x":1}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || len(body) != 300 ||
		resp.Header.Get("Content-Type") != "application/json" || resp.ContentLength != 300 {
		t.Errorf("status %d, %d bytes, content-type %q, length %d",
			resp.StatusCode, len(body), resp.Header.Get("Content-Type"), resp.ContentLength)
	}

	noContent := httptest.NewServer(newCeilingServer(300, http.StatusNoContent).Handler)
	defer noContent.Close()
	resp, err = http.Get(noContent.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("status %d, want 204", resp.StatusCode)
	}
}

// TestCeilingSubprocess starts the ceiling as a separate process, as a real
// run does, and checks that it serves and that Stop really stops it.
func TestCeilingSubprocess(t *testing.T) {
	p, err := startCeiling(512, http.StatusOK)
	if err != nil {
		t.Fatal(err)
	}
	if p.cmd.Process.Pid == os.Getpid() {
		t.Fatal("ceiling runs in the test process")
	}
	url := fmt.Sprintf("http://%s/users", p.Addr)
	resp, err := http.Get(url)
	if err != nil {
		p.Stop()
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(body) != 512 || !json.Valid(body) {
		t.Errorf("status %d, %d bytes, valid JSON %v", resp.StatusCode, len(body), json.Valid(body))
	}

	p.Stop()
	if _, err := net.DialTimeout("tcp", p.Addr, time.Second); err == nil {
		t.Errorf("ceiling still accepts connections on %s after Stop", p.Addr)
	}
}

// TestCeilingExitsWithParent checks the orphan guard: closing the stdin
// pipe, which is what the parent dying does, makes the server exit.
func TestCeilingExitsWithParent(t *testing.T) {
	p, err := startCeiling(64, http.StatusOK)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop() // harmless once the process has exited
	p.stdin.Close()

	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("ceiling exited with %v, want a clean exit", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("ceiling did not exit after its stdin was closed")
	}
}
