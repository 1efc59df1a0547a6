package store_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/internal/sms/smsevent"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// Concurrent inbound texts on two lines, each unread for every user of the
// line, with reads of threads and of whole lines between them: on
// PostgreSQL they share group commits on several committers, each group
// folding its notes into the same counter rows at COMMIT (migration 0030).
// The counters end equal to the sums they stand for, and to what the texts
// and reads left.
func TestUnreadTotalsUnderConcurrentWrites(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		acct := storetest.Account(t, st, nil).ID
		var users []int64
		for range 5 {
			users = append(users, storetest.User(t, st, acct, nil).ID)
		}
		lines := []store.Inbound{
			{Line: storetest.Line(t, st, acct, nil), Readers: users},
			{Line: storetest.Line(t, st, acct, nil), Readers: users[:3]},
		}
		receive := func(line, peer int) int64 {
			in := lines[line]
			in.From = fmt.Sprintf("1212555%04d", peer)
			in.Participants, in.Body = []string{in.From}, "hi"
			noErr(t, smsevent.SetReceived(&in))
			id, err := st.StoreInbound(ctx, in)
			if err != nil {
				t.Error(err)
			}
			return id
		}
		convOf := func(msg int64) int64 {
			m, err := st.Message(ctx, acct, msg)
			noErr(t, err)
			return m.ConversationID
		}
		var wg sync.WaitGroup
		for i := range 60 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				receive(i%2, i%7)
			}()
		}
		wg.Wait()
		noErr(t, st.CheckUnreadTotals(ctx))
		for i, u := range users {
			got, err := st.UnreadCounts(ctx, acct, u, time.Time{})
			noErr(t, err)
			want := map[int64]int64{lines[0].Line.ID: 30, lines[1].Line.ID: 30}
			if i >= 3 {
				delete(want, lines[1].Line.ID)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("user %d: unread %v, want %v", u, got, want)
			}
		}

		// More texts, while users read threads and lines. (Each text is from a
		// new peer, and the reads are of the first texts' conversations, few
		// of them line-wide: writes that lock the same conversations in
		// different orders in concurrent groups deadlock and are retried, a
		// cost of the conversation rows that has nothing to do with the
		// counters, which every group locks in one order.)
		first := receive(0, 0)
		for i := range 60 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i%3 != 0 {
					receive(i%2, 100+i)
					return
				}
				u := users[i%3]
				line := lines[i%2].Line.ID
				var err error
				switch {
				case i%15 == 0:
					var convs []store.LineRead
					list, lerr := st.UnreadConversations(ctx, line, u)
					noErr(t, lerr)
					for _, c := range list {
						convs = append(convs, store.LineRead{ConversationID: c.ID})
					}
					err = st.MarkLineRead(ctx, line, u, time.Time{}, convs)
				case i%2 == 0:
					err = st.MarkThreadRead(ctx, convOf(first), users[i%5], store.Change{})
				default:
					err = st.MarkMessages(ctx, convOf(first), users[i%5], []int64{first}, i%4 == 1, store.Change{})
				}
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		noErr(t, st.CheckUnreadTotals(ctx))
		for _, u := range append(users, 0) {
			counters, err := st.UnreadCounts(ctx, acct, u, time.Time{})
			noErr(t, err)
			scratch, err := st.UnreadCounts(ctx, acct, u, time.Unix(0, 0))
			noErr(t, err)
			if fmt.Sprint(counters) != fmt.Sprint(scratch) {
				t.Errorf("user %d: counters %v, counted from the messages %v", u, counters, scratch)
			}
		}
	})
}

// BenchmarkStoreInbound stores inbound texts from 200 peers on a line of
// 20 users, from concurrent goroutines: the inbound path, with the unread
// counters' triggers (migration 0030) on every text (each moves the row of
// every user and the team's).
func BenchmarkStoreInbound(b *testing.B) {
	for _, e := range storetest.Engines(b) {
		b.Run(string(e), func(b *testing.B) {
			st := storetest.Open(b, e)
			acct := storetest.Account(b, st, nil).ID
			var users []int64
			for range 20 {
				users = append(users, storetest.User(b, st, acct, nil).ID)
			}
			line := storetest.Line(b, st, acct, nil)
			var n atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					in := store.Inbound{Line: line, Readers: users, Body: "hi"}
					in.From = fmt.Sprintf("1212555%04d", n.Add(1)%200)
					in.Participants = []string{in.From}
					if err := smsevent.SetReceived(&in); err != nil {
						b.Error(err)
					}
					if _, err := st.StoreInbound(ctx, in); err != nil {
						b.Error(err)
					}
				}
			})
		})
	}
}
