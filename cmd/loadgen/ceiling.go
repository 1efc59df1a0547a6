package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// serveCeilingArg is the hidden first argument that turns loadgen into the
// ceiling server. It is not in the usage text: only loadgen itself runs it.
const serveCeilingArg = "-serve-ceiling"

// serveCeilingMain runs the ceiling server: it listens on a random loopback
// port, prints "host:port" on stdout, and serves until killed. With
// -watch-stdin it also exits when stdin reaches EOF; the parent holds the
// other end of that pipe, so a parent that dies without cleaning up (even
// from SIGKILL) never leaves an orphaned server behind.
func serveCeilingMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loadgen "+serveCeilingArg, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	size := fs.Int("ceiling-bytes", 1024, "")
	status := fs.Int("status", http.StatusOK, "")
	watch := fs.Bool("watch-stdin", false, "")
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(stderr, "loadgen %s: %v\n", serveCeilingArg, err)
		return exitUsage
	}
	if *size < 0 || *status < 200 || *status > 599 {
		fmt.Fprintf(stderr, "loadgen %s: bad -ceiling-bytes or -status\n", serveCeilingArg)
		return exitUsage
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(stderr, "loadgen %s: %v\n", serveCeilingArg, err)
		return exitFailed
	}
	srv := newCeilingServer(*size, *status)
	if _, err := fmt.Fprintln(stdout, ln.Addr().String()); err != nil {
		return exitFailed
	}
	if *watch {
		go func() {
			io.Copy(io.Discard, stdin)
			srv.Close()
		}()
	}
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "loadgen %s: %v\n", serveCeilingArg, err)
		return exitFailed
	}
	return exitOK
}

func newCeilingServer(size, status int) *http.Server {
	return &http.Server{
		Handler:           ceilingHandler(ceilingBody(size), status),
		ReadHeaderTimeout: 10 * time.Second,
	}
}

// ceilingHandler answers every request with the same JSON document. It does
// the least a real JSON handler must do (consume the request, set headers,
// write the body) and nothing else, which makes it the ceiling.
func ceilingHandler(body []byte, status int) http.Handler {
	length := strconv.Itoa(len(body))
	noBody := status == http.StatusNoContent || status == http.StatusNotModified
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Consume a request body as a real handler would (and so that
		// net/http need not drain it before reusing the connection).
		io.Copy(io.Discard, r.Body)
		h := w.Header()
		h.Set("Content-Type", "application/json")
		if noBody {
			w.WriteHeader(status)
			return
		}
		h.Set("Content-Length", length)
		w.WriteHeader(status)
		w.Write(body)
	})
}

// ceilingBody returns a JSON document of exactly size bytes shaped like a
// list endpoint's answer, {"data":[{...},...],"pad":"xxx"}, so the ceiling
// moves about as many bytes per response as the target does. Sizes below the
// smallest such document get {"data":[]}.
func ceilingBody(size int) []byte {
	const head, tail = `{"data":[`, `],"pad":""}`
	if size < len(head)+len(tail) {
		return []byte(`{"data":[]}`)
	}
	b := make([]byte, 0, size)
	b = append(b, head...)
	for i := 1; ; i++ {
		item := fmt.Sprintf(`{"id":%d,"name":"user-%04d","email":"user-%04d@example.com","active":true}`, i, i, i)
		if i > 1 {
			item = "," + item
		}
		if len(b)+len(item)+len(tail) > size {
			break
		}
		b = append(b, item...)
	}
	b = append(b, `],"pad":"`...)
	b = append(b, strings.Repeat("x", size-len(b)-2)...)
	return append(b, `"}`...)
}

// ceilingProc is a running ceiling server process.
type ceilingProc struct {
	Addr  string // host:port on 127.0.0.1
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startCeiling re-executes the current binary as a ceiling server and waits
// for it to print its address.
func startCeiling(size, status int) (*ceilingProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding own executable: %w", err)
	}
	cmd := exec.Command(exe, serveCeilingArg,
		"-ceiling-bytes", strconv.Itoa(size),
		"-status", strconv.Itoa(status),
		"-watch-stdin")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", exe, err)
	}
	p := &ceilingProc{cmd: cmd, stdin: stdin}

	type line struct {
		s   string
		err error
	}
	ch := make(chan line, 1)
	go func() {
		s, err := bufio.NewReader(stdout).ReadString('\n')
		ch <- line{s, err}
	}()
	select {
	case l := <-ch:
		addr := strings.TrimSpace(l.s)
		if _, _, err := net.SplitHostPort(addr); l.err != nil || err != nil {
			p.Stop()
			return nil, fmt.Errorf("ceiling process did not report an address (got %q)", addr)
		}
		p.Addr = addr
		return p, nil
	case <-time.After(10 * time.Second):
		p.Stop()
		return nil, errors.New("ceiling process did not start within 10s")
	}
}

// Stop kills the ceiling process and waits for it to exit.
func (p *ceilingProc) Stop() {
	p.stdin.Close()
	p.cmd.Process.Kill()
	p.cmd.Wait() // "signal: killed" is the expected outcome
}
