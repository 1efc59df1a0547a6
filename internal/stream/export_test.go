package stream

import (
	"context"
	"io"
	"time"

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

// Replay runs a stream's replay of the account's events in (after, upTo]
// under f, writing to w.
func (h *Hub) Replay(ctx context.Context, w io.Writer, account int64, f *Filter, after, upTo store.EventPos) error {
	sub, err := h.Open(account, f)
	if err != nil {
		return err
	}
	defer sub.Close()
	out := &writer{w: w, flushFn: func() error { return nil }, deadline: func(time.Time) error { return nil }, m: h.cfg.Metrics, sub: sub}
	_, err = h.replay(ctx, out, Request{AccountID: account}, sub, &after, upTo)
	return err
}

// StartReplay exports startReplay to the tests.
func (h *Hub) StartReplay(ctx context.Context, account int64) (func(), error) {
	return h.startReplay(ctx, account)
}

// ReplayAccounts is how many accounts have replay slots in use or awaited.
func (h *Hub) ReplayAccounts() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.replays)
}

// ReplaysWaiting is how many replays of the account wait for a slot.
func (h *Hub) ReplaysWaiting(account int64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.replays[account]
	if r == nil {
		return 0
	}
	return r.users - len(r.slots)
}
