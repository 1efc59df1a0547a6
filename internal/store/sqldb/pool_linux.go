package sqldb

import "syscall"

// tcpUserTimeout is TCP_USER_TIMEOUT from linux/tcp.h (the syscall package
// lacks it).
const tcpUserTimeout = 0x12

// unackedTimeoutControl sets TCP_USER_TIMEOUT on a database connection's
// socket: see unackedTimeout.
// (Unix sockets have no such option and need none.)
func unackedTimeoutControl(network, _ string, c syscall.RawConn) error {
	if network != "tcp" && network != "tcp4" && network != "tcp6" {
		return nil
	}
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout, int(unackedTimeout.Milliseconds()))
	})
	if err != nil {
		return err
	}
	return serr
}
