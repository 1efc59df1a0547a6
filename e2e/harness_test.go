package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"switchboard/internal/apitest"
)

// binary is the switchboard executable TestMain builds once from the
// module in root; tests reach it through switchboardBinary.
var binary, root string

var sourcesRead sync.Once

// switchboardBinary returns the binary. Its first call in a run reads the
// binary's sources: go test reuses a cached result while the files the tests
// read are unchanged, and the sources are read by the go build child (and
// before the tests start), so otherwise a change to the server would be
// reported with a stale pass.
func switchboardBinary() string {
	sourcesRead.Do(func() {
		if err := readSources(root); err != nil {
			panic(err)
		}
	})
	return binary
}

// Time limits. A CLI command or server start that takes longer is hung, not slow.
const (
	cliTimeout   = 30 * time.Second
	startTimeout = 15 * time.Second
	// The demo seeds its data, sending messages and waiting for their
	// receipts, before it prints anything: on a loaded machine (CI beside
	// other suites) that alone has taken more than startTimeout.
	demoStartTimeout = 60 * time.Second
	stopTimeout      = 10 * time.Second
	httpTimeout      = 10 * time.Second
)

func TestMain(m *testing.M) { os.Exit(buildAndRun(m)) }

func buildAndRun(m *testing.M) int {
	// The tests spend their time waiting for child processes, not computing:
	// unless -test.parallel was given, run more of them at once than the
	// default GOMAXPROCS.
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		flag.Set("test.parallel", "8")
	}
	var err error
	root, err = moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "switchboard-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "switchboard")
	build := exec.Command("go", "build", "-o", binary, "./cmd/switchboard")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build ./cmd/switchboard in %s: %v\n%s", root, err, out)
		return 1
	}
	return m.Run()
}

// readSources reads the module's Go files and go.mod/go.sum, the inputs of
// the binary under test.
func readSources(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if name := d.Name(); !d.IsDir() && (strings.HasSuffix(name, ".go") || name == "go.mod" || name == "go.sum") {
			_, err = os.ReadFile(path)
		}
		return err
	})
}

// moduleRoot walks up from the working directory (the package directory under
// go test) to the directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// childEnv is the environment for the binary: ours without SWITCHBOARD_*
// variables, so a developer's settings cannot change what is tested.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SWITCHBOARD_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// run runs the binary with args exactly as given and returns what it printed
// and its exit status.
func run(t *testing.T, args ...string) (stdout, stderr string, exit int) {
	t.Helper()
	return runEnv(t, childEnv(), args...)
}

// runEnv is run with the environment env.
func runEnv(t *testing.T, env []string, args ...string) (stdout, stderr string, exit int) {
	t.Helper()
	cmd := exec.Command(switchboardBinary(), args...)
	cmd.Env = env
	cmd.Dir = t.TempDir() // whatever it writes next to itself stays out of the source tree
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatalf("start switchboard %s: %v", strings.Join(args, " "), err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(cliTimeout):
		cmd.Process.Kill()
		<-done
		t.Fatalf("switchboard %s: still running after %v\nstderr: %s", strings.Join(args, " "), cliTimeout, errOut.String())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		exit = ee.ExitCode()
	default:
		t.Fatalf("switchboard %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), errOut.String(), exit
}

// cliArgs puts --db and --json right after the command words (the leading
// arguments that are not flags), where every subcommand reads them.
func cliArgs(db string, args []string) []string {
	n := 0
	for n < len(args) && !strings.HasPrefix(args[n], "-") {
		n++
	}
	full := append([]string{}, args[:n]...)
	full = append(full, "--db", db, "--json")
	return append(full, args[n:]...)
}

// cli runs "switchboard <args> --db db --json" and returns its stdout and exit
// status. Whatever it printed on stderr is logged.
func cli(t *testing.T, db string, args ...string) (stdout string, exit int) {
	t.Helper()
	stdout, stderr, exit := run(t, cliArgs(db, args)...)
	if stderr != "" {
		t.Logf("switchboard %s: stderr: %s", strings.Join(args, " "), stderr)
	}
	return stdout, exit
}

// cliJSON runs a CLI command that must succeed and decodes its --json output,
// which must be exactly one JSON object, into v.
func cliJSON(t *testing.T, db string, v any, args ...string) {
	t.Helper()
	stdout, stderr, exit := run(t, cliArgs(db, args)...)
	if exit != 0 {
		t.Fatalf("switchboard %s: exit status got %d, want 0\nstderr: %s", strings.Join(args, " "), exit, stderr)
	}
	if err := decodeOne(stdout, v); err != nil {
		t.Fatalf("switchboard %s --json: stdout is not one JSON object: %v\nstdout: %s", strings.Join(args, " "), err, stdout)
	}
}

// decodeOne decodes s, which must hold exactly one JSON object, into v.
func decodeOne(s string, v any) error {
	if !strings.HasPrefix(strings.TrimSpace(s), "{") {
		return errors.New("does not start with {")
	}
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more than one JSON value")
	}
	return nil
}

// lineWriter keeps everything a process writes and lets tests wait for a line.
type lineWriter struct {
	mu      sync.Mutex
	all     bytes.Buffer
	lines   []string // complete lines so far
	partial []byte
	changed chan struct{} // closed and replaced at every new line
}

func newLineWriter() *lineWriter { return &lineWriter{changed: make(chan struct{})} }

func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all.Write(b)
	w.partial = append(w.partial, b...)
	added := false
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		w.lines = append(w.lines, string(w.partial[:i]))
		w.partial = w.partial[i+1:]
		added = true
	}
	if added {
		close(w.changed)
		w.changed = make(chan struct{})
	}
	return len(b), nil
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.all.String()
}

// find returns the first line at or after index from that match accepts, and
// the channel that is closed when more lines arrive.
func (w *lineWriter) find(from int, match func(string) bool) (line string, next int, found bool, changed <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := from; i < len(w.lines); i++ {
		if match(w.lines[i]) {
			return w.lines[i], i + 1, true, nil
		}
	}
	return "", len(w.lines), false, w.changed
}

// process is a long-running switchboard (serve or demo), stopped with SIGTERM
// when the test ends.
type process struct {
	t              *testing.T
	name           string
	cmd            *exec.Cmd
	stdout, stderr *lineWriter
	done           chan struct{} // closed when the process has exited
	err            error         // the result of Wait, valid once done is closed
	// afterStop, if set, checks the output of a process that stopped cleanly.
	afterStop func()
	// startWithin, if set, replaces startTimeout for waitLine.
	startWithin time.Duration
	stopOnce    sync.Once // a test may stop it before its cleanup does
}

func start(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	p := &process{
		t:      t,
		name:   "switchboard " + strings.Join(args, " "),
		cmd:    exec.Command(switchboardBinary(), args...),
		stdout: newLineWriter(),
		stderr: newLineWriter(),
		done:   make(chan struct{}),
	}
	p.cmd.Env = env
	p.cmd.Dir = t.TempDir() // serve keeps media in ./switchboard-media by default
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.stop)
	return p
}

// waitLine waits for a line of w that match accepts. It fails the test if the
// process exits or nothing matches within startTimeout (or p.startWithin).
func (p *process) waitLine(w *lineWriter, what string, match func(string) bool) string {
	p.t.Helper()
	within := startTimeout
	if p.startWithin > 0 {
		within = p.startWithin
	}
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	next := 0
	for {
		line, n, found, changed := w.find(next, match)
		if found {
			return line
		}
		next = n
		select {
		case <-changed:
		case <-p.done:
			// Output is complete once Wait has returned: look once more.
			if line, _, found, _ := w.find(next, match); found {
				return line
			}
			p.t.Fatalf("%s exited (%v) before printing %s", p.name, p.err, what)
		case <-deadline.C:
			p.t.Fatalf("%s: %s did not appear within %v", p.name, what, within)
		}
	}
}

// stop sends SIGTERM and requires a clean exit (status 0) within stopTimeout.
// If the test failed, it logs everything the process wrote on stderr. Only the
// first call does anything.
func (p *process) stop() { p.stopOnce.Do(p.stopNow) }

func (p *process) stopNow() {
	t := p.t
	select {
	case <-p.done:
		t.Errorf("%s: exited before the test ended: %v", p.name, p.err)
	default:
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("%s: SIGTERM: %v", p.name, err)
		}
		select {
		case <-p.done:
			if p.err != nil {
				t.Errorf("%s: after SIGTERM: got %v, want exit status 0", p.name, p.err)
			} else if p.afterStop != nil {
				p.afterStop()
			}
		case <-time.After(stopTimeout):
			t.Errorf("%s: still running %v after SIGTERM, want a graceful exit", p.name, stopTimeout)
			p.cmd.Process.Kill()
			<-p.done
		}
	}
	if t.Failed() {
		t.Logf("%s: stderr:\n%s", p.name, p.stderr.String())
	}
}

// startServer starts "switchboard serve" on a free port over db and returns
// its base URL (http://host:port). The server is stopped with SIGTERM when the
// test ends and must exit 0.
func startServer(t *testing.T, db string, extraArgs ...string) (baseURL string) {
	t.Helper()
	baseURL, _ = startServerAddrs(t, db, extraArgs...)
	return baseURL
}

// startServerAddrs is startServer that also returns the private metrics
// listener's base URL ("" unless extraArgs give --metrics-addr).
func startServerAddrs(t *testing.T, db string, extraArgs ...string) (baseURL, metricsURL string) {
	t.Helper()
	_, baseURL, metricsURL = startServerProcess(t, db, extraArgs...)
	return baseURL, metricsURL
}

// startServerProcess is startServerAddrs that also returns the process, for
// a test that stops it (p.stop) or kills it before it ends.
func startServerProcess(t *testing.T, db string, extraArgs ...string) (p *process, baseURL, metricsURL string) {
	t.Helper()
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--log-format", "json", "--db", db}, extraArgs...)
	p = start(t, childEnv(), args...)
	var addr, metricsAddr string
	p.waitLine(p.stderr, `the "serving" log line`, func(line string) bool {
		var rec struct {
			Msg         string `json:"msg"`
			Addr        string `json:"addr"`
			MetricsAddr string `json:"metrics_addr"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "serving" || rec.Addr == "" {
			return false
		}
		addr, metricsAddr = rec.Addr, rec.MetricsAddr
		return true
	})
	p.afterStop = func() {
		if _, _, found, _ := p.stderr.find(0, logMsg("stopped")); !found {
			t.Errorf("%s: exited 0 after SIGTERM but never logged \"stopped\" (graceful shutdown)", p.name)
		}
	}
	if metricsAddr != "" {
		metricsURL = "http://" + metricsAddr
	}
	return p, "http://" + addr, metricsURL
}

// logMsg matches a JSON log line whose msg is msg.
func logMsg(msg string) func(string) bool {
	return func(line string) bool {
		var rec struct {
			Msg string `json:"msg"`
		}
		return json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == msg
	}
}

// response is an HTTP response with its body read.
type response struct {
	status int
	header http.Header
	body   []byte
}

// request sends method url with "Authorization: <authorization>" (none when
// empty) through apitest's validating client, which checks every response
// under /api/public/v1 against api/openapi.yaml.
func request(t *testing.T, method, url, authorization string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	c := apitest.Client(t)
	c.Timeout = httpTimeout
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: body}
}

// getData GETs url with an API key, requires 200 and decodes the data of the
// success envelope into a T.
func getData[T any](t *testing.T, url, key string) T {
	t.Helper()
	r := request(t, http.MethodGet, url, "Bearer "+key)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: status got %d, want 200\nbody: %s", url, r.status, r.body)
	}
	var env struct {
		Data *T `json:"data"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil || env.Data == nil {
		t.Fatalf("GET %s: body is not {\"data\": …}: %v\nbody: %s", url, err, r.body)
	}
	return *env.Data
}
