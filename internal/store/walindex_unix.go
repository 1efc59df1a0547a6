//go:build unix

package store

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// walIndex is a read-only view of the header of SQLite's WAL index, the
// "-shm" file that every connection to a WAL database maps and that every
// commit, from any process, rewrites before it returns (the format is fixed
// for compatibility between SQLite versions: https://sqlite.org/walformat.html,
// "The WAL-Index Header"). Comparing the header's first 48-byte copy with the
// one seen at the last generation query tells the read cache, in nanoseconds
// and without a read transaction, that nothing has been committed since.
//
// The mapping stays valid while the store is open: SQLite truncates the
// file only when it is the first connection to open the database, and the
// read cache's own connection keeps the database open.
type walIndex struct{ mem []byte }

// walHeader is the first copy of the WAL-index header: version, change
// counter, page count, last valid frame, checksums and salts.
type walHeader [12]uint32

func openWALIndex(dbPath string) (*walIndex, error) {
	f, err := os.Open(dbPath + "-shm")
	if err != nil {
		return nil, err
	}
	defer f.Close() // the mapping outlives the descriptor
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	const headerBytes = 136 // two header copies and the checkpoint info
	if fi.Size() < headerBytes {
		return nil, fmt.Errorf("store: %s-shm holds no WAL index yet", dbPath)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, headerBytes, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	w := &walIndex{mem: mem}
	// iVersion is 3007000 in every WAL index SQLite has written since WAL
	// began; anything else is not a header we understand.
	if v := w.header()[0]; v != 3007000 {
		w.close()
		return nil, fmt.Errorf("store: %s-shm: unknown WAL-index version %d", dbPath, v)
	}
	return w, nil
}

// header reads the header word by word with atomic loads: another process
// may be rewriting it. A torn read only ever differs from what was seen
// before, which costs one generation query, never a stale answer.
func (w *walIndex) header() walHeader {
	var h walHeader
	for i := range h {
		h[i] = atomic.LoadUint32((*uint32)(unsafe.Pointer(&w.mem[4*i])))
	}
	return h
}

func (w *walIndex) close() error { return syscall.Munmap(w.mem) }
