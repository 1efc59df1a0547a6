//go:build unix

package stream

import (
	"net"
	"syscall"
)

// rawConn is a connection's descriptor, for writes that never block and
// for the sweep's look at whether the client closed its end.
type rawConn interface {
	tryWrite(b []byte) (int, error)
	open(buf []byte) bool
}

type sysConn struct{ rc syscall.RawConn }

func rawOf(c net.Conn) rawConn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return sysConn{rc}
}

// tryWrite makes one write(2) on the non-blocking descriptor: what the
// socket's buffer takes now, 0 if it is full.
func (c sysConn) tryWrite(b []byte) (int, error) {
	var n int
	var werr error
	if err := c.rc.Write(func(fd uintptr) bool {
		n, werr = syscall.Write(int(fd), b)
		return true // never wait for the socket: a pump does
	}); err != nil {
		return 0, err
	}
	if werr == syscall.EAGAIN || werr == syscall.EINTR {
		return 0, nil
	}
	return max(n, 0), werr
}

// open reports whether the client still holds the connection: a read
// that finds its end closed (0 bytes) or the connection reset is a client
// gone. An SSE client sends nothing after its request; anything it does
// send is read and ignored.
func (c sysConn) open(buf []byte) bool {
	var n int
	var rerr error
	if err := c.rc.Read(func(fd uintptr) bool {
		n, rerr = syscall.Read(int(fd), buf)
		return true
	}); err != nil {
		return false
	}
	switch {
	case rerr == syscall.EAGAIN || rerr == syscall.EINTR:
		return true
	case rerr != nil:
		return false
	}
	return n > 0
}
