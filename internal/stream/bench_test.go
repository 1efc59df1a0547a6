package stream_test

import (
	"bytes"
	"testing"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/stream"
)

// BenchmarkReplayInvisible is a replay from evt_0 of an account's 100,000
// call events by a person who may see none of them (an agent: one line,
// no call reports), on each engine: "before" reads every event of the
// account and checks each in memory (the replay before its query selected
// what the stream may see), "after" is the replay. docs/benchmarks.md
// records the figures.
func BenchmarkReplayInvisible(b *testing.B) {
	const events = 100_000
	for _, e := range storetest.Engines(b) {
		b.Run(string(e), func(b *testing.B) {
			st := storetest.Open(b, e)
			account := storetest.Account(b, st, nil).ID
			batch := make([]domain.Event, 1000)
			for i := range batch {
				batch[i] = domain.Event{Type: domain.EventEndedCalls, Payload: []byte(`{"event":"call.ended","callId":1,"direction":"inbound","status":"answered"}`)}
			}
			for range events / len(batch) {
				if err := st.AddEvents(ctx, account, batch); err != nil {
					b.Fatal(err)
				}
			}
			head := allEvents(b, st, events)[events-1].Pos
			agent := &stream.Filter{UserID: 7, Messages: true, Lines: map[string]bool{"14155550100": true}}
			h := stream.New(stream.Config{Store: st})
			if err := h.Start(ctx); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(h.Stop)
			everything := store.StreamSelect{Any: []store.StreamClause{{Types: []string{domain.EventEndedCalls}}}}
			b.Run("before", func(b *testing.B) {
				for b.Loop() {
					seen := 0
					for last := (store.EventPos{}); ; {
						rows, err := st.AccountStreamEvents(ctx, account, last, head, everything, 1000)
						if err != nil {
							b.Fatal(err)
						}
						seen += len(stream.MatchRows(agent, account, rows))
						if len(rows) < 1000 {
							break
						}
						last = rows[len(rows)-1].Pos
					}
					if seen != 0 {
						b.Fatalf("%d events sent, want none", seen)
					}
				}
			})
			b.Run("after", func(b *testing.B) {
				for b.Loop() {
					var sent bytes.Buffer
					if err := h.Replay(ctx, &sent, account, agent, store.EventPos{}, head); err != nil || sent.Len() != 0 {
						b.Fatalf("sent %q (%v), want nothing", sent.String(), err)
					}
				}
			})
		})
	}
}
