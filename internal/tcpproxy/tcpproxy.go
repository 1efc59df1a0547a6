// Package tcpproxy is a small TCP proxy for tests and benchmarks: it hands
// each accepted connection to the next of its targets in turn (round robin,
// passing over a target that refuses the connection), and it can cut every connection and refuse new ones, as a database or node
// that went away would, then let them through again.
package tcpproxy

import (
	"errors"
	"io"
	"net"
	"sync"
)

// Proxy forwards connections accepted on its address to its targets.
type Proxy struct {
	ln      net.Listener
	targets []string

	mu    sync.Mutex
	next  int
	cut   bool
	conns map[net.Conn]struct{} // both ends of every open pair
	wg    sync.WaitGroup
}

// Listen starts a proxy on addr (e.g. 127.0.0.1:0) in front of targets.
func Listen(addr string, targets ...string) (*Proxy, error) {
	if len(targets) == 0 {
		return nil, errors.New("tcpproxy: no targets")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, targets: targets, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the address the proxy listens on.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every open connection and makes the proxy close new ones at
// once (until Restore): to a client, the target has gone away.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Restore lets connections through again after Cut.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.Cut()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		first := p.next
		p.next++
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.forward(c, first)
	}
}

// forward connects c to the first target, counting from first, that
// accepts (a load balancer passes over a node that is down), and copies
// both ways until either side closes.
func (p *Proxy) forward(c net.Conn, first int) {
	defer p.wg.Done()
	var t net.Conn
	var err error
	for i := range p.targets {
		if t, err = net.Dial("tcp", p.targets[(first+i)%len(p.targets)]); err == nil {
			break
		}
	}
	p.mu.Lock()
	if err != nil || p.cut {
		delete(p.conns, c)
		p.mu.Unlock()
		c.Close()
		if t != nil {
			t.Close()
		}
		return
	}
	p.conns[t] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		// One direction ended: end the other too, as the peer would see.
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go pipe(t, c)
	go pipe(c, t)
	<-done
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, t)
	p.mu.Unlock()
}
