package stream

import (
	"context"

	"switchboard/internal/store"
)

// JoinID exports joinID to the tests.
func (h *Hub) JoinID(ctx context.Context, accountID int64, at store.EventPos) (int64, error) {
	return h.joinID(ctx, accountID, at)
}
