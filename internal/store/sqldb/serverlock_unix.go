//go:build unix

package sqldb

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// serverLock is the flock a serving process holds on <database>.lock.
type serverLock struct{ f *os.File }

func lockServer(path string) (*serverLock, error) {
	lockFile := lockPath(path)
	f, err := os.OpenFile(lockFile, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: lock file %s: %w", lockFile, unwrapPath(err))
	}
	// flock, not fcntl: closing any other descriptor of the file in this
	// process does not drop it, and the kernel drops it when the process
	// dies, however it dies, so a crash never leaves a stale lock.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := ""
		if b, rerr := os.ReadFile(lockFile); rerr == nil {
			if pid := strings.TrimSpace(string(b)); pid != "" {
				holder = " (process " + pid + ")"
			}
		}
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is already served by another switchboard%s, which holds %s; one process owns SQLite's single writer: stop that one first, or use PostgreSQL to run several nodes", ErrServed, path, holder, lockFile)
		}
		return nil, fmt.Errorf("store: lock %s: %w", lockFile, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &serverLock{f: f}, nil
}

func (l *serverLock) release() {
	if l != nil {
		l.f.Truncate(0)
		l.f.Close() // closing the last descriptor drops the flock
	}
}
