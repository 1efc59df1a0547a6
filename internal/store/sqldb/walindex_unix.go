//go:build unix

package sqldb

import (
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
// The mapping stays valid while the database is open: SQLite truncates the
// file only when it is the first connection to open the database, and the
// read cache's own connection keeps the database open.
type walIndex struct{ mem []byte }

// walHeader is the first copy of the WAL-index header: version, change
// counter, page count, last valid frame, checksums and salts.
type walHeader [12]uint32

// shmFile is this process's own descriptor of a -shm file, shared by the
// DBs of the process that have the database open. Closing any descriptor
// of a file drops every POSIX lock the process holds on it, SQLite's
// included: its dead-man switch (without which the next process to open the
// database takes itself for the only user and rebuilds the WAL index under
// this one) and its WAL locks. So the descriptor is closed only when the
// last of those DBs has closed its SQLite connections (see DB.Close).
type shmFile struct {
	f    *os.File
	key  shmKey
	refs int // DBs holding it
}

// shmKey names a file whatever path reaches it.
type shmKey struct{ dev, ino uint64 }

var shmFiles = struct {
	sync.Mutex
	m map[shmKey]*shmFile
}{m: map[shmKey]*shmFile{}}

// acquireShm returns the process's descriptor of dbPath's -shm file for one
// more DB; release it after the DB's SQLite connections are closed.
func acquireShm(dbPath string) (*shmFile, error) {
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
		sf = &shmFile{f: f, key: key}
		shmFiles.m[key] = sf
	}
	sf.refs++
	return sf, nil
}

func (sf *shmFile) release() error {
	shmFiles.Lock()
	defer shmFiles.Unlock()
	if sf.refs--; sf.refs > 0 {
		return nil
	}
	delete(shmFiles.m, sf.key)
	return sf.f.Close()
}

// mapWALIndex maps the WAL-index header of the -shm file sf.
func mapWALIndex(sf *shmFile) (*walIndex, error) {
	const headerBytes = 136 // two header copies and the checkpoint info
	fi, err := sf.f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() < headerBytes {
		return nil, fmt.Errorf("store: %s holds no WAL index yet", sf.f.Name())
	}
	mem, err := syscall.Mmap(int(sf.f.Fd()), 0, headerBytes, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	w := &walIndex{mem: mem}
	// iVersion is 3007000 in every WAL index SQLite has written since WAL
	// began; anything else is not a header we understand.
	if v := w.header()[0]; v != 3007000 {
		w.close()
		return nil, fmt.Errorf("store: %s: unknown WAL-index version %d", sf.f.Name(), v)
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
