package stream

import (
	"context"

	"switchboard/internal/store"
)

// JoinID exports joinID to the tests.
func (h *Hub) JoinID(ctx context.Context, accountID int64, at store.EventPos) (int64, error) {
	return h.joinID(ctx, accountID, at)
}

// MatchRows is the ids of the account's rows that f matches, each rendered
// as the hub renders it.
func MatchRows(f *Filter, account int64, rows []store.StreamEvent) []int64 {
	out := []int64{}
	for _, r := range rows {
		if r.AccountID == account && f.Match(newEvent(r)) {
			out = append(out, r.Pos.ID)
		}
	}
	return out
}
