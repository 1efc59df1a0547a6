package demo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/sms/smsevent"
	"switchboard/internal/store"
)

// Conversations is how many threads the demo's shared inbox holds.
const Conversations = 300

// FirstCustomer is the other party of the demo's first conversation, on its
// first line (the one every user may see).
const FirstCustomer = "14155552000"

var (
	patientTexts = []string{
		"Hi, can I move my cleaning to next week?",
		"Is Dr. Lee in on Saturday?",
		"I think I lost a filling, it hurts when I chew",
		"Running 10 minutes late, sorry!",
		"Do you take Delta Dental?",
		"Can you send me the invoice again?",
		"Thanks, see you then",
		"What time is my appointment tomorrow?",
		"My son needs a check-up, any openings after school?",
		"Is parking validated?",
		"Yes that works",
		"Can I pay by card over the phone?",
		"The numbing hasn't worn off yet, is that normal?",
		"C",
		"Could you call me back when you have a minute?",
	}
	staffTexts = []string{
		"Hi! We have Tuesday at 10:30 or Thursday at 2:00, which suits you?",
		"You're booked. Reply C to confirm.",
		"Dr. Lee is in on Saturdays from 9 to 1.",
		"Sorry to hear that, can you come in today at 4?",
		"Yes, we're in network with Delta Dental.",
		"Sent to your email on file.",
		"Your appointment is tomorrow at 9:00.",
		"No problem, we'll see you soon.",
		"That's normal for up to 4 hours. Call us if it lasts longer.",
	}
	notes = []string{
		"Prefers mornings",
		"Insurance verified",
		"Called back, left voicemail",
		"Needs follow-up x-ray",
		"Balance paid in full",
	}
)

// seedInbox fills the demo account's shared inbox: Conversations threads over
// the last two weeks, 1:1 and group, read and unread, some resolved,
// assigned and commented, written through the same store calls as real
// traffic (so counts and read state are what they would be).
func seedInbox(ctx context.Context, st *store.Store, accountID int64, res Result) error {
	users, err := st.Users(ctx, accountID)
	if err != nil {
		return err
	}
	roles, err := st.Roles(ctx, accountID)
	if err != nil {
		return err
	}
	all, err := st.Lines(ctx, accountID, true)
	if err != nil {
		return err
	}
	lines := slices.Clone(all)
	// The demo's history spans the last two weeks. The store's clock dates
	// each write; it runs fast while seeding (a second of seeding is a few
	// days of history, capped at now), so that conversations written
	// concurrently, which SQLite groups into shared commits, still get times
	// in the order they were written. Real time again afterwards.
	started := time.Now()
	from := started.UTC().Add(-14 * 24 * time.Hour)
	st.SetClock(func() time.Time {
		if t := from.Add(time.Since(started) * 300_000); t.Before(time.Now()) {
			return t
		}
		return time.Now().UTC()
	})
	defer st.SetClock(func() time.Time { return time.Now().UTC() })

	staff := []int64{res.Users["maria"].ID, res.Users["james"].ID, res.Users["li"].ID, res.Users["sam"].ID}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, 64)
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(7, uint64(w)))
			for {
				i := int(next.Add(1) - 1)
				if i >= Conversations {
					return
				}
				if err := seedThread(ctx, st, r, accountID, lines[i%len(lines)], i, users, roles, staff); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// seedThread writes demo conversation i: a few texts back and forth, then
// its read state, owner, note and resolution.
func seedThread(ctx context.Context, st *store.Store, r *rand.Rand, accountID int64, line domain.Line, i int,
	users []domain.User, roles []domain.Role, staff []int64) error {
	pick := func(list []string) string { return list[r.IntN(len(list))] }
	readers := domain.LineReaders(users, roles, line)
	parts := []string{fmt.Sprintf("1415555%04d", 2000+i)}
	if i%10 == 3 { // a family texting as a group
		parts = append(parts, fmt.Sprintf("1415555%04d", 6000+i), fmt.Sprintf("1415555%04d", 7000+i))
	}
	slices.Sort(parts)
	for m := range 1 + r.IntN(6) {
		if m%2 == 0 {
			from := parts[r.IntN(len(parts))]
			in := store.Inbound{Line: line, From: from, Participants: parts, Body: pick(patientTexts), Readers: readers}
			if err := smsevent.SetReceived(&in); err != nil {
				return err
			}
			if _, err := st.StoreInbound(ctx, in); err != nil {
				return err
			}
			continue
		}
		typ, price := domain.BillingSMS, int64(7900)
		if len(parts) > 1 {
			typ, price = domain.BillingMMS, 20000
		}
		o := &store.Outbound{AccountID: accountID, LineID: line.ID, From: line.Number, To: parts, Participants: strings.Join(parts, ","),
			Body: pick(staffTexts), Type: typ, Units: 1, UnitPrice: price, Price: price, SentBy: readers[r.IntN(len(readers))]}
		id, err := st.CreateOutbound(ctx, o)
		if err != nil {
			return err
		}
		sent, err := smsevent.Sent(id, o.From, o.To)
		if err != nil {
			return err
		}
		if err := st.MarkOutboundSent(ctx, o, fmt.Sprintf("demo-%d", id), sent); err != nil {
			return err
		}
	}
	key := domain.ConversationKey{Line: line, Participants: parts}
	conv, _, err := st.Conversation(ctx, key)
	if err != nil {
		return err
	}
	// Most threads read by most of the team; the newest ones not yet.
	if i < Conversations*8/10 {
		for _, u := range readers {
			if r.IntN(4) > 0 {
				if err := st.MarkThreadRead(ctx, conv.ID, u, store.Change{}); err != nil {
					return err
				}
			}
		}
	}
	ch := store.StateChange{Key: key, Actor: staff[r.IntN(len(staff))]}
	if r.IntN(4) == 0 {
		if _, err := st.Assign(ctx, ch, readers[r.IntN(len(readers))]); err != nil {
			return err
		}
	}
	if r.IntN(6) == 0 {
		if _, err := st.AddComment(ctx, ch, pick(notes)); err != nil {
			return err
		}
	}
	if i < Conversations*6/10 && r.IntN(2) == 0 {
		if _, err := st.Resolve(ctx, ch, ch.Actor, "", ch.Actor); err != nil {
			return err
		}
	}
	return nil
}
