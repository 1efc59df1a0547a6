package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"switchboard/internal/domain"
	"switchboard/internal/sms/smsevent"
	"switchboard/internal/store"
)

// The COPY path (PostgreSQL): the plan's threads written as the store would
// write them in the plan's order, without the store's per-message
// transactions (about 143 messages a second). What the store derives from
// the messages as they arrive, the conversations' newest message and
// counts, every user's read state and the unread counters, is derived here
// once from the loaded messages by set-based SQL, in one transaction:
//
//   - COPY: conversations (with the state the plan gives them: created,
//     resolved, assigned), messages (delivered, as finish leaves them),
//     their charges (ledger), their AccountSMS events, the assign and
//     resolve activity, the conversations' number suffixes
//     (conversation_numbers), and the read threads (a temporary table).
//   - SQL: every message's words (message_words, from the texts' folded
//     words); each conversation's newest message, inbound count and team
//     read state; each user's inbox_reads row; the unread counters.
//   - then VACUUM (ANALYZE).
//
// Ids are taken from the sequences in the order the store takes them when
// it writes the plan with one writer (conversations as their first message
// arrives, messages, events, charges and activity as written), and times are
// the plan's, so that the two give the same rows (equal_test.go).
// Conversations' and messages' ids are reserved as a block first, so that
// a writer beside it (none is expected) would take ids past the block.
func copyInbox(ctx context.Context, dsn string, p *plan, s setup) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	l, err := newLoader(tx, p, s)
	if err != nil {
		return err
	}
	for _, load := range []func(context.Context) error{
		l.reserveIDs, l.conversations, l.messages, l.charges, l.events, l.activity, l.numbers, l.readThreads,
		l.words, l.derive, l.readState, l.counters,
	} {
		if err := load(ctx); err != nil {
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit (the unread counters fold here): %w", err)
	}
	l.logf("committed")
	// Every row is new: VACUUM sets the visibility map that index-only
	// scans need, and ANALYZE gives the planner the inbox's statistics.
	if _, err := conn.Exec(ctx, `VACUUM (ANALYZE) conversations, messages, message_words, conversation_numbers, inbox_reads,
		inbox_unread_totals, ledger, events, conversation_activity`); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	l.logf("vacuumed and analyzed")
	return nil
}

// loader holds the COPY path's transaction and what it knows of the plan.
type loader struct {
	tx      pgx.Tx
	p       *plan
	s       setup
	started time.Time
	conv0   int64   // the first conversation id; thread t's is conv0 + t
	msg0    int64   // the first message id; the k-th message's is msg0 + k
	firstAt []int64 // per thread, when its first message came (created_at)
	stateAt []int64 // per thread, when its state was written
	in      []store.RowEvent
	to      []string // per thread, its sends' to_numbers
	lineTo  []string // per line, its inbound texts' to_numbers
}

func newLoader(tx pgx.Tx, p *plan, s setup) (*loader, error) {
	l := &loader{tx: tx, p: p, s: s, started: time.Now()}
	n := len(p.threads)
	l.firstAt, l.stateAt, l.to = make([]int64, n), make([]int64, n), make([]string, n)
	l.in = make([]store.RowEvent, n)
	p.walk(func(st step, written int) error {
		switch at := p.clock(written).UnixMicro(); st.msg {
		case 0:
			l.firstAt[st.thread] = at
		case stateStep:
			l.stateAt[st.thread] = at
		}
		return nil
	})
	for t, th := range p.threads {
		l.to[t] = jsonList(th.number)
		var err error
		if l.in[t], _, err = smsevent.Received(s.lines[th.line].Number, th.number, nil); err != nil {
			return nil, err
		}
	}
	for _, line := range s.lines {
		l.lineTo = append(l.lineTo, jsonList(line.Number))
	}
	return l, nil
}

// jsonList is the JSON of the one-number list the store writes to a
// message's to_numbers.
func jsonList(number string) string {
	b, _ := json.Marshal([]string{number})
	return string(b)
}

func (l *loader) logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "inboxgen: "+format+" (%s)\n", append(args, time.Since(l.started).Round(100*time.Millisecond))...)
}

// reserveIDs takes the conversations' and the messages' ids from their
// sequences, as the store's inserts would, each block at once: the first
// id is the sequence's next, and the sequence moves to the block's last.
func (l *loader) reserveIDs(ctx context.Context) error {
	const block = `SELECT setval(pg_get_serial_sequence($1, 'id'), nextval(pg_get_serial_sequence($1, 'id')) + $2 - 1) - $2 + 1`
	if err := l.tx.QueryRow(ctx, block, "conversations", int64(len(l.p.threads))).Scan(&l.conv0); err != nil {
		return fmt.Errorf("reserve conversation ids: %w", err)
	}
	if err := l.tx.QueryRow(ctx, block, "messages", int64(l.p.messages)).Scan(&l.msg0); err != nil {
		return fmt.Errorf("reserve message ids: %w", err)
	}
	return nil
}

func (l *loader) lastConv() int64 { return l.conv0 + int64(len(l.p.threads)) - 1 }
func (l *loader) lastMsg() int64  { return l.msg0 + int64(l.p.messages) - 1 }

// copy copies the rows next makes (nil: no more) into table, reporting
// progress every million rows and at the end.
func (l *loader) copy(ctx context.Context, table string, cols []string, next func() []any) error {
	rows := 0
	n, err := l.tx.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromFunc(func() ([]any, error) {
		row := next()
		if row != nil {
			if rows++; rows%1_000_000 == 0 {
				l.logf("%s: %d rows", table, rows)
			}
		}
		return row, nil
	}))
	if err != nil {
		return fmt.Errorf("copy %s: %w", table, err)
	}
	l.logf("%s: %d rows copied", table, n)
	return nil
}

// copySteps copies into table the rows rowsOf appends to rows for each
// step of the plan (none, one or more), in the plan's order. written is the
// messages before the step: a message step's is its index among all
// messages.
func (l *loader) copySteps(ctx context.Context, table string, cols []string, rowsOf func(s step, written int, rows [][]any) [][]any) error {
	i, written := 0, 0
	var buf [][]any
	return l.copy(ctx, table, cols, func() []any {
		for len(buf) == 0 && i < len(l.p.steps) {
			s, k := l.p.steps[i], written
			if i++; s.msg != stateStep {
				written++
			}
			buf = rowsOf(s, k, buf[:0])
		}
		if len(buf) == 0 {
			return nil
		}
		row := buf[0]
		buf = buf[1:]
		return row
	})
}

// conversations: threads start in index order (plan.interleave), so thread
// t is the t-th conversation created. Their newest message and counts come
// later (derive).
func (l *loader) conversations(ctx context.Context) error {
	t := 0
	return l.copy(ctx, "conversations", []string{"id", "account_id", "line_id", "participants", "created_at", "resolved_at", "resolved_by", "assigned_to"},
		func() []any {
			if t == len(l.p.threads) {
				return nil
			}
			th := &l.p.threads[t]
			row := []any{l.conv0 + int64(t), l.s.account, l.s.lines[th.line].ID, th.number, l.firstAt[t], nil, nil, nil}
			if th.resolve {
				row[5], row[6] = l.stateAt[t], l.s.users[th.actor]
			}
			if th.assignTo >= 0 {
				row[7] = l.s.users[th.assignTo]
			}
			t++
			return row
		})
}

// messages: an inbound text as StoreInbound writes it; a send as
// CreateOutbound and MarkOutboundSent leave it, with the receipt finish
// gives it.
func (l *loader) messages(ctx context.Context) error {
	cols := []string{"id", "account_id", "conversation_id", "line_id", "direction", "from_number", "to_numbers", "body", "type", "status",
		"units", "unit_price", "price", "sent_by", "carrier_ref", "delivery_status", "delivery_error", "delivery_at", "created_at"}
	return l.copySteps(ctx, "messages", cols, func(s step, k int, rows [][]any) [][]any {
		if s.msg == stateStep {
			return rows
		}
		th := &l.p.threads[s.thread]
		msg, line, at := th.msgs[s.msg], l.s.lines[th.line], l.p.clock(k).UnixMicro()
		row := []any{l.msg0 + int64(k), l.s.account, l.conv0 + int64(s.thread), line.ID, "", "", "", texts[msg.body], domain.BillingSMS, "",
			0, 0, 0, nil, "", nil, nil, nil, at}
		if msg.in {
			row[4], row[5], row[6], row[9] = "in", th.number, l.lineTo[th.line], domain.StatusReceived
			return append(rows, row)
		}
		row[4], row[5], row[6], row[9] = "out", line.Number, l.to[s.thread], domain.StatusSent
		row[10], row[11], row[12], row[13], row[14] = 1, unitPrice, unitPrice, l.s.users[msg.sentBy], carrierRef
		row[15], row[16], row[17] = "delivered", "", at
		return append(rows, row)
	})
}

// charges: the ledger row MarkOutboundSent writes for each send.
func (l *loader) charges(ctx context.Context) error {
	return l.copySteps(ctx, "ledger", []string{"account_id", "message_id", "amount", "currency", "description", "created_at"},
		func(s step, k int, rows [][]any) [][]any {
			if s.msg == stateStep || l.p.threads[s.thread].msgs[s.msg].in {
				return rows
			}
			line := l.s.lines[l.p.threads[s.thread].line]
			return append(rows, []any{l.s.account, l.msg0 + int64(k), unitPrice, "USD", domain.BillingSMS + " from " + line.Number, l.p.clock(k).UnixMicro()})
		})
}

// events: each message's AccountSMS event (received, or sent), built by
// package smsevent as the store path's callers build them. The id and the
// writing transaction (xid) are the columns' defaults.
func (l *loader) events(ctx context.Context) error {
	return l.copySteps(ctx, "events", []string{"account_id", "type", "payload", "created_at"}, func(s step, k int, rows [][]any) [][]any {
		if s.msg == stateStep {
			return rows
		}
		th, id := &l.p.threads[s.thread], l.msg0+int64(k)
		ev := l.in[s.thread].With(id)
		if !th.msgs[s.msg].in {
			ev, _ = smsevent.Sent(id, l.s.lines[th.line].Number, []string{th.number})
		}
		return append(rows, []any{l.s.account, ev.Type, string(ev.Payload), l.p.clock(k).UnixMicro()})
	})
}

// activity: Assign's and then Resolve's row, for the threads the plan
// assigns and resolves, at the thread's state step.
func (l *loader) activity(ctx context.Context) error {
	return l.copySteps(ctx, "conversation_activity", []string{"account_id", "conversation_id", "kind", "actor_id", "subject_id", "created_at"},
		func(s step, _ int, rows [][]any) [][]any {
			if s.msg != stateStep {
				return rows
			}
			th, conv, at := &l.p.threads[s.thread], l.conv0+int64(s.thread), l.stateAt[s.thread]
			actor := l.s.users[th.actor]
			if th.assignTo >= 0 {
				rows = append(rows, []any{l.s.account, conv, domain.ActivityAssign, actor, l.s.users[th.assignTo], at})
			}
			if th.resolve {
				rows = append(rows, []any{l.s.account, conv, domain.ActivityResolve, actor, actor, at})
			}
			return rows
		})
}
