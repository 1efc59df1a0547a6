package stream_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/stream"
)

// wrappedListener hands out connections that hide their descriptor (as a
// listener wrapper would): a direct stream then writes through pumps only.
type wrappedListener struct{ net.Listener }

type wrappedConn struct{ net.Conn }

func (l wrappedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return wrappedConn{c}, nil
}

// serveHub serves the hub's stream of account at / with recheck; wrap hides
// the connections' descriptors.
func serveHub(t *testing.T, h *stream.Hub, account int64, key string, recheck func(context.Context) (*stream.Filter, error), cfg stream.ServeConfig, wrap bool) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h.Serve(w, r, stream.Request{AccountID: account, Filter: everything, Recheck: recheck, RecheckKey: key}, cfg); err != nil {
			http.Error(w, err.Error(), http.StatusTooManyRequests)
		}
	}))
	if wrap {
		srv.Listener = wrappedListener{srv.Listener}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// openRaw opens a stream and returns a reader past its head.
func openRaw(t *testing.T, url string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	must(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	must(t, err)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(conn)
	status, err := br.ReadString('\n')
	must(t, err)
	if status != "HTTP/1.1 200 OK\r\n" {
		t.Fatalf("status %q", status)
	}
	for {
		line, err := br.ReadString('\n')
		must(t, err)
		if line == "\r\n" {
			return conn, br
		}
	}
}

// readUntil reads lines until one starts with prefix, for up to 30 s (next's
// wait).
func readUntil(t *testing.T, conn net.Conn, br *bufio.Reader, prefix string) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("no %q: %v", prefix, err)
		}
		if strings.HasPrefix(line, prefix) {
			return
		}
	}
}

// The streams of one credential share one recheck per period, however
// many there are; a refusal ends them all.
func TestRecheckOncePerCredential(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		account := storetest.Account(t, st, nil).ID
		h := startHub(t, st, stream.Config{})
		var calls atomic.Int64
		var refuse atomic.Bool
		recheck := func(context.Context) (*stream.Filter, error) {
			calls.Add(1)
			if refuse.Load() {
				return nil, errors.New("revoked")
			}
			return nil, nil
		}
		url := serveHub(t, h, account, "one key", recheck, stream.ServeConfig{Recheck: 100 * time.Millisecond}, false)
		const n = 10
		var conns []net.Conn
		for range n {
			c, _ := openRaw(t, url)
			conns = append(conns, c)
		}
		// Rounds begun once the 10 were open: one call each, where one per
		// stream would be 10.
		r := stream.WaitRound(t, &h.TestSignals.Recheck, time.Now())
		before := calls.Load()
		for range 3 {
			r = stream.WaitRound(t, &h.TestSignals.Recheck, r.Began)
			if r.N != 1 {
				t.Errorf("a round of 10 streams of one credential made %d rechecks, want 1", r.N)
			}
		}
		// The next round begins 100 ms after the last one's signal.
		if c := calls.Load() - before; c < 3 || c > 4 {
			t.Errorf("%d calls in 3 rounds of 10 streams of one credential, want 3", c)
		}
		refuse.Store(true)
		for i, c := range conns {
			c.SetReadDeadline(time.Now().Add(3 * time.Second))
			if _, err := bufio.NewReader(c).ReadString(0); err == nil || isTimeout(err) {
				t.Fatalf("stream %d still open after its credential was refused: %v", i, err)
			}
		}
	})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// On a connection without a descriptor every write goes through a pump:
// events, keepalives, and a client gone noticed at the next write.
func TestDirectStreamWithoutDescriptor(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		account := storetest.Account(t, st, nil).ID
		h := startHub(t, st, stream.Config{Limit: 1})
		url := serveHub(t, h, account, "", nil, stream.ServeConfig{Keepalive: 100 * time.Millisecond}, true)
		conn, br := openRaw(t, url)
		addEvent(t, st, account)
		readUntil(t, conn, br, "event: AccountSMS")
		readUntil(t, conn, br, ": keepalive")
		conn.Close()
		// The next keepalive's write fails and frees the limit's place.
		if got := h.TestSignals.Closed.WaitOrTimeout(t); got != account {
			t.Fatalf("closed a stream of account %d, want %d", got, account)
		}
		s, err := h.Open(account, everything)
		must(t, err)
		s.Close()
	})
}
