//go:build !linux

package sqldb

import "syscall"

// unackedTimeoutControl does nothing where TCP_USER_TIMEOUT is not
// available: keepalives alone find a silent database host there.
func unackedTimeoutControl(_, _ string, _ syscall.RawConn) error { return nil }
