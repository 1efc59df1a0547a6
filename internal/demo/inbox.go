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

// turn is one text of a script: who writes it (in, the patient; out, the
// clinic) and what; "{name}" is the patient's first name.
type turn struct {
	in   bool
	text string
}

// scripts are the threads as they run when nobody stops them.
var scripts = [][]turn{
	{{true, "Hi, can I move my cleaning to next week?"}, {false, "Hi {name}! We have Tuesday at 10:30 or Thursday at 2:00, which suits you?"},
		{true, "Tuesday at 10:30 please"}, {false, "You're booked for Tuesday at 10:30. Reply C to confirm."}, {true, "C"}, {false, "Thanks, see you then!"}},
	{{true, "Is Dr. Lee in on Saturday?"}, {false, "Hi {name}, Dr. Lee is in on Saturdays from 9 to 1."},
		{true, "Great, can I get 11?"}, {false, "Saturday at 11 with Dr. Lee is booked."}, {true, "Thanks, see you then"}},
	{{true, "I think I lost a filling, it hurts when I chew"}, {false, "Sorry to hear that, {name}. Can you come in today at 4?"},
		{true, "Yes that works"}, {false, "See you at 4. Avoid chewing on that side until then."}},
	{{true, "Do you take Delta Dental?"}, {false, "Yes, we're in network with Delta Dental."}, {true, "Great, thank you!"}},
	{{true, "Can you send me the invoice again?"}, {false, "Sent to your email on file, {name}."}, {true, "Got it, thanks"}},
	{{false, "Hi {name}, this is Acme Dental: your cleaning is tomorrow at 9:00. Reply C to confirm."}, {true, "C"}, {false, "Thanks, see you tomorrow!"}},
	{{true, "My son needs a check-up, any openings after school?"}, {false, "Hi {name}! Wednesday at 3:45 or Friday at 4:15?"},
		{true, "Friday please"}, {false, "Friday at 4:15 is booked for him."}, {true, "Thanks, see you then"}},
	{{true, "The numbing hasn't worn off yet, is that normal?"}, {false, "That's normal for up to 4 hours, {name}. Call us if it lasts longer."}, {true, "Ok, thank you"}},
	{{true, "Running 10 minutes late, sorry!"}, {false, "No problem, {name}, we'll see you soon."}},
	{{true, "Is parking validated?"}, {false, "Yes, bring your ticket to the front desk."}, {true, "Perfect, thanks"}},
	{{true, "Could you call me back when you have a minute?"}, {false, "Of course, {name}. We'll call you within the hour."}},
	{{true, "Can I pay by card over the phone?"}, {false, "Yes, call us at (415) 555-0100 any time during office hours."}, {true, "Will do, thanks"}},
}

var notes = []string{
	"Prefers mornings",
	"Insurance verified",
	"Called back, left voicemail",
	"Needs follow-up x-ray",
	"Balance paid in full",
}

// textFor is the turn's text for the patient with number n.
func (l turn) textFor(n string) string { return strings.ReplaceAll(l.text, "{name}", firstName(n)) }

// A plan is one demo conversation worked out before anything is written:
// its texts and what the team did, each at its time.
type plan struct {
	i       int
	line    domain.Line
	parts   []string
	readers []int64
	texts   []planned
	// complete: the script ran to its end (not cut off by now).
	complete bool
	actor    int64 // who assigns, comments and resolves: one of the readers
	assignee int64
	assignAt time.Time // zero: not assigned
	comment  string
	noteAt   time.Time // zero: no note
	resolve  time.Time // zero: not resolved
}

// planned is one text of a plan.
type planned struct {
	at     time.Time
	in     bool
	from   string // the patient who wrote it (in)
	body   string
	sentBy int64 // out
	id     int64 // once written
}

// write is one timed write of the seeding: its time and what it does.
type write struct {
	at time.Time
	do func(ctx context.Context) error
}

// seedInbox fills the demo account's shared inbox: Conversations threads over
// the last month, 1:1 and group, each running in order (question, answer,
// confirmation) at times a small clinic keeps (its replies in office hours,
// the patients' texts mostly then too), read and unread, some resolved,
// assigned and commented, written through the same store calls as real
// traffic (so counts and read state are what they would be). Every text the
// clinic sent has its delivery receipt, seconds after the send.
func seedInbox(ctx context.Context, st *store.Store, accountID int64) error {
	users, err := st.Users(ctx, accountID)
	if err != nil {
		return err
	}
	roles, err := st.Roles(ctx, accountID)
	if err != nil {
		return err
	}
	lines, err := st.Lines(ctx, accountID, true)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	r := rand.New(rand.NewPCG(7, 32))
	plans := make([]*plan, Conversations)
	for i := range plans {
		p := &plan{i: i, line: lines[i%len(lines)]}
		p.readers = domain.LineReaders(users, roles, p.line)
		p.parts = []string{patientNumber(i)}
		if i%10 == 3 { // a family texting as a group
			p.parts = append(p.parts, fmt.Sprintf("1415555%04d", 6000+i), fmt.Sprintf("1415555%04d", 7000+i))
		}
		slices.Sort(p.parts)
		p.actor = p.readers[r.IntN(len(p.readers))] // someone who may see the line
		planThread(r, p, now)
		plans[i] = p
	}
	if err := writeInOrder(ctx, st, accountID, plans); err != nil {
		return err
	}
	return settle(ctx, st, plans, now)
}

// planThread picks p's times: the thread starts somewhere in the last 30
// days, the clinic answers within minutes while it is open (the next morning
// when a patient texted after hours), the patient within the hour; whatever
// would fall after now has not happened yet.
func planThread(r *rand.Rand, p *plan, now time.Time) {
	script := scripts[r.IntN(len(scripts))]
	var at time.Time
	for at.IsZero() || at.After(now) {
		day := now.Add(-time.Duration(r.IntN(30)) * 24 * time.Hour).In(clinic)
		at = time.Date(day.Year(), day.Month(), day.Day(), 8+r.IntN(10), r.IntN(60), r.IntN(60), 0, clinic)
		if !script[0].in || r.IntN(8) > 0 {
			at = nextOpen(at)
		} else { // a patient writing in the evening
			at = time.Date(day.Year(), day.Month(), day.Day(), 18+r.IntN(4), r.IntN(60), r.IntN(60), 0, clinic)
		}
	}
	greeted := p.parts[0] // the patient the clinic writes to first
	for k, l := range script {
		if k > 0 {
			if l.in {
				at = at.Add(time.Duration(60+r.IntN(40*60)) * time.Second)
			} else {
				at = nextOpen(at.Add(time.Duration(120+r.IntN(20*60)) * time.Second))
			}
		}
		if at.After(now) {
			return
		}
		t := planned{at: at.UTC().Add(time.Duration(r.IntN(1000)) * time.Millisecond), in: l.in}
		if l.in {
			t.from = p.parts[r.IntN(len(p.parts))]
			greeted = t.from
			t.body = l.text
		} else {
			t.sentBy = p.readers[r.IntN(len(p.readers))]
			t.body = l.textFor(greeted)
		}
		p.texts = append(p.texts, t)
	}
	p.complete = true
	last := p.texts[len(p.texts)-1].at
	first := p.texts[0].at
	// Someone takes a quarter of the threads, and notes something on a
	// few, while answering the first text.
	if r.IntN(4) == 0 && first.Add(time.Minute).Before(now) {
		p.assignee = p.readers[r.IntN(len(p.readers))]
		p.assignAt = first.Add(time.Minute)
	}
	if r.IntN(6) == 0 && first.Add(2*time.Minute).Before(now) {
		p.comment = notes[r.IntN(len(notes))]
		p.noteAt = first.Add(2 * time.Minute)
	}
	// Finished threads are mostly resolved, a few minutes after the last
	// text, while the office is open; the first stays open for the banner's
	// resolve example.
	if p.i != 0 && r.IntN(3) > 0 {
		if at := nextOpen(last.Add(time.Duration(60+r.IntN(15*60)) * time.Second)); at.Before(now) {
			p.resolve = at.UTC()
		}
	}
}

// writeInOrder writes every plan's texts and the team's actions in the order
// of their times, each dated by the store's clock set to its time: one at a
// time, so that each gets its own (a group of writes shares one time).
func writeInOrder(ctx context.Context, st *store.Store, accountID int64, plans []*plan) error {
	var writes []write
	for _, p := range plans {
		key := domain.ConversationKey{Line: p.line, Participants: p.parts}
		ch := store.StateChange{Key: key, Actor: p.actor}
		for k := range p.texts {
			t := &p.texts[k]
			writes = append(writes, write{t.at, func(ctx context.Context) error { return writeText(ctx, st, accountID, p, t) }})
		}
		if !p.assignAt.IsZero() {
			writes = append(writes, write{p.assignAt, func(ctx context.Context) error { _, err := st.Assign(ctx, ch, p.assignee); return err }})
		}
		if !p.noteAt.IsZero() {
			writes = append(writes, write{p.noteAt, func(ctx context.Context) error { _, err := st.AddComment(ctx, ch, p.comment); return err }})
		}
		if !p.resolve.IsZero() {
			writes = append(writes, write{p.resolve, func(ctx context.Context) error { _, err := st.Resolve(ctx, ch, ch.Actor, "", ch.Actor); return err }})
		}
	}
	slices.SortStableFunc(writes, func(a, b write) int { return a.at.Compare(b.at) })
	var clock atomic.Int64
	st.SetClock(func() time.Time { return time.UnixMicro(clock.Load()).UTC() })
	defer st.SetClock(func() time.Time { return time.Now().UTC() })
	for _, w := range writes {
		clock.Store(w.at.UnixMicro())
		if err := w.do(ctx); err != nil {
			return err
		}
	}
	return nil
}

// writeText stores one planned text, received or sent.
func writeText(ctx context.Context, st *store.Store, accountID int64, p *plan, t *planned) error {
	if t.in {
		in := store.Inbound{Line: p.line, From: t.from, Participants: p.parts, Body: t.body, Readers: p.readers}
		if err := smsevent.SetReceived(&in); err != nil {
			return err
		}
		id, err := st.StoreInbound(ctx, in)
		t.id = id
		return err
	}
	typ, price := domain.BillingSMS, int64(7900)
	if len(p.parts) > 1 {
		typ, price = domain.BillingMMS, 20000
	}
	o := &store.Outbound{AccountID: accountID, LineID: p.line.ID, From: p.line.Number, To: p.parts, Participants: strings.Join(p.parts, ","),
		Body: t.body, Type: typ, Units: 1, UnitPrice: price, Price: price, SentBy: t.sentBy}
	id, err := st.CreateOutbound(ctx, o)
	if err != nil {
		return err
	}
	t.id = id
	sent, err := smsevent.Sent(id, o.From, o.To)
	if err != nil {
		return err
	}
	return st.MarkOutboundSent(ctx, o, fmt.Sprintf("demo-%d", id), sent)
}

// settle writes what carries its own time or none worth showing, many at
// once: each sent text's receipt (delivered 2 to 6 seconds after the send),
// and who read what. A thread is read by most of the team unless its last
// text came from a patient in the last day (the newest are not read yet);
// a resolved one always by whoever resolved it.
func settle(ctx context.Context, st *store.Store, plans []*plan, now time.Time) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, 32)
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(11, uint64(w)))
			for {
				i := int(next.Add(1) - 1)
				if i >= len(plans) {
					return
				}
				if err := settlePlan(ctx, st, r, plans[i], now); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func settlePlan(ctx context.Context, st *store.Store, r *rand.Rand, p *plan, now time.Time) error {
	for _, t := range p.texts {
		if t.in {
			continue
		}
		at := t.at.Add(time.Duration(2000+r.IntN(4000)) * time.Millisecond)
		if at.After(now) {
			continue // the receipt is still on its way: the sim reports it at start
		}
		sent, err := smsevent.Sent(t.id, p.line.Number, p.parts)
		if err != nil {
			return err
		}
		delivery, err := smsevent.Delivery(t.id, p.line.Number, p.parts, "delivered", "", at)
		if err != nil {
			return err
		}
		if err := st.ApplyReceipt(ctx, store.Receipt{ID: t.id, Status: "delivered", At: at, Sent: sent, Delivery: delivery}); err != nil {
			return err
		}
	}
	// Whoever resolved a thread read it.
	last := p.texts[len(p.texts)-1]
	if last.in && now.Sub(last.at) < 24*time.Hour && p.resolve.IsZero() {
		return nil
	}
	conv, _, err := st.Conversation(ctx, domain.ConversationKey{Line: p.line, Participants: p.parts})
	if err != nil {
		return err
	}
	for _, u := range p.readers {
		if r.IntN(4) > 0 || (u == p.actor && !p.resolve.IsZero()) {
			if err := st.MarkThreadRead(ctx, conv.ID, u, store.Change{}); err != nil {
				return err
			}
		}
	}
	return nil
}
