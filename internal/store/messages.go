package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// Outbound is the intent to send one message, written before the carrier is called.
type Outbound struct {
	AccountID    int64
	LineID       int64
	From         string
	To           []string
	Participants string // sorted, comma-joined To: the conversation key
	Body         string
	Media        []string
	// Hosted are the files a direct send uploaded for Media (one each, in
	// the blob store already): recorded with the intent, their bytes
	// reserved against the account's hosted-media quota (409 beyond it).
	// Empty when Media is hosted already (a scheduled send).
	Hosted    []domain.HostedMedia
	Type      string
	Units     int
	UnitPrice int64
	Price     int64
	SentBy    int64
	// Idempotency links the intent to an Idempotency-Key record and stores
	// the send's answer there, in the intent's transaction, so that a crash
	// after the carrier accepted still replays correctly.
	Idempotency *IdempotencyLink

	id, convID int64 // set by CreateOutbound
	// scheduleID is the scheduled message the intent dispatches (set by
	// BeginScheduledSend): recording it sent also ends the schedule.
	scheduleID int64
}

// IdempotencyLink ties a send to its Idempotency-Key record: from then on
// the key answers from the message (see BeginIdempotent), with Data (the
// caller's, not read here) beside the message id.
type IdempotencyLink struct {
	Claim *IdempotencyClaim
	Data  []byte
}

// CreateOutbound writes the intent: the conversation (created if new) and the
// message in status pending. Nothing is charged yet.
func (s *Store) CreateOutbound(ctx context.Context, o *Outbound) (int64, error) {
	to, err := json.Marshal(o.To)
	if err != nil {
		return 0, err
	}
	media, err := json.Marshal(nonNilStrings(o.Media))
	if err != nil {
		return 0, err
	}
	var id int64
	err = s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		tx.Touches(o.AccountID)
		id, err = createOutbound(ctx, tx, o, string(to), string(media))
		return err
	})
	return id, err
}

// createOutbound is CreateOutbound's transaction; to and media are the JSON
// of o.To and o.Media.
func createOutbound(ctx context.Context, tx *Tx, o *Outbound, to, media string) (int64, error) {
	if len(o.Media) > 0 {
		// First, so that a send beyond the quota fails before it writes.
		if err := recordOutboundMedia(ctx, tx, o); err != nil {
			return 0, err
		}
	}
	var sentBy any
	if o.SentBy != 0 {
		sentBy = o.SentBy
	}
	var id, convID int64
	err := sql.ErrNoRows
	if tx.Engine() == Postgres {
		id, convID, err = createOutboundPG(ctx, tx, o, to, media, sentBy)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return 0, fmt.Errorf("store: create message: %w", err)
		}
	}
	if err != nil {
		if convID, err = upsertConversation(ctx, tx, o.AccountID, o.LineID, o.Participants); err != nil {
			return 0, err
		}
		id, err = tx.Insert(ctx, insertOutbound+`
			VALUES (?, ?, ?, 'out', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			o.AccountID, convID, o.LineID, o.From, to, o.Body, media, o.Type, domain.StatusPending, o.Units, o.UnitPrice, o.Price, sentBy, tx.Now())
		if err != nil {
			return 0, fmt.Errorf("store: create message: %w", err)
		}
	}
	o.id, o.convID = id, convID
	if err := indexMessage(ctx, tx, id, o.Body); err != nil {
		return 0, err
	}
	if o.Idempotency != nil {
		c := o.Idempotency.Claim
		res, err := tx.Exec(ctx, `UPDATE idempotency_keys SET message_id = ?, response = ? WHERE account_id = ? AND key = ? AND created_at = ? AND state = 'running' AND message_id IS NULL`,
			id, o.Idempotency.Data, c.AccountID, c.Key, c.at)
		if err != nil {
			return 0, fmt.Errorf("store: link idempotency key: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			// Overtaken by a retry: no intent, so nothing is sent twice.
			return 0, errClaimLost
		}
	}
	return id, nil
}

// insertOutbound starts the insert of an outbound message, on either path
// of createOutbound.
const insertOutbound = `INSERT INTO messages (account_id, conversation_id, line_id, direction, from_number, to_numbers, body, media, type, status, units, unit_price, price, sent_by, created_at)`

// createOutboundPG finds o's conversation and writes its message in one
// statement (one round trip): sql.ErrNoRows when the conversation is new.
func createOutboundPG(ctx context.Context, tx *Tx, o *Outbound, to, media string, sentBy any) (id, convID int64, err error) {
	err = tx.QueryRow(ctx, insertOutbound+`
		SELECT ?, c.id, ?, 'out', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM conversations c WHERE c.line_id = ? AND c.participants = ?
		RETURNING id, conversation_id`,
		o.AccountID, o.LineID, o.From, to, o.Body, media, o.Type, domain.StatusPending, o.Units, o.UnitPrice, o.Price, sentBy, tx.Now(),
		o.LineID, o.Participants).Scan(&id, &convID)
	return id, convID, err
}

func upsertConversation(ctx context.Context, tx *Tx, accountID, lineID int64, participants string) (int64, error) {
	// Most messages belong to a conversation that exists: a lookup by the
	// unique key is cheaper than an upsert.
	var id int64
	err := tx.QueryRow(ctx, `SELECT id FROM conversations WHERE line_id = ? AND participants = ?`, lineID, participants).Scan(&id)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("store: find conversation: %w", err)
	}
	err = tx.QueryRow(ctx, `INSERT INTO conversations (account_id, line_id, participants, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (line_id, participants) DO UPDATE SET account_id = excluded.account_id RETURNING id`,
		accountID, lineID, participants, tx.Now()).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store: upsert conversation: %w", err)
	}
	// New (or just created by a concurrent write, which indexed it too:
	// the insert below then adds nothing).
	return id, indexConversation(ctx, tx, accountID, id, participants)
}

// MarkSent records that the carrier accepted message id: status sent, the
// charge in the ledger, the AccountSMS event and the conversation's newest
// message, all in one transaction. It is idempotent, and it also accepts a
// message that was abandoned (evidence of acceptance arrived late). sent is
// the message's message.sent event, built by the caller (the sms capability),
// written only if this call is what moves the message to sent.
func (s *Store) MarkSent(ctx context.Context, id int64, ref string, sent domain.Event) error {
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error { return markSent(ctx, tx, id, ref, nil, sent) })
}

// MarkOutboundSent is MarkSent for the intent o that CreateOutbound wrote in
// this process: what the charge needs is already known, so the single writer
// only runs the statements (the send path's hot write).
func (s *Store) MarkOutboundSent(ctx context.Context, o *Outbound, ref string, sent domain.Event) error {
	if o.id == 0 {
		return errors.New("store: MarkOutboundSent needs an intent written by CreateOutbound")
	}
	f := &sentFacts{account: o.AccountID, conv: o.convID, price: o.Price, typ: o.Type, from: o.From}
	return s.db.Write(ctx, sqldb.KeepCache|sqldb.Contended, func(tx *Tx) error {
		tx.Touches(o.AccountID)
		if err := markSent(ctx, tx, o.id, ref, f, sent); err != nil {
			return err
		}
		if o.scheduleID != 0 {
			return finishSchedule(ctx, tx, o.scheduleID, domain.ScheduleSent)
		}
		return nil
	})
}

// sentFacts is what recording a charge needs to know about the message.
type sentFacts struct {
	account, conv, price int64
	typ, from            string
}

// markSent moves message id to sent, charges it and writes its event sent.
// known, when not nil, holds the message's facts; otherwise they are read
// with the update.
func markSent(ctx context.Context, tx *Tx, id int64, ref string, known *sentFacts, sent domain.Event) error {
	if known != nil && tx.Engine() == Postgres && !skipEvents {
		return markSentPG(ctx, tx, id, ref, known, sent)
	}
	// Only a pending or abandoned message moves to sent: a sent one was
	// already charged, a failed one was reported unsent to the client.
	const update = `UPDATE messages SET status = ?, carrier_ref = ? WHERE id = ? AND direction = 'out' AND status IN (?, ?)`
	args := []any{domain.StatusSent, ref, id, domain.StatusPending, domain.StatusAbandoned}
	f := known
	var err error
	if f != nil {
		var res sql.Result
		if res, err = tx.Exec(ctx, update, args...); err == nil {
			if n, _ := res.RowsAffected(); n == 0 {
				err = sql.ErrNoRows
			}
		}
	} else {
		f = &sentFacts{}
		err = tx.QueryRow(ctx, update+` RETURNING account_id, conversation_id, price, type, from_number`, args...).
			Scan(&f.account, &f.conv, &f.price, &f.typ, &f.from)
	}
	if errors.Is(err, sql.ErrNoRows) {
		// Already sent (or refused). A receipt may have recorded it before the
		// carrier's answer did; keep the carrier's reference then.
		if ref != "" {
			if err := tx.ExecLater(ctx, `UPDATE messages SET carrier_ref = ? WHERE id = ? AND carrier_ref = '' AND status = ?`, ref, id, domain.StatusSent); err != nil {
				return fmt.Errorf("store: carrier ref: %w", err)
			}
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: mark sent: %w", err)
	}
	tx.Touches(f.account)
	// The status update above is the one statement whose outcome decides
	// the rest; these follow in one pipeline (ExecLater).
	if err := tx.ExecLater(ctx, `INSERT INTO ledger (account_id, message_id, amount, currency, description, created_at) VALUES (?, ?, ?, 'USD', ?, ?)`,
		f.account, id, f.price, f.typ+" from "+f.from, tx.Now()); err != nil {
		return fmt.Errorf("store: charge: %w", err)
	}
	if err := leadConversation(ctx, tx, f.conv, id); err != nil {
		return err
	}
	return addEvent(ctx, tx, f.account, sent.Type, sent.Payload)
}

// markSentPG is markSent on PostgreSQL with the message's facts known (the
// send path): its statements are queued, none waits for an answer (see
// Tx.ExecLater). The charge and the event follow the status update in SQL
// (they insert what it returned), and the conversation's lead reads the
// message's status when it runs (leadConversationPG): each follows only a
// message that moved to sent, as in markSent.
func markSentPG(ctx context.Context, tx *Tx, id int64, ref string, f *sentFacts, sent domain.Event) error {
	if sent.Type == "" {
		return fmt.Errorf("store: event without a type")
	}
	if err := tx.ExecLater(ctx, markSentPGSQL, domain.StatusSent, ref, id, domain.StatusPending, domain.StatusAbandoned,
		f.account, f.price, f.typ+" from "+f.from, tx.Now(), sent.Type, string(sent.Payload)); err != nil {
		return fmt.Errorf("store: mark sent: %w", err)
	}
	if ref != "" {
		// Already sent (a receipt came first): keep the carrier's
		// reference. A statement of its own, with its own snapshot, so that
		// it sees a receipt that committed while the update above waited
		// for the row.
		if err := tx.ExecLater(ctx, `UPDATE messages SET carrier_ref = ? WHERE id = ? AND carrier_ref = '' AND status = ?`, ref, id, domain.StatusSent); err != nil {
			return fmt.Errorf("store: carrier ref: %w", err)
		}
	}
	tx.Wake()
	return leadConversation(ctx, tx, f.conv, id)
}

// markSentPGSQL moves message $3 to sent ($1) with carrier reference $2 if
// it is pending or abandoned ($4, $5), and then, only if it moved, charges
// account $6 amount $7 (description $8, at $9) and writes its event (type
// $10, payload $11).
const markSentPGSQL = `WITH u AS (
	UPDATE messages SET status = $1, carrier_ref = $2 WHERE id = $3 AND direction = 'out' AND status IN ($4, $5) RETURNING id),
	l AS (INSERT INTO ledger (account_id, message_id, amount, currency, description, created_at) SELECT $6, id, $7, 'USD', $8, $9 FROM u)
	INSERT INTO events (account_id, type, payload, created_at) SELECT $6, $10, $11, $9 FROM u`

// leadConversation makes sent message id its conversation's newest, so that
// the conversation leads its lists again (unless a newer message already
// does: a late receipt can accept an old send), and so do the rows of its
// users who have it unread (if it does lead). In a write of a group that
// defers it (a contended write: see leads), it is merged with the group's
// other sends in the conversation and made once, at the group's end.
func leadConversation(ctx context.Context, tx *Tx, conv, id int64) error {
	if skipLead {
		return nil
	}
	if tx.Engine() == Postgres {
		if leadsPG.Defer(tx, conv, []int64{id}) {
			return nil
		}
		return leadNowPG(ctx, tx, conv, []int64{id})
	}
	if leads.Defer(tx, conv, id) {
		return nil
	}
	return leadNow(ctx, tx, conv, id)
}

// leadNowPG is leadConversation's update on PostgreSQL for the newest of
// the messages ids that is sent, made at once (or as the group's merged one:
// leadsPG.Flush).
func leadNowPG(ctx context.Context, tx *Tx, conv int64, ids []int64) error {
	if err := tx.ExecLater(ctx, leadConversationPG, ids, tx.Now(), conv); err != nil {
		return fmt.Errorf("store: conversation: %w", err)
	}
	return nil
}

// leadNow is leadConversation's update on SQLite, made at once (or as the
// group's merged one: leads.Flush).
func leadNow(ctx context.Context, tx *Tx, conv, id int64) error {
	if err := tx.ExecLater(ctx, `UPDATE conversations SET last_message_id = ?, last_message_at = ? WHERE id = ? AND (last_message_id IS NULL OR last_message_id < ?)`, id, tx.Now(), conv, id); err != nil {
		return fmt.Errorf("store: conversation: %w", err)
	}
	if err := tx.ExecLater(ctx, `UPDATE inbox_reads SET last_message_at = ? WHERE conversation_id = ? AND unread > 0
		AND EXISTS (SELECT 1 FROM conversations WHERE id = ? AND last_message_id = ?)`, tx.Now(), conv, conv, id); err != nil {
		return fmt.Errorf("store: conversation: %w", err)
	}
	return nil
}

// leadConversationPG is leadConversation's two updates in one statement
// (arguments $1 the message ids, $2 now, $3 conversation id; written with
// PostgreSQL's placeholders, which Rebind leaves): the users' rows follow only
// if the conversation's update matched. One lookup of the conversation row
// instead of two: on PostgreSQL every send's update of it is a new row
// version with entries in its list indexes (last_message_at is their key, so
// the update is never HOT), and a lookup walks the versions not yet vacuumed.
// The newest of the messages that are sent leads: on the send path the
// update is queued before anyone knows whether its message moved to sent
// (markSentPG), so it reads their status when it runs: one primary-key
// lookup per id, written as a scalar subquery so that no plan (a generic one
// made while the table was small, say) scans the messages instead.
const leadConversationPG = `WITH m AS (SELECT max(x.id) AS id FROM unnest($1::bigint[]) AS x(id)
		WHERE (SELECT status FROM messages WHERE messages.id = x.id) = 'sent'),
	c AS (UPDATE conversations SET last_message_id = m.id, last_message_at = $2 FROM m
		WHERE conversations.id = $3 AND m.id IS NOT NULL AND (last_message_id IS NULL OR last_message_id < m.id) RETURNING conversations.id)
	UPDATE inbox_reads SET last_message_at = $2 WHERE conversation_id IN (SELECT id FROM c) AND unread > 0`

// leads merges the conversation updates of a group's sends
// (contended writes, which run last in their group): one update per
// conversation, with its newest sent message id, made after the group's
// last write in conversation id order, so that groups of other committers
// and nodes lock shared conversations in one order. On PostgreSQL, leadsPG
// keeps every id: which of them moved to sent is known only when the
// update runs (markSentPG).
var (
	leads = sqldb.GroupMerge[int64, int64]{
		Merge: func(old, id int64) int64 { return max(old, id) },
		Flush: func(tx *Tx, conv, id int64) error {
			return leadNow(context.Background(), tx, conv, id)
		},
	}
	leadsPG = sqldb.GroupMerge[int64, []int64]{
		Merge: func(old, ids []int64) []int64 { return append(old, ids...) },
		Flush: func(tx *Tx, conv int64, ids []int64) error {
			return leadNowPG(context.Background(), tx, conv, ids)
		},
	}
)

// MarkUnsent records that message id was not accepted: failed when the
// carrier refused (the client was told nothing was sent), abandoned when the
// process stopped mid-send. A failed message's Idempotency-Key record is
// dropped so that a retry can send; an abandoned one's is kept, since the
// carrier may have the message and a late receipt would still charge it (the
// key answers from the message: see BeginIdempotent). Only pending messages
// change; the message's status after
// the call is returned, so that a caller learns when a delivery receipt
// proved the carrier accepted it after all (status sent, charged).
func (s *Store) MarkUnsent(ctx context.Context, id int64, status string) (string, error) {
	var after string
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		after = status
		res, err := tx.Exec(ctx, `UPDATE messages SET status = ? WHERE id = ? AND status = ?`, status, id, domain.StatusPending)
		if err != nil {
			return fmt.Errorf("store: mark %s: %w", status, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if err := tx.QueryRow(ctx, `SELECT status FROM messages WHERE id = ?`, id).Scan(&after); err != nil {
				return fmt.Errorf("store: mark %s: %w", status, err)
			}
			return nil
		}
		if status != domain.StatusFailed {
			return nil
		}
		if _, err := tx.Exec(ctx, `DELETE FROM idempotency_keys WHERE message_id = ?`, id); err != nil {
			return fmt.Errorf("store: idempotency: %w", err)
		}
		return nil
	})
	return after, err
}

// Abandon marks message id abandoned, uncharged, if it is still pending,
// was created before t and carries no evidence that the carrier took it (a
// carrier reference or a delivery report). It is a compare-and-set, so that
// a node whose list of pending messages is stale changes nothing. A linked
// Idempotency-Key record is kept, as by MarkUnsent for abandoned. It reports
// whether the message was abandoned.
func (s *Store) Abandon(ctx context.Context, id int64, t time.Time) (bool, error) {
	var done bool
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		done = false
		res, err := tx.Exec(ctx, `UPDATE messages SET status = ? WHERE id = ? AND status = ? AND created_at < ? AND carrier_ref = '' AND delivery_status IS NULL`+notQueued,
			domain.StatusAbandoned, id, domain.StatusPending, micros(t))
		if err != nil {
			return fmt.Errorf("store: abandon: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		// The Idempotency-Key record stays: abandoned is not proof that the
		// carrier did not take the message (see BeginIdempotent).
		done = true
		return nil
	})
	return done, err
}

// MarkQueuedSent records that the carrier took message id, which waited in
// a carrier connection's queue (ref: the carrier's reference): charged once
// and event sent written, as MarkOutboundSent does for a direct send. A
// message already sent only gains its reference.
func (s *Store) MarkQueuedSent(ctx context.Context, id int64, ref string, sent domain.Event) error {
	return s.db.Write(ctx, sqldb.KeepCache|sqldb.Contended, func(tx *Tx) error {
		return markSent(ctx, tx, id, ref, nil, sent)
	})
}

// MarkQueuedFailed records that the carrier refused message id, which
// waited in a carrier connection's queue: failed, uncharged, its
// Idempotency-Key record dropped (as MarkUnsent) and event failed written.
// Only a pending message changes; its status after the call is returned.
func (s *Store) MarkQueuedFailed(ctx context.Context, id int64, failed domain.Event) (string, error) {
	var after string
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		var account int64
		err := tx.QueryRow(ctx, `UPDATE messages SET status = ? WHERE id = ? AND direction = 'out' AND status = ? RETURNING account_id`,
			domain.StatusFailed, id, domain.StatusPending).Scan(&account)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(tx.QueryRow(ctx, `SELECT status FROM messages WHERE id = ?`, id).Scan(&after), "message")
		}
		if err != nil {
			return fmt.Errorf("store: mark failed: %w", err)
		}
		after = domain.StatusFailed
		tx.Touches(account)
		if _, err := tx.Exec(ctx, `DELETE FROM idempotency_keys WHERE message_id = ?`, id); err != nil {
			return fmt.Errorf("store: idempotency: %w", err)
		}
		return addEvent(ctx, tx, account, failed.Type, failed.Payload)
	})
	return after, err
}

// notQueued keeps the reconciler off a message that waits in a carrier
// connection's queue: its intent is not interrupted, only waiting its turn.
const notQueued = ` AND NOT EXISTS (SELECT 1 FROM carrier_queue q WHERE q.message_id = messages.id)`

// PendingBefore lists outbound messages still pending that were created
// before t, except those waiting in a carrier connection's queue.
func (s *Store) PendingBefore(ctx context.Context, t time.Time) ([]int64, error) {
	// The literal 'pending' (not a parameter) lets SQLite use the partial index.
	rows, err := s.db.Query(ctx, `SELECT id FROM messages WHERE status = 'pending' AND created_at < ?`+notQueued+` ORDER BY created_at LIMIT 1000`, micros(t))
	if err != nil {
		return nil, fmt.Errorf("store: pending: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// AwaitingReceipt is an outbound message the carrier accepted that has no
// delivery report yet.
type AwaitingReceipt struct {
	ID int64
	To []string
}

// AwaitingReceipts lists, in id order, up to limit outbound messages with id
// above after that were sent and have no delivery report, from lines without
// a carrier connection of their own (whose receipts their connection brings). The in-process
// sim carrier rebuilds its pending receipts from it at start. It scans the
// messages table (no index: it runs once per start, for the sim only, and an
// index would cost every send a write).
func (s *Store) AwaitingReceipts(ctx context.Context, after int64, limit int) ([]AwaitingReceipt, error) {
	rows, err := s.db.Query(ctx, `SELECT id, to_numbers FROM messages WHERE id > ? AND direction = 'out' AND status = ? AND delivery_status IS NULL
		AND NOT EXISTS (SELECT 1 FROM lines l WHERE l.id = messages.line_id AND l.carrier_id IS NOT NULL) ORDER BY id LIMIT ?`,
		after, domain.StatusSent, limit)
	if err != nil {
		return nil, fmt.Errorf("store: awaiting receipts: %w", err)
	}
	defer rows.Close()
	var out []AwaitingReceipt
	for rows.Next() {
		var a AwaitingReceipt
		var to string
		if err := rows.Scan(&a.ID, &to); err != nil {
			return nil, fmt.Errorf("store: awaiting receipts: %w", err)
		}
		json.Unmarshal([]byte(to), &a.To)
		out = append(out, a)
	}
	return out, rows.Err()
}

// finalDelivery lists the carrier words known to end a message's delivery
// (Kannel's delivered, undelivered and smsc_reject; the sim's delivered and
// undelivered). Once one is stored, only another final word replaces it:
// a progress report (Kannel may deliver "smsc_submit" after "delivered") and
// a word nobody told us about (a new Kannel type, "dlr_64") never do.
// receiptFastSQL spells the same list.
var finalDelivery = map[string]bool{
	"delivered": true, "undelivered": true, "smsc_reject": true,
}

// receiptFastSQL is ApplyReceipt's common case (arguments: status, error,
// at, id, the status sent, status, error, status): it stores the report on
// a sent message unless it is the same report again or a non-final word
// after a final one (the rules of the general path, finalDelivery), and
// returns the message's account.
const receiptFastSQL = `UPDATE messages SET delivery_status = ?, delivery_error = ?, delivery_at = ?
	WHERE id = ? AND direction = 'out' AND status = ?
	AND NOT (delivery_status IS NOT NULL AND delivery_status = ? AND COALESCE(delivery_error, '') = ?)
	AND NOT (delivery_status IS NOT NULL AND delivery_status IN ('delivered', 'undelivered', 'smsc_reject')
		AND ? NOT IN ('delivered', 'undelivered', 'smsc_reject'))
	RETURNING account_id`

// receiptFastPG is receiptFastSQL with the report's event written by the
// same statement (arguments: receiptFastSQL's, then the event's type,
// payload and time).
const receiptFastPG = `WITH u AS (` + receiptFastSQL + `)
	INSERT INTO events (account_id, type, payload, created_at) SELECT account_id, ?, ?, ? FROM u RETURNING account_id`

// Receipt is a carrier delivery report on outbound message ID, with the
// events it may write, built by the caller (the sms capability) from the
// message's line and recipients.
type Receipt struct {
	ID            int64
	Status, Error string
	At            time.Time
	// Sent is the message's message.sent event, written if the report is
	// what proves the carrier took it (the message is pending or abandoned).
	Sent domain.Event
	// Delivery is the message.delivery event, written unless the report
	// changes nothing or the message failed.
	Delivery domain.Event
}

// ApplyReceipt stores a carrier delivery report on its message. A report for
// a message still pending or abandoned is evidence the carrier accepted it,
// so the message is marked sent and charged first (this is how a crash
// between the carrier call and recording its answer is reconciled).
func (s *Store) ApplyReceipt(ctx context.Context, r Receipt) error {
	id, status, errText := r.ID, r.Status, r.Error
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		var account int64
		// The common report, first of its message, on a message already
		// sent: one statement that records it if it changes something,
		// with the checks below written in SQL (the UPDATE locks the row on
		// PostgreSQL and re-checks them on the row it locked). Anything
		// else (no row updated) takes the general path.
		fastArgs := []any{status, errText, micros(r.At), id, domain.StatusSent, status, errText, status}
		if tx.Engine() == Postgres && !skipEvents && r.Delivery.Type != "" {
			// Its event in the same statement.
			err := tx.QueryRow(ctx, receiptFastPG, append(fastArgs, r.Delivery.Type, string(r.Delivery.Payload), tx.Now())...).Scan(&account)
			if err == nil {
				tx.Touches(account)
				tx.Wake()
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("store: receipt: %w", err)
			}
		} else if err := tx.QueryRow(ctx, receiptFastSQL, fastArgs...).Scan(&account); err == nil {
			tx.Touches(account)
			return addEvent(ctx, tx, account, r.Delivery.Type, r.Delivery.Payload)
		} else if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: receipt: %w", err)
		}
		var msgStatus string
		var cur, curErr sql.NullString
		// Lock the row (PostgreSQL) so that concurrent receipts for one
		// message apply one after the other.
		err := tx.QueryRow(ctx, `SELECT account_id, status, delivery_status, delivery_error FROM messages WHERE id = ? AND direction = 'out'`+tx.ForUpdate(), id).
			Scan(&account, &msgStatus, &cur, &curErr)
		if errors.Is(err, sql.ErrNoRows) {
			return domain.Errorf(domain.NotFound, "message %d not found", id)
		}
		if err != nil {
			return fmt.Errorf("store: receipt: %w", err)
		}
		tx.Touches(account)
		if msgStatus == domain.StatusPending || msgStatus == domain.StatusAbandoned {
			if err := markSent(ctx, tx, id, "", nil, r.Sent); err != nil {
				return err
			}
		}
		switch {
		case cur.Valid && cur.String == status && curErr.String == errText:
			return nil // the same report again: nothing new, no second event
		case cur.Valid && finalDelivery[cur.String] && !finalDelivery[status]:
			return nil // progress or an unknown word after the end: the final status stands
		}
		if err := tx.ExecLater(ctx, `UPDATE messages SET delivery_status = ?, delivery_error = ?, delivery_at = ? WHERE id = ?`, status, errText, micros(r.At), id); err != nil {
			return fmt.Errorf("store: receipt: %w", err)
		}
		if msgStatus == domain.StatusFailed {
			// The client was told nothing was sent: never charged, and no
			// event (a webhook consumer never saw it sent). The report is
			// kept on the message for the operator.
			return nil
		}
		return addEvent(ctx, tx, account, r.Delivery.Type, r.Delivery.Payload)
	})
}

// OutboundParties returns the line and the recipients of outbound message
// id, which never change: what the caller builds a receipt's events from
// when it does not know them.
func (s *Store) OutboundParties(ctx context.Context, id int64) (line string, to []string, err error) {
	var numbers string
	err = s.db.QueryRow(ctx, `SELECT from_number, to_numbers FROM messages WHERE id = ? AND direction = 'out'`, id).Scan(&line, &numbers)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, domain.Errorf(domain.NotFound, "message %d not found", id)
	}
	if err != nil {
		return "", nil, fmt.Errorf("store: message parties: %w", err)
	}
	if err := json.Unmarshal([]byte(numbers), &to); err != nil {
		return "", nil, fmt.Errorf("store: message %d recipients: %w", id, err)
	}
	return line, to, nil
}

// Inbound is a received text to store.
type Inbound struct {
	Line         domain.Line
	From         string
	Participants []string // every other party on a group thread, sorted; just From for 1:1
	Body         string
	Media        []string
	// OptOut and OptIn apply the STOP/START keywords in the same transaction.
	OptOut, OptIn bool
	// Readers are the users who may see the line: the text is unread for
	// each of them (and for every user already following the thread).
	Readers []int64
	// Received and ReceivedBlocked are the text's message.received event,
	// built by the caller (the sms capability) for a sender off and on the
	// line's block list: the transaction decides which applies and names
	// the new message in it.
	Received, ReceivedBlocked RowEvent
}

// StoreInbound stores an inbound text in its conversation, applies an opt-out
// or opt-in keyword, and writes the AccountSMS event, in one transaction.
func (s *Store) StoreInbound(ctx context.Context, in Inbound) (int64, error) {
	to, _ := json.Marshal([]string{in.Line.Number})
	media, _ := json.Marshal(nonNilStrings(in.Media))
	typ := domain.BillingSMS
	if len(in.Media) > 0 || len(in.Participants) > 1 {
		typ = domain.BillingMMS
	}
	// A keyword changes the opt-out list, which the read cache holds: such a
	// text drops the cache (DropCache); any other keeps it (KeepCache).
	opt := sqldb.KeepCache
	if in.OptOut || in.OptIn {
		opt = sqldb.DropCache
	}
	var id int64
	err := s.db.Write(ctx, opt, func(tx *Tx) error {
		tx.Touches(in.Line.AccountID)
		participants := strings.Join(in.Participants, ",")
		convID, err := upsertConversation(ctx, tx, in.Line.AccountID, in.Line.ID, participants)
		if err != nil {
			return err
		}
		// A sender on the line's block list is still heard (the text is kept
		// in its thread, marked blocked, and its event written) but is never
		// unread for anyone and never reopens the thread.
		blocked, reason := true, ""
		if err := tx.QueryRow(ctx, `SELECT reason FROM blocked_senders WHERE line_id = ? AND number = ?`, in.Line.ID, in.From).Scan(&reason); errors.Is(err, sql.ErrNoRows) {
			blocked = false
		} else if err != nil {
			return fmt.Errorf("store: inbound: blocked sender: %w", err)
		}
		id, err = tx.Insert(ctx, `INSERT INTO messages (account_id, conversation_id, line_id, direction, from_number, to_numbers, body, media, type, status, blocked, block_reason, created_at)
			VALUES (?, ?, ?, 'in', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			in.Line.AccountID, convID, in.Line.ID, in.From, string(to), in.Body, string(media), typ, domain.StatusReceived, blocked, reason, tx.Now())
		if err != nil {
			return fmt.Errorf("store: inbound: %w", err)
		}
		if err := indexMessage(ctx, tx, id, in.Body); err != nil {
			return err
		}
		if blocked {
			if _, err := tx.Exec(ctx, `UPDATE conversations SET last_message_id = ?, last_message_at = ? WHERE id = ?`, id, tx.Now(), convID); err != nil {
				return fmt.Errorf("store: conversation: %w", err)
			}
		} else if err := countInbound(ctx, tx, in.Line.AccountID, in.Line.ID, convID, id, in.Readers); err != nil {
			return err
		}
		switch {
		case in.OptOut:
			_, err = tx.Exec(ctx, `INSERT INTO opt_outs (line_id, number, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`, in.Line.ID, in.From, tx.Now())
		case in.OptIn:
			_, err = tx.Exec(ctx, `DELETE FROM opt_outs WHERE line_id = ? AND number = ?`, in.Line.ID, in.From)
		}
		if err != nil {
			return fmt.Errorf("store: opt-out: %w", err)
		}
		ev := in.Received
		if blocked {
			ev = in.ReceivedBlocked
		}
		return addEvent(ctx, tx, in.Line.AccountID, ev.Type, ev.Payload.With(id))
	})
	return id, err
}

// OptedOut returns which of numbers have opted out of line. Answers are
// cached per number: opt-outs change only through StoreInbound's keywords,
// which bump the cache generation, so a send checks them without a query.
func (s *Store) OptedOut(ctx context.Context, lineID int64, numbers []string) (map[string]bool, error) {
	out := map[string]bool{}
	if s.db.Cache() == nil {
		return out, s.optedOut(ctx, lineID, numbers, out)
	}
	var missing []string
	var version int64
	prefix := "optout:" + strconv.FormatInt(lineID, 10) + ":"
	for _, n := range numbers {
		val, found, v, err := s.db.Cache().Lookup(ctx, prefix+n)
		if err != nil {
			return out, s.optedOut(ctx, lineID, numbers, out)
		}
		version = v // the last one read, before the query below
		if !found {
			missing = append(missing, n)
		} else if val.(bool) {
			out[n] = true
		}
	}
	if err := s.optedOut(ctx, lineID, missing, out); err != nil {
		return nil, err
	}
	for _, n := range missing {
		s.db.Cache().Keep(prefix+n, out[n], version)
	}
	return out, nil
}

// optedOut queries which of numbers have opted out of line into out.
func (s *Store) optedOut(ctx context.Context, lineID int64, numbers []string, out map[string]bool) error {
	if len(numbers) == 0 {
		return nil
	}
	args := []any{lineID}
	for _, n := range numbers {
		args = append(args, n)
	}
	rows, err := s.db.Query(ctx, `SELECT number FROM opt_outs WHERE line_id = ? AND number IN (?`+strings.Repeat(", ?", len(numbers)-1)+`)`, args...)
	if err != nil {
		return fmt.Errorf("store: opt-outs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return err
		}
		out[n] = true
	}
	return rows.Err()
}

const messageColumns = `id, account_id, conversation_id, line_id, direction, from_number, to_numbers, body, media, type, status, units, unit_price, price, sent_by, carrier_ref, delivery_status, delivery_error, delivery_at, created_at`

// Message returns the account's message id.
func (s *Store) Message(ctx context.Context, accountID, id int64) (domain.Message, error) {
	var m domain.Message
	var to, media string
	var sentBy, deliveryAt sql.NullInt64
	var dStatus, dErr sql.NullString
	var created int64
	err := s.db.QueryRow(ctx, `SELECT `+messageColumns+` FROM messages WHERE account_id = ? AND id = ?`, accountID, id).Scan(
		&m.ID, &m.AccountID, &m.ConversationID, &m.LineID, &m.Direction, &m.From, &to, &m.Body, &media, &m.Type, &m.Status,
		&m.Units, &m.UnitPrice, &m.Price, &sentBy, &m.CarrierRef, &dStatus, &dErr, &deliveryAt, &created)
	if err != nil {
		return m, fmt.Errorf("store: message: %w", notFound(err, "message"))
	}
	json.Unmarshal([]byte(to), &m.To)
	json.Unmarshal([]byte(media), &m.Media)
	m.SentBy, m.DeliveryStatus, m.DeliveryError = sentBy.Int64, dStatus.String, dErr.String
	if deliveryAt.Valid {
		t := fromMicros(deliveryAt.Int64)
		m.DeliveryAt = &t
	}
	m.CreatedAt = fromMicros(created)
	return m, nil
}

// Ledger lists the account's charges, newest first, at most limit.
func (s *Store) Ledger(ctx context.Context, accountID int64, limit int) ([]domain.LedgerEntry, error) {
	rows, err := s.db.Query(ctx, `SELECT id, message_id, amount, currency, description, created_at FROM ledger WHERE account_id = ? ORDER BY id DESC LIMIT ?`, accountID, limit)
	if err != nil {
		return nil, fmt.Errorf("store: ledger: %w", err)
	}
	defer rows.Close()
	out := []domain.LedgerEntry{}
	for rows.Next() {
		e := domain.LedgerEntry{AccountID: accountID}
		var created int64
		if err := rows.Scan(&e.ID, &e.MessageID, &e.Amount, &e.Currency, &e.Description, &created); err != nil {
			return nil, fmt.Errorf("store: ledger: %w", err)
		}
		e.CreatedAt = fromMicros(created)
		out = append(out, e)
	}
	return out, rows.Err()
}

// LedgerTotal sums the account's charges.
func (s *Store) LedgerTotal(ctx context.Context, accountID int64) (int64, int, error) {
	var total sql.NullInt64
	var n int
	err := s.db.QueryRow(ctx, `SELECT COALESCE(SUM(amount), 0), COUNT(*) FROM ledger WHERE account_id = ?`, accountID).Scan(&total, &n)
	return total.Int64, n, err
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
