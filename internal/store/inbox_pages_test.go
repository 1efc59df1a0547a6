package store_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestDeepListPagesMatchTheWholeList checks list pages that seek through the
// per-day conversation counts (SQLite, any offset here) against the whole
// list read in one page, with and without a line filter, after the changes
// that move a conversation between days: a newer message, a deleted
// conversation, and a deleted newest message (its thread falls back to an
// older day).
func TestDeepListPagesMatchTheWholeList(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		base := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
		now := base
		st.SetClock(func() time.Time { return now })
		acct := storetest.Account(t, st, nil)
		lines := []domain.Line{storetest.Line(t, st, acct.ID, nil), storetest.Line(t, st, acct.ID, nil), storetest.Line(t, st, acct.ID, nil)}
		r := rand.New(rand.NewPCG(1, 2))
		// 150 conversations over 40 days, written in random time order so
		// that days fill out of order.
		var msgs []domain.Message
		for i := range 150 {
			now = base.Add(time.Duration(r.IntN(40*24*60)) * time.Minute)
			m := storetest.Message(t, st, lines[i%3], &storetest.MessageOpts{Other: []string{fmt.Sprintf("1212555%04d", i)}})
			msgs = append(msgs, m)
		}
		// Thirty threads get a newer message, mostly on a later day.
		for _, i := range r.Perm(150)[:30] {
			now = base.Add(time.Duration(40*24*60+r.IntN(5*24*60)) * time.Minute)
			storetest.Message(t, st, lines[i%3], &storetest.MessageOpts{Other: []string{fmt.Sprintf("1212555%04d", i)}, Outbound: true})
		}
		whole := func(lineIDs []int64) []domain.ConversationSummary {
			page, err := st.ListConversations(ctx, store.ConversationFilter{AccountID: acct.ID, LineIDs: lineIDs, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			return page
		}
		// One conversation deleted; one thread's newest message deleted.
		all := whole(nil)
		if _, err := st.DeleteConversation(ctx, all[40].ID, store.Change{}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.DeleteMessage(ctx, all[0].ID, all[0].LastMessageID, store.Change{}); err != nil {
			t.Fatal(err)
		}

		st.SetDeepPage(1)
		for _, lineIDs := range [][]int64{nil, {lines[0].ID, lines[2].ID}} {
			want := whole(lineIDs)
			if n := len(want); lineIDs == nil && n != 149 {
				t.Fatalf("the whole list has %d conversations, want 149", n)
			}
			for offset := 0; offset <= len(want)+3; offset += 7 {
				page, err := st.ListConversations(ctx, store.ConversationFilter{AccountID: acct.ID, LineIDs: lineIDs, Limit: 10, Offset: offset})
				if err != nil {
					t.Fatal(err)
				}
				end := min(offset+10, len(want))
				if got, exp := ids(page), ids(want[min(offset, end):end]); !slices.Equal(got, exp) {
					t.Errorf("lines %v, offset %d: got %v, want %v", lineIDs, offset, got, exp)
				}
			}
		}
	})
}

func ids(page []domain.ConversationSummary) []int64 {
	out := make([]int64, len(page))
	for i, c := range page {
		out[i] = c.ID
	}
	return out
}
