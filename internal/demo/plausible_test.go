package demo

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store"
	"switchboard/internal/store/storetest"
)

// TestDemoLooksReal holds the demo's data to a plausible month of a small
// clinic (issue 32): threads run in order at office-hour times spread over
// the last month and none in the future, every sent text is delivered
// seconds after it was sent, each number has one name in the calls and the
// texts, and each recording lasts its leg's talk time.
func TestDemoLooksReal(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		res, err := Seed(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		monthAgo := now.Add(-31 * 24 * time.Hour)
		recs, _, err := BuildCalls(res, 3000, now)
		if err != nil {
			t.Fatal(err)
		}
		names := callNames(t, recs, monthAgo, now)

		// Every message, by conversation in id order.
		threads := map[int64][]domain.Message{}
		var order []int64
		for id := int64(1); ; id++ {
			m, err := st.Message(ctx, res.AccountID, id)
			if domain.IsNotFound(err) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if threads[m.ConversationID] == nil {
				order = append(order, m.ConversationID)
			}
			threads[m.ConversationID] = append(threads[m.ConversationID], m)
		}
		if len(threads) != Conversations {
			t.Fatalf("%d conversations with messages, want %d", len(threads), Conversations)
		}
		var first, last time.Time
		for _, conv := range order {
			msgs := threads[conv]
			for k, m := range msgs {
				if first.IsZero() || m.CreatedAt.Before(first) {
					first = m.CreatedAt
				}
				if m.CreatedAt.After(last) {
					last = m.CreatedAt
				}
				if m.CreatedAt.Before(monthAgo) || m.CreatedAt.After(now) {
					t.Errorf("message %d dated %v: not within the last month", m.ID, m.CreatedAt)
				}
				if k > 0 && !m.CreatedAt.After(msgs[k-1].CreatedAt) {
					t.Errorf("conversation %d: message %d (%v) is not after message %d (%v)", conv, m.ID, m.CreatedAt, msgs[k-1].ID, msgs[k-1].CreatedAt)
				}
				if m.Direction == "out" {
					checkSent(t, m, now)
				}
			}
			checkScript(t, msgs, names)
		}
		if first.After(now.Add(-21*24*time.Hour)) || last.Before(now.Add(-3*24*time.Hour)) {
			t.Errorf("the texts run from %v to %v: want them spread over the month up to the last days", first, last)
		}
	})
}

// checkSent holds a sent text to office hours and to its receipt, delivered
// seconds after the send (a send of the last seconds may still wait for it).
func checkSent(t *testing.T, m domain.Message, now time.Time) {
	t.Helper()
	local := m.CreatedAt.In(clinic)
	open := map[time.Weekday][2]int{time.Saturday: {9, 13}, time.Sunday: {0, 0}}[local.Weekday()]
	if local.Weekday() != time.Saturday && local.Weekday() != time.Sunday {
		open = [2]int{8, 18}
	}
	if local.Hour() < open[0] || local.Hour() >= open[1] {
		t.Errorf("message %d sent %v, outside office hours", m.ID, local)
	}
	if now.Sub(m.CreatedAt) < 10*time.Second && m.DeliveryAt == nil {
		return
	}
	if m.DeliveryStatus != "delivered" || m.DeliveryAt == nil {
		t.Errorf("message %d sent %v: delivery %q at %v, want delivered", m.ID, m.CreatedAt, m.DeliveryStatus, m.DeliveryAt)
		return
	}
	if d := m.DeliveryAt.Sub(m.CreatedAt); d < time.Second || d > 10*time.Second || m.DeliveryAt.After(now) {
		t.Errorf("message %d sent %v, delivered %v: want it delivered seconds after the send", m.ID, m.CreatedAt, *m.DeliveryAt)
	}
}

// checkScript holds a thread to the start of one script, in its order,
// greeting the patient by the name the calls give their number.
func checkScript(t *testing.T, msgs []domain.Message, names map[string]string) {
	t.Helper()
	var patients []string // the thread's patients, from its messages
	for _, m := range msgs {
		if m.Direction == "in" {
			patients = append(patients, m.From)
		} else {
			patients = append(patients, m.To...)
		}
	}
	greetings := map[string]bool{}
	for _, n := range patients {
		name := names[n]
		if name == "" {
			name = patientName(n)
		}
		greetings[strings.Fields(name)[0]] = true
	}
	for _, script := range scripts {
		if len(msgs) > len(script) {
			continue
		}
		ok := true
		for k, m := range msgs {
			turn := script[k]
			matched := turn.in == (m.Direction == "in") && turn.text == m.Body
			for g := range greetings {
				matched = matched || (!turn.in && m.Direction == "out" && strings.ReplaceAll(turn.text, "{name}", g) == m.Body)
			}
			ok = ok && matched
		}
		if ok {
			return
		}
	}
	var got []string
	for _, m := range msgs {
		got = append(got, m.Direction+": "+m.Body)
	}
	t.Errorf("conversation %d is not a script in order, with its patients' names %v:\n%s", msgs[0].ConversationID, greetings, strings.Join(got, "\n"))
}

// callNames checks the calls' dates and recordings and returns the name of
// each patient's number, which must be one per number and differ between
// numbers.
func callNames(t *testing.T, recs []*domain.CallRecord, monthAgo, now time.Time) map[string]string {
	t.Helper()
	names := map[string]string{}
	numbers := map[string]string{}
	recorded := 0
	for _, rec := range recs {
		c := rec.Call
		if c.StartTime.Before(monthAgo) || c.EndTime == nil || c.EndTime.After(now) {
			t.Errorf("call %s from %v to %v: not within the last month", c.ID, c.StartTime, c.EndTime)
		}
		number, name := c.CallerNumber, c.CallerName
		if c.Direction == domain.CallOutbound {
			number, name = c.CalledNumber, c.CalledName
		}
		if prev, ok := names[number]; ok && prev != name {
			t.Errorf("number %s is %q in one call and %q in another", number, prev, name)
		}
		if prev, ok := numbers[name]; ok && prev != number {
			t.Errorf("%q is the name of %s and %s", name, prev, number)
		}
		if name == "" {
			t.Errorf("call %s: number %s has no name", c.ID, number)
		}
		names[number], numbers[name] = name, number
		for _, l := range rec.Legs {
			if l.Recording == nil {
				continue
			}
			recorded++
			wav := l.Recording.Content
			if len(wav) < 44 || string(wav[:4]) != "RIFF" {
				t.Fatalf("leg %s: the recording is no WAV file", l.UniqueID)
			}
			perSecond, size := binary.LittleEndian.Uint32(wav[28:]), binary.LittleEndian.Uint32(wav[40:])
			if got := time.Duration(size) * time.Second / time.Duration(perSecond); got != time.Duration(l.TalkTimeSeconds)*time.Second || int(size) != len(wav)-44 {
				t.Errorf("leg %s: a recording of %v (%d bytes of audio) for %d s of talk", l.UniqueID, got, len(wav)-44, l.TalkTimeSeconds)
			}
		}
	}
	if recorded == 0 {
		t.Error("no call is recorded")
	}
	return names
}

// TestDemoResolvedThreadsAreRead: nobody resolves a thread they have not
// read, so no resolved demo thread is unread for the team.
func TestDemoResolvedThreadsAreRead(t *testing.T) {
	st := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	res, err := Seed(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := st.ListConversations(ctx, store.ConversationFilter{AccountID: res.AccountID, Resolved: true, Unread: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(resolved) > 0 {
		t.Errorf("%d resolved threads are unread for the team, e.g. %+v", len(resolved), resolved[0])
	}
}
