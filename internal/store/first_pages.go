package store

import "context"

// FirstPage returns the encoded answer kept under key while the database has
// not changed since it was loaded, or loads and keeps it: the inbox's first
// pages, which every send and inbound text moves, so that the read cache
// (dropped only by DropCache writes) cannot hold them. Exact on both engines
// as the read cache is (sqldb.Pages); bounded by Options.PageBytes. load must
// depend only on the database and key.
func (s *Store) FirstPage(ctx context.Context, key string, load func() ([]byte, error)) ([]byte, error) {
	return s.db.Page(ctx, key, load)
}

// PageStats reports how many encoded pages the store keeps and the bytes
// they are counted for.
func (s *Store) PageStats() (entries int, bytes int64) { return s.db.PageStats() }
