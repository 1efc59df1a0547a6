// Package smpptest runs an SMSC written by others for the tests of SMPP
// clients: smsc.js, a script on node-smpp (e2e/node_modules, installed by
// `npm ci --prefix e2e`), driven by JSON lines on its stdin and reporting
// what it decoded as JSON lines on its stdout. It is test support: only
// tests import it.
package smpptest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Env switches the tests against node-smpp on; CI sets it.
const Env = "SWITCHBOARD_TEST_SMPP"

// SMSC is smsc.js running under node.
type SMSC struct {
	Addr   string // host:port it listens on
	stdin  io.WriteCloser
	events chan map[string]any
}

// Start runs the SMSC for t, or skips t unless Env is "1" (then a missing
// node or node-smpp fails it). It stops when t ends.
func Start(t *testing.T) *SMSC {
	t.Helper()
	if os.Getenv(Env) != "1" {
		t.Skipf("set %s=1 to run against node-smpp, an independent SMSC (needs node and `npm ci --prefix e2e`)", Env)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("%s=1 but node is not installed: %v", Env, err)
	}
	_, self, _, _ := runtime.Caller(0)
	dir := filepath.Dir(self)
	modules := filepath.Join(dir, "..", "..", "..", "..", "e2e", "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "smpp", "package.json")); err != nil {
		t.Fatalf("%s=1 but node-smpp is not installed (run `npm ci --prefix e2e`): %v", Env, err)
	}
	cmd := exec.Command(node, filepath.Join(dir, "smsc.js"))
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	cmd.Stderr = testWriter{t}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &SMSC{stdin: stdin, events: make(chan map[string]any, 100)}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(s.events)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ev map[string]any
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Errorf("node SMSC wrote %q: %v", sc.Text(), err)
				continue
			}
			s.events <- ev
		}
	}()
	t.Cleanup(func() {
		stdin.Close() // the script exits when its input ends
		for range s.events {
		}
		<-readDone
		if err := cmd.Wait(); err != nil {
			t.Errorf("node SMSC: %v", err)
		}
	})
	s.Addr = fmt.Sprintf("127.0.0.1:%v", s.Next(t, "listening")["port"])
	return s
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Logf("node: %s", strings.TrimSpace(string(b)))
	return len(b), nil
}

// Do sends the SMSC a command (see smsc.js: receipt, inbound, throttle,
// enquire, drop).
func (s *SMSC) Do(t *testing.T, cmd map[string]any) {
	t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := s.stdin.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
}

// Next returns the SMSC's next event of the kind, skipping others and
// failing on an "error" event or after 20 s.
func (s *SMSC) Next(t *testing.T, kind string) map[string]any {
	t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("node SMSC exited while waiting for %q", kind)
			}
			if ev["event"] == "error" {
				t.Fatalf("node SMSC: %v", ev["error"])
			}
			if ev["event"] == kind {
				return ev
			}
		case <-timeout.C:
			t.Fatalf("node SMSC sent no %q", kind)
		}
	}
}
