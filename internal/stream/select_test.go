package stream_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
	"switchboard/internal/stream"
)

// A replay's query lets through exactly the events the in-memory rule
// (Filter.Match) does, for every combination of what a role grants
// (messages, lines, calls, transcripts, a person or an API key) and what
// the client asked for (types, lines), on each engine.
func TestSelectIsMatch(t *testing.T) {
	const l1, l2, l3 = "14155550101", "14155550102", "14155550103"
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		account := storetest.Account(t, st, nil).ID
		other := storetest.Account(t, st, nil).ID
		// Every type (and one the stream does not know), about each line or
		// none, for everyone or personal to user 7 or 8.
		types := []string{"AccountSomethingNew"}
		for _, wt := range domain.WebhookTypes {
			types = append(types, wt.Type)
		}
		var evs []domain.Event
		for _, typ := range types {
			for _, line := range []string{l1, l2, l3, ""} {
				for _, audience := range []int64{0, 7, 8} {
					payload := `{"event":"x"}`
					if line != "" {
						payload = fmt.Sprintf(`{"event":"x","line":%q}`, line)
					}
					evs = append(evs, domain.Event{Type: typ, Payload: []byte(payload), Audience: audience})
				}
			}
		}
		must(t, st.AddEvents(ctx, account, evs))
		must(t, st.AddEvents(ctx, other, evs[:3]))
		all := allEvents(t, st, len(evs)+3)
		head := all[len(all)-1].Pos

		lineSets := map[string]map[string]bool{"every line": nil, "no line": {}, "l1": {l1: true}, "l1 l2": {l1: true, l2: true}}
		typeSets := map[string]map[string]bool{"every type": nil, "sms": {domain.EventAccountSMS: true},
			"ended calls, conversations": {domain.EventEndedCalls: true, "AccountConversations": true}, "transcripts": {domain.EventAITranscription: true}}
		n := 0
		for _, user := range []int64{0, 7} {
			for _, messages := range []bool{false, true} {
				for ln, lines := range lineSets {
					for _, onlyLines := range []bool{false, true} {
						for _, calls := range []bool{false, true} {
							for _, transcripts := range []bool{false, true} {
								for tn, typ := range typeSets {
									f := &stream.Filter{UserID: user, Messages: messages, Lines: lines, OnlyLines: onlyLines, Calls: calls, Transcripts: transcripts, Types: typ}
									got, err := st.AccountStreamEvents(ctx, account, store.EventPos{}, head, f.Select(), 10000)
									must(t, err)
									want := stream.MatchRows(f, account, all)
									if g := ids(got); !slices.Equal(g, want) {
										t.Errorf("user %d messages %v lines %s (only %v) calls %v transcripts %v types %s: the query let through %d events %v, the rule %d %v",
											user, messages, ln, onlyLines, calls, transcripts, tn, len(g), g, len(want), want)
									}
									n++
								}
							}
						}
					}
				}
			}
		}
		if n != 512 {
			t.Fatalf("%d combinations, want 512", n)
		}
	})
}

// allEvents reads every account's events once n of them can be read (on
// PostgreSQL another test's transaction may hold them back a moment).
func allEvents(t testing.TB, st *store.Store, n int) []store.StreamEvent {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; {
		evs, _, err := st.StreamEvents(ctx, store.EventPos{}, 100000)
		must(t, err)
		if len(evs) >= n {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events readable, want %d", len(evs), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ids(evs []store.StreamEvent) []int64 {
	out := []int64{}
	for _, e := range evs {
		out = append(out, e.Pos.ID)
	}
	return out
}
