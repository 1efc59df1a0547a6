package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// scriptedServer answers each request on a connection with the next of
// replies, byte for byte, so the tests control framing exactly. It records
// the raw request heads it read and counts connections.
type scriptedServer struct {
	ln      net.Listener
	conns   atomic.Int64
	replies []string
	heads   chan string
}

func startScripted(t *testing.T, replies ...string) *scriptedServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scriptedServer{ln: ln, replies: replies, heads: make(chan string, 100)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			go s.serve(c)
		}
	}()
	return s
}

func (s *scriptedServer) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for i := 0; ; i++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		s.heads <- req.Method + " " + req.RequestURI + " host=" + req.Host + " auth=" + req.Header.Get("Authorization") + " body=" + string(body)
		reply := s.replies[i%len(s.replies)]
		if _, err := io.WriteString(c, reply); err != nil {
			return
		}
		if strings.Contains(reply, "Connection: close") {
			return
		}
	}
}

func (s *scriptedServer) url() string { return "http://" + s.ln.Addr().String() + "/p?q=1" }

func newTestClient(t *testing.T, cfg Config) *client {
	t.Helper()
	req, err := newWireRequest(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &client{req: req, timeout: 2 * time.Second}
	t.Cleanup(c.close)
	return c
}

func never(int) bool { return false }

func TestClientFraming(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reply  string
		status int
		bytes  int64
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, 5},
		{"chunked", "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n4\r\ndefg\r\n0\r\nTrailer: x\r\n\r\n", 201, 7},
		{"no content", "HTTP/1.1 204 No Content\r\n\r\n", 204, 0},
		{"interim response first", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", 200, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startScripted(t, tc.reply)
			c := newTestClient(t, Config{URL: srv.url(), Method: http.MethodGet})
			for i := range 3 { // the same connection carries every exchange
				resp, err := c.do(never)
				if err != nil || resp.status != tc.status || resp.bytes != tc.bytes {
					t.Fatalf("exchange %d: %+v, %v; want status %d, %d bytes", i, resp, err, tc.status, tc.bytes)
				}
			}
			if n := srv.conns.Load(); n != 1 {
				t.Errorf("%d connections for 3 keep-alive exchanges", n)
			}
		})
	}
}

func TestClientRequestBytes(t *testing.T) {
	srv := startScripted(t, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	c := newTestClient(t, Config{URL: srv.url(), Method: http.MethodPost, Host: "api.test",
		Header: http.Header{"Authorization": {"Bearer k"}}, Body: []byte(`{"a":1}`)})
	if _, err := c.do(never); err != nil {
		t.Fatal(err)
	}
	if got, want := <-srv.heads, `POST /p?q=1 host=api.test auth=Bearer k body={"a":1}`; got != want {
		t.Errorf("server read %q, want %q", got, want)
	}
}

func TestClientReconnectsAfterClose(t *testing.T) {
	// Connection: close and a body delimited by the end of the connection
	// both end the connection; the next request dials again.
	for _, reply := range []string{
		"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end",
	} {
		srv := startScripted(t, reply)
		c := newTestClient(t, Config{URL: srv.url(), Method: http.MethodGet})
		for i := range 3 {
			if resp, err := c.do(never); err != nil || resp.status != 200 {
				t.Fatalf("%q exchange %d: %+v, %v", reply, i, resp, err)
			}
		}
		if n := srv.conns.Load(); n != 3 {
			t.Errorf("%q: %d connections for 3 requests, want 3", reply, n)
		}
	}
}

func TestClientSamplesUnexpectedBody(t *testing.T) {
	body := strings.Repeat("x", 600)
	srv := startScripted(t, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 600\r\n\r\n"+body)
	c := newTestClient(t, Config{URL: srv.url(), Method: http.MethodGet})
	resp, err := c.do(func(status int) bool { return status != 200 })
	if err != nil || resp.status != 500 || resp.bytes != 600 || string(resp.sample) != body[:512] {
		t.Fatalf("got %d, %d bytes, sample of %d, %v", resp.status, resp.bytes, len(resp.sample), err)
	}
}

func TestClientMalformedResponses(t *testing.T) {
	for _, reply := range []string{
		"SMTP ready\r\n\r\n",
		"HTTP/1.1 2x0 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nshort",
	} {
		srv := startScripted(t, reply)
		c := newTestClient(t, Config{URL: srv.url(), Method: http.MethodGet})
		if resp, err := c.do(never); err == nil {
			t.Errorf("%q: accepted as %+v", reply, resp)
		}
	}
}

func TestClientInterruptUnblocks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	received := make(chan struct{})
	release := make(chan struct{})
	defer close(release)
	go func() { // read the request, then never answer
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			close(received)
		}
		<-release
	}()
	c := newTestClient(t, Config{URL: "http://" + ln.Addr().String() + "/", Method: http.MethodGet})
	c.timeout = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	stop := interruptOnDone(ctx, []*client{c})
	defer stop()
	done := make(chan error, 1)
	go func() { _, err := c.do(never); done <- err }()
	<-received // the worker now waits for an answer that never comes
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Error("an interrupted exchange reported success")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("interrupt did not unblock the worker")
	}
	if _, err := c.do(never); err != errInterrupted {
		t.Errorf("after interrupt: %v, want errInterrupted", err)
	}
}

func TestWireRequestRejectsHeaderInjection(t *testing.T) {
	_, err := newWireRequest(&Config{URL: "http://127.0.0.1/", Method: http.MethodGet,
		Header: http.Header{"X-A": {"1\r\nX-Injected: 2"}}})
	if err == nil {
		t.Error("a header value with CRLF was accepted")
	}
}
