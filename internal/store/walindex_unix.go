//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"
	"sync"
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
type walIndex struct {
	mem []byte
	shm *shmFile
}

// walHeader is the first copy of the WAL-index header: version, change
// counter, page count, last valid frame, checksums and salts.
type walHeader [12]uint32

// shmFile is this process's own descriptor of a -shm file. Closing any
// descriptor of a file drops every POSIX lock the process holds on it,
// SQLite's included: its dead-man switch (without which the next process to
// open the database takes itself for the only user and rebuilds the WAL
// index under this one) and its WAL locks. So the descriptor stays open
// while any store of this process maps the file, and is closed only after
// the stores' SQLite connections are (see Store.Close).
type shmFile struct {
	f    *os.File
	key  shmKey
	refs int
}

// shmKey names a file whatever path reaches it.
type shmKey struct{ dev, ino uint64 }

var shmFiles = struct {
	sync.Mutex
	m map[shmKey]*shmFile
}{m: map[shmKey]*shmFile{}}

func openWALIndex(dbPath string) (*walIndex, error) {
	path := dbPath + "-shm"
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("store: %s: no inode", path)
	}
	key := shmKey{uint64(st.Dev), uint64(st.Ino)}
	shmFiles.Lock()
	defer shmFiles.Unlock()
	sf := shmFiles.m[key]
	if sf == nil {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		// Registered before anything can fail: from here on the descriptor
		// must not be closed while SQLite may hold locks on the file.
		sf = &shmFile{f: f, key: key}
		shmFiles.m[key] = sf
	}
	const headerBytes = 136 // two header copies and the checkpoint info
	if fi.Size() < headerBytes {
		return nil, fmt.Errorf("store: %s holds no WAL index yet", path)
	}
	mem, err := syscall.Mmap(int(sf.f.Fd()), 0, headerBytes, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	sf.refs++
	w := &walIndex{mem: mem, shm: sf}
	// iVersion is 3007000 in every WAL index SQLite has written since WAL
	// began; anything else is not a header we understand.
	if v := w.header()[0]; v != 3007000 {
		syscall.Munmap(mem)
		sf.refs--
		return nil, fmt.Errorf("store: %s: unknown WAL-index version %d", path, v)
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

// close unmaps the header and, when no other store of this process maps
// the file, closes the descriptor: call it only once the store's SQLite
// connections are closed.
func (w *walIndex) close() error {
	err := syscall.Munmap(w.mem)
	shmFiles.Lock()
	defer shmFiles.Unlock()
	if w.shm.refs--; w.shm.refs == 0 {
		delete(shmFiles.m, w.shm.key)
		err = errors.Join(err, w.shm.f.Close())
	}
	return err
}
