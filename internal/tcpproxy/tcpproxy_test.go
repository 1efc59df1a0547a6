package tcpproxy

import (
	"bufio"
	"io"
	"net"
	"slices"
	"testing"
	"time"
)

// namer accepts connections and answers each line with its name.
func namer(t *testing.T, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					if _, err := r.ReadString('\n'); err != nil {
						return
					}
					c.Write([]byte(name + "\n"))
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// deadAddr is an address nothing listens on.
func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// ask connects through p and returns the name of the target that answers,
// or "" when the connection is closed instead.
func ask(t *testing.T, c net.Conn) string {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("who\n")); err != nil {
		return ""
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		if err != io.EOF && !isClosed(err) {
			t.Fatalf("read: %v", err)
		}
		return ""
	}
	return line[:len(line)-1]
}

func isClosed(err error) bool {
	ne, ok := err.(net.Error)
	return !ok || !ne.Timeout()
}

func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestRoundRobinPassesOverDeadTargetsAndCuts(t *testing.T) {
	p, err := Listen("127.0.0.1:0", namer(t, "a"), deadAddr(t), namer(t, "c"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var got []string
	for range 4 {
		got = append(got, ask(t, dial(t, p)))
	}
	// a, (dead →) c, c, a: the dead target's turn goes to the next one.
	if want := []string{"a", "c", "c", "a"}; !slices.Equal(got, want) {
		t.Fatalf("names through the proxy: got %v, want %v", got, want)
	}

	open := dial(t, p)
	if name := ask(t, open); name == "" {
		t.Fatal("no answer before the cut")
	}
	p.Cut()
	if name := ask(t, open); name != "" {
		t.Errorf("an open connection answered %q after Cut, want it closed", name)
	}
	if name := ask(t, dial(t, p)); name != "" {
		t.Errorf("a new connection answered %q after Cut, want it closed", name)
	}
	p.Restore()
	if name := ask(t, dial(t, p)); name == "" {
		t.Error("no answer after Restore")
	}
}
