package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Why not net/http's client: its Transport runs a read and a write goroutine
// per connection and hands every request across three goroutines. At tens of
// thousands of requests/s on a 2-core machine that made loadgen cost about as
// much CPU as the trivial ceiling it measures, which took cores from the
// server under test and added scheduling delay to every latency it recorded.
// Here each worker owns one keep-alive connection, writes request bytes built
// once per run, and parses the response on its own goroutine.

// request is the serialized request every worker of a run sends.
type request struct {
	addr   string      // host:port to dial
	tls    *tls.Config // nil for http://
	wire   []byte      // request line, headers and body
	noBody bool        // HEAD: responses carry no body whatever they say
}

// newWireRequest serializes cfg's request once. Header values come from the
// command line and were checked there; they are re-checked here because a CR
// or LF in one would split the request.
func newWireRequest(cfg *Config) (*request, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("%q: want an absolute http:// or https:// URL", cfg.URL)
	}
	if cfg.Method == "" || !isToken(cfg.Method) {
		return nil, fmt.Errorf("method %q is not a valid HTTP method", cfg.Method)
	}
	r := &request{addr: u.Host, noBody: cfg.Method == http.MethodHead}
	if u.Port() == "" {
		r.addr = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	if u.Scheme == "https" {
		r.tls = &tls.Config{ServerName: u.Hostname()}
	}
	host := u.Host
	if cfg.Host != "" {
		host = cfg.Host
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: switchboard-loadgen\r\n", cfg.Method, u.RequestURI(), host)
	for name, values := range cfg.Header {
		for _, v := range values {
			if !isToken(name) || bytes.ContainsAny([]byte(v), "\r\n\x00") {
				return nil, fmt.Errorf("header %q: invalid name or value", name)
			}
			fmt.Fprintf(&b, "%s: %s\r\n", name, v)
		}
	}
	if len(cfg.Body) > 0 || cfg.Method == http.MethodPost || cfg.Method == http.MethodPut || cfg.Method == http.MethodPatch {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(cfg.Body))
	}
	b.WriteString("\r\n")
	b.Write(cfg.Body)
	r.wire = b.Bytes()
	return r, nil
}

// client is one worker's connection. It survives from the warmup into the
// measurement, like a pooled keep-alive connection would.
type client struct {
	req     *request
	timeout time.Duration // per exchange; 0 means none

	mu     sync.Mutex // guards conn and closed against interrupt
	conn   net.Conn
	closed bool
	br     *bufio.Reader
}

// response is what do reports about one exchange.
type response struct {
	status int
	bytes  int64  // body bytes
	sample []byte // the start of the body when the status was unexpected
}

// do performs one exchange on the worker's connection, dialling if needed.
// After any error the connection is dropped; it is never retried, because a
// request that may have reached the server (a POST that sends a message) must
// not be sent twice.
func (c *client) do(wantSample func(status int) bool) (response, error) {
	conn, err := c.connection()
	if err != nil {
		return response{}, err
	}
	if c.timeout > 0 {
		conn.SetDeadline(time.Now().Add(c.timeout))
	}
	if _, err := conn.Write(c.req.wire); err != nil {
		c.drop()
		return response{}, err
	}
	resp, keep, err := c.readResponse(wantSample)
	if err != nil {
		c.drop()
		return response{}, err
	}
	if !keep {
		c.drop()
	}
	return resp, nil
}

func (c *client) connection() (net.Conn, error) {
	c.mu.Lock()
	conn, closed := c.conn, c.closed
	c.mu.Unlock()
	if closed {
		return nil, errInterrupted
	}
	if conn != nil {
		return conn, nil
	}
	d := net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	conn, err := d.Dial("tcp", c.req.addr)
	if err != nil {
		return nil, err
	}
	if c.req.tls != nil {
		tc := tls.Client(conn, c.req.tls)
		if c.timeout > 0 {
			tc.SetDeadline(time.Now().Add(c.timeout))
		}
		if err := tc.Handshake(); err != nil {
			conn.Close()
			return nil, err
		}
		conn = tc
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		conn.Close()
		return nil, errInterrupted
	}
	c.conn = conn
	if c.br == nil {
		c.br = bufio.NewReaderSize(conn, 64<<10)
	} else {
		c.br.Reset(conn)
	}
	return conn, nil
}

var errInterrupted = errors.New("interrupted")

func (c *client) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// interrupt unblocks a worker waiting on the network and stops it dialling
// again; it is called once when the run's context ends.
func (c *client) interrupt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.conn != nil {
		c.conn.SetDeadline(time.Unix(1, 0))
	}
}

// close releases the connection at the end of a run.
func (c *client) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// readResponse reads one HTTP/1.x response, skipping interim 1xx responses.
// keep reports whether the connection can carry another request.
func (c *client) readResponse(wantSample func(int) bool) (resp response, keep bool, err error) {
	for {
		line, err := c.line()
		if err != nil {
			return resp, false, err
		}
		// "HTTP/1.1 200 OK": the version, a space, three digits.
		if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
			return resp, false, fmt.Errorf("malformed status line %q", line)
		}
		status, err := strconv.Atoi(string(line[9:12]))
		if err != nil || status < 100 {
			return resp, false, fmt.Errorf("malformed status line %q", line)
		}
		keep = line[7] == '1' // HTTP/1.0 closes unless told otherwise; we never ask

		length, chunked := int64(-1), false
		for {
			h, err := c.line()
			if err != nil {
				return resp, false, err
			}
			if len(h) == 0 {
				break
			}
			name, value, ok := bytes.Cut(h, []byte(":"))
			if !ok {
				return resp, false, fmt.Errorf("malformed header line %q", h)
			}
			value = bytes.TrimSpace(value)
			switch {
			case asciiEqualFold(name, "Content-Length"):
				if length, err = strconv.ParseInt(string(value), 10, 64); err != nil || length < 0 {
					return resp, false, fmt.Errorf("bad Content-Length %q", value)
				}
			case asciiEqualFold(name, "Transfer-Encoding"):
				chunked = asciiEqualFold(value, "chunked")
			case asciiEqualFold(name, "Connection"):
				if asciiEqualFold(value, "close") {
					keep = false
				}
			}
		}
		if status < 200 {
			continue // 100 Continue and friends precede the real response
		}
		resp.status = status

		var body io.Writer = io.Discard
		var sample bytes.Buffer
		if wantSample(status) {
			body = &limitWriter{w: &sample, n: 512}
		}
		switch {
		case c.req.noBody || status == http.StatusNoContent || status == http.StatusNotModified:
		case chunked:
			resp.bytes, err = c.readChunked(body)
		case length >= 0:
			resp.bytes, err = c.copyN(body, length)
		default: // no framing: the body runs to the end of the connection
			resp.bytes, err = io.Copy(body, c.br)
			keep = false
		}
		resp.sample = sample.Bytes()
		return resp, keep && err == nil, err
	}
}

// line returns the next CRLF- (or LF-) terminated line without its ending.
// The slice is only valid until the next read.
func (c *client) line() ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		return nil, errors.New("response line longer than 64 KiB")
	}
	if err != nil {
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}

func (c *client) copyN(w io.Writer, n int64) (int64, error) {
	if w == io.Discard {
		// Discard straight out of the buffer: no copy.
		var done int64
		for done < n {
			k, err := c.br.Discard(int(min(n-done, 1<<30)))
			done += int64(k)
			if err != nil {
				return done, err
			}
		}
		return done, nil
	}
	return io.CopyN(w, c.br, n)
}

func (c *client) readChunked(w io.Writer) (int64, error) {
	var total int64
	for {
		line, err := c.line()
		if err != nil {
			return total, err
		}
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i] // chunk extensions
		}
		size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil || size < 0 {
			return total, fmt.Errorf("bad chunk size %q", line)
		}
		if size == 0 {
			for { // trailers up to the blank line
				t, err := c.line()
				if err != nil || len(t) == 0 {
					return total, err
				}
			}
		}
		n, err := c.copyN(w, size)
		total += n
		if err != nil {
			return total, err
		}
		if end, err := c.line(); err != nil || len(end) != 0 {
			return total, fmt.Errorf("chunk not followed by CRLF")
		}
	}
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// limitWriter keeps the first n bytes written and discards the rest.
type limitWriter struct {
	w io.Writer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if keep := min(len(p), l.n); keep > 0 {
		l.w.Write(p[:keep])
		l.n -= keep
	}
	return len(p), nil
}

// interruptOnDone interrupts every client when ctx ends; the returned stop
// must be called when the run finishes.
func interruptOnDone(ctx context.Context, clients []*client) (stop func() bool) {
	return context.AfterFunc(ctx, func() {
		for _, c := range clients {
			c.interrupt()
		}
	})
}
