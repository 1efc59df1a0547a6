package store

import "context"

// FirstPage returns account's encoded answer kept under key while nothing
// that may change account's pages has been committed since it was loaded,
// or loads and keeps it: the inbox's first pages, which every send and
// inbound text of the account moves, so that the read cache (dropped only
// by DropCache writes) cannot hold them. Exact on both engines as the read
// cache is (sqldb.Pages): a write that changes what an account's pages
// show names the account (Tx.Touches) or names none (every account's go
// stale). Bounded by Options.PageBytes. load must depend only on account's
// data and key.
func (s *Store) FirstPage(ctx context.Context, account int64, key string, load func() ([]byte, error)) ([]byte, error) {
	return s.db.Page(ctx, account, key, load)
}

// PageStats reports how many encoded pages the store keeps and the bytes
// they are counted for.
func (s *Store) PageStats() (entries int, bytes int64) { return s.db.PageStats() }
