//go:build !unix

package stream

import "net"

// rawConn: elsewhere than on Unix a direct stream's every write goes
// through a pump, and a client that left is noticed when a write fails.
type rawConn interface {
	tryWrite(b []byte) (int, error)
	open(buf []byte) bool
}

func rawOf(net.Conn) rawConn { return nil }
