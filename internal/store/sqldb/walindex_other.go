//go:build !unix

package sqldb

import "errors"

// Without mmap the read cache queries the generation on every check.
type walIndex struct{}

type walHeader [12]uint32

type shmFile struct{}

func acquireShm(string) (*shmFile, error) {
	return nil, errors.New("store: no WAL index view on this platform")
}

func (*shmFile) release() error { return nil }

func mapWALIndex(*shmFile) (*walIndex, error) {
	return nil, errors.New("store: no WAL index view on this platform")
}

func (*walIndex) header() walHeader { return walHeader{} }

func (*walIndex) close() error { return nil }
