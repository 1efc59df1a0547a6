package main

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// A plan is the inbox decided before anything is written: every thread's
// messages and state, and one order in which to write them, all from a seed.
// Both ways of writing it (the store's methods, and COPY on PostgreSQL)
// follow the same plan, so that they produce the same data; written in the
// plan's order by one writer, the store gives every row the id and time the
// COPY path gives it, and the two databases are the same (equal_test.go).
type plan struct {
	threads  []thread
	steps    []step // the writing order
	messages int
	clock    func(written int) time.Time // the time of a step, after written messages
}

// thread is one conversation: a customer on a line.
type thread struct {
	line     int // index in the account's lines
	number   string
	msgs     []message
	read     bool // read by every user once its messages are in
	actor    int  // index of the user who assigns and resolves it
	assignTo int  // index of the user it is assigned to; -1: unassigned
	resolve  bool
}

// message is one text of a thread.
type message struct {
	in     bool  // received; else sent by sentBy
	body   uint8 // index in texts
	sentBy int16 // index of the sending user
}

// step is one write of the plan: message msg of thread t, or its state
// (stateStep) once all its messages are in.
type step struct {
	thread, msg int32
}

const stateStep = -1

// lanes is how many threads the plan writes at a time, one message each in
// turn, as the store path's 64 concurrent writers did: a thread's messages
// spread over the time its lane takes, the big thread's over most of the
// span, instead of each thread's lying in one instant.
const lanes = 64

var texts = []string{
	"Hi, can I move my appointment to Thursday?",
	"Thanks! See you then.",
	"Is the 3pm slot still free?",
	"Running late, 10 minutes",
	"Can you resend the invoice please?",
}

func customer(i int) string { return fmt.Sprintf(customerFormat, i) }

// customerFormat makes thread i's customer number: a dialable one (New
// York, exchanges 200 to 299), so that the API can send to the generated
// threads (bench/inbox.sh's sender reads it from the result); an exchange
// starting with 0 would be skipped as invalid.
const customerFormat = "12122%06d"

// newPlan decides the inbox o describes. Each thread's content comes from a
// generator seeded with the thread's index, so that it does not depend on
// the order threads are written in.
func newPlan(o options) *plan {
	p := &plan{threads: make([]thread, o.conversations), messages: o.messages, clock: o.clock()}
	for i, n := range threadSizes(o) {
		p.threads[i] = newThread(o, i, n)
	}
	p.steps = interleave(p.threads)
	return p
}

// threadSizes: thread 0 is the big one, thread 1 the small one (10
// messages); the rest share what is left, a few more or less each.
func threadSizes(o options) []int {
	sizes := make([]int, o.conversations)
	sizes[0], sizes[1] = o.big, 10
	rest := o.messages - o.big - 10
	for i := 2; i < o.conversations; i++ {
		sizes[i] = rest / (o.conversations - 2)
	}
	for i := 0; i < rest%(o.conversations-2); i++ {
		sizes[2+i]++
	}
	return sizes
}

// newThread decides thread i of n messages: roughly 60/40 received and
// sent, always opening with a received text; read by every user (most
// threads; never the two compared threads, which every user has unread),
// resolved, assigned, in the shares o gives.
func newThread(o options, i, n int) thread {
	r := rand.New(rand.NewPCG(o.seed, uint64(i)))
	t := thread{line: lineOf(o, i), number: customer(i), msgs: make([]message, n), assignTo: -1}
	for m := range t.msgs {
		msg := message{body: uint8(r.IntN(len(texts)))}
		if m == 0 || r.IntN(10) < 6 {
			msg.in = true
		} else {
			msg.sentBy = int16(r.IntN(o.users))
		}
		t.msgs[m] = msg
	}
	t.read = i >= 2 && r.Float64() < o.readShare
	t.actor = r.IntN(o.users)
	if r.Float64() < o.assigned {
		t.assignTo = r.IntN(o.users)
	}
	t.resolve = r.Float64() < o.resolved
	return t
}

// lineOf is thread i's line: the compared threads are on the first, the
// others on each line in turn.
func lineOf(o options, i int) int {
	if i < 2 {
		return 0
	}
	return i % o.lines
}

// interleave is the writing order: lanes threads at a time, a message of
// each in turn; a thread's state right after its last message, and its lane
// takes the next thread. Threads start in index order, so thread i is the
// i-th conversation created.
func interleave(threads []thread) []step {
	type lane struct{ t, m int }
	var steps []step
	next := 0
	active := make([]lane, 0, lanes)
	for next < len(threads) && len(active) < lanes {
		active = append(active, lane{t: next})
		next++
	}
	for len(active) > 0 {
		kept := active[:0]
		for _, l := range active {
			steps = append(steps, step{int32(l.t), int32(l.m)})
			l.m++
			if l.m < len(threads[l.t].msgs) {
				kept = append(kept, l)
				continue
			}
			steps = append(steps, step{int32(l.t), stateStep})
			if next < len(threads) {
				kept = append(kept, lane{t: next})
				next++
			}
		}
		active = kept
	}
	return steps
}

// clock is the time after written messages: o.days ago to o.end as the
// messages are written, so that conversations spread over days as a real
// inbox's do, or the wall clock when o.days is 0.
func (o options) clock() func(written int) time.Time {
	if o.days <= 0 {
		return func(int) time.Time { return time.Now().UTC() }
	}
	span := time.Duration(o.days) * 24 * time.Hour
	begin := o.end.Add(-span)
	return func(written int) time.Time {
		return begin.Add(time.Duration(float64(span) * float64(written) / float64(o.messages)))
	}
}

// walk calls fn for each step of the plan in order, with the messages
// written before it (a message's index among all messages, for a message).
func (p *plan) walk(fn func(s step, written int) error) error {
	written := 0
	for _, s := range p.steps {
		if err := fn(s, written); err != nil {
			return err
		}
		if s.msg != stateStep {
			written++
		}
	}
	return nil
}
