package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"switchboard/internal/domain"
)

// The shared inbox's storage. Read state is a per-(user, conversation)
// watermark (inbox_reads.read_through: every message at or below it is read)
// plus inbox_read_marks, the few messages a user marked read or unread out of
// order. Each inbox_reads row also counts the inbound texts unread for its
// user, kept exact by every write below, so that neither a list page nor an
// unread count ever counts messages. See migrations/*/0013_inbox.sql.

// visibleMessage is the condition for a message that a thread shows: sent,
// received or scheduled, and not deleted. Pending, failed and abandoned
// sends are not part of the conversation.
const visibleMessage = `deleted_at IS NULL AND (status IN ('sent', 'received') OR scheduled)`

// ConversationFilter selects one page of conversations. Filters combine with AND.
type ConversationFilter struct {
	AccountID int64
	// LineIDs restricts the page to these lines; nil means every line of the
	// account (an empty, non-nil slice matches nothing).
	LineIDs []int64
	// UserID is the caller, whose unread state applies; 0 for an API key,
	// which gets the team view (unread until some user has read the thread).
	UserID     int64
	Unread     bool
	Unresolved bool
	Unassigned bool
	AssignedTo int64 // 0: any owner
	Limit      int
	Offset     int
}

// ListConversations returns one page of conversations, newest first. Each
// filter has an index holding only the rows it selects, so a page costs its
// offset in index entries and its length in lookups, however large the account.
func (s *Store) ListConversations(ctx context.Context, f ConversationFilter) ([]domain.ConversationSummary, error) {
	if f.LineIDs != nil && len(f.LineIDs) == 0 {
		return []domain.ConversationSummary{}, nil
	}
	ids, err := s.conversationPage(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]domain.ConversationSummary, 0, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	// The page's details, by id: the newest message and the caller's count.
	args := []any{f.UserID}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.query(ctx, `SELECT c.id, c.line_id, c.participants, c.resolved_at, c.resolved_by, c.assigned_to,
			c.last_message_id, c.last_message_at, c.in_count, c.team_unread, m.direction, m.body, m.media, r.unread
		FROM conversations c
		JOIN messages m ON m.id = c.last_message_id
		LEFT JOIN inbox_reads r ON r.conversation_id = c.id AND r.user_id = ?
		WHERE c.id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: conversations: %w", err)
	}
	defer rows.Close()
	byID := make(map[int64]domain.ConversationSummary, len(ids))
	for rows.Next() {
		var c domain.ConversationSummary
		var participants, media string
		var resolvedAt, resolvedBy, assignedTo, unread sql.NullInt64
		var lastAt, inCount, teamUnread int64
		if err := rows.Scan(&c.ID, &c.Key.Line.ID, &participants, &resolvedAt, &resolvedBy, &assignedTo,
			&c.LastMessageID, &lastAt, &inCount, &teamUnread, &c.LastDirection, &c.LastMessage, &media, &unread); err != nil {
			return nil, fmt.Errorf("store: conversations: %w", err)
		}
		c.AccountID = f.AccountID
		c.Key.Line.AccountID = f.AccountID
		c.Key.Participants = strings.Split(participants, ",")
		setState(&c.Conversation, resolvedAt, resolvedBy, assignedTo)
		c.LastMessageAt = fromMicros(lastAt)
		c.LastHasMedia = media != "[]" && media != ""
		switch {
		case f.UserID == 0:
			c.UnreadCount = teamUnread
		case unread.Valid:
			c.UnreadCount = unread.Int64
		default:
			// No state yet: the user has read nothing of the thread.
			c.UnreadCount = inCount
		}
		byID[c.ID] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: conversations: %w", err)
	}
	for _, id := range ids {
		if c, ok := byID[id]; ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// conversationPage returns the ids of one page, in order. The query is
// chosen so that one index drives it: the user's unread rows, the owner's
// conversations, or the account's list (whole, or one of its partial
// indexes for unresolved, unassigned and the team's unread).
func (s *Store) conversationPage(ctx context.Context, f ConversationFilter) ([]int64, error) {
	var q strings.Builder
	var args []any
	lineFilter := func(col string) {
		if f.LineIDs == nil {
			return
		}
		q.WriteString(` AND ` + col + ` IN (?` + strings.Repeat(", ?", len(f.LineIDs)-1) + `)`)
		for _, id := range f.LineIDs {
			args = append(args, id)
		}
	}
	stateFilters := func() {
		if f.Unresolved {
			q.WriteString(` AND c.resolved_at IS NULL`)
		}
		if f.Unassigned {
			q.WriteString(` AND c.assigned_to IS NULL`)
		}
		if f.AssignedTo != 0 {
			q.WriteString(` AND c.assigned_to = ?`)
			args = append(args, f.AssignedTo)
		}
	}
	switch {
	case f.Unread && f.UserID != 0:
		q.WriteString(`SELECT r.conversation_id FROM inbox_reads r`)
		if f.Unresolved || f.Unassigned || f.AssignedTo != 0 {
			q.WriteString(` JOIN conversations c ON c.id = r.conversation_id`)
		}
		q.WriteString(` WHERE r.user_id = ? AND r.unread > 0`)
		args = append(args, f.UserID)
		lineFilter("r.line_id")
		stateFilters()
		q.WriteString(` ORDER BY r.last_message_at DESC, r.conversation_id DESC`)
	case f.AssignedTo != 0:
		q.WriteString(`SELECT c.id FROM conversations c WHERE c.assigned_to = ? AND c.assigned_to IS NOT NULL AND c.last_message_at IS NOT NULL AND c.account_id = ?`)
		args = append(args, f.AssignedTo, f.AccountID)
		lineFilter("c.line_id")
		f.AssignedTo = 0 // already applied
		stateFilters()
		if f.Unread {
			q.WriteString(` AND c.team_unread > 0`)
		}
		q.WriteString(` ORDER BY c.last_message_at DESC, c.id DESC`)
	default:
		q.WriteString(`SELECT c.id FROM conversations c WHERE c.account_id = ? AND c.last_message_at IS NOT NULL`)
		args = append(args, f.AccountID)
		lineFilter("c.line_id")
		stateFilters()
		if f.Unread {
			q.WriteString(` AND c.team_unread > 0`)
		}
		if s.engine == SQLite && f.Offset >= cmp.Or(s.deepPage, deepPage) && !f.Unread && !f.Unresolved && !f.Unassigned {
			before, newer, err := s.conversationDay(ctx, f)
			if err != nil {
				return nil, err
			}
			if before == 0 {
				return []int64{}, nil // past the last conversation
			}
			q.WriteString(` AND c.last_message_at < ?`)
			args = append(args, before)
			f.Offset -= newer
		}
		q.WriteString(` ORDER BY c.last_message_at DESC, c.id DESC`)
	}
	q.WriteString(` LIMIT ? OFFSET ?`)
	args = append(args, f.Limit, f.Offset)
	rows, err := s.query(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("store: conversation page: %w", err)
	}
	defer rows.Close()
	ids := make([]int64, 0, f.Limit)
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: conversation page: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// deepPage is the offset from which an unfiltered (or line-filtered) list
// page on SQLite seeks through conversation_days instead of walking the list
// index from the top: below it the walk is cheaper than the day sums.
const deepPage = 2000

// conversationDay finds where a deep page starts: the end of the UTC day its
// offset lands in (every conversation from there on is older) and how many
// conversations are newer than that. before is 0 when the offset is past the
// last conversation. See migrations/sqlite/0020_conversation_days.sql.
func (s *Store) conversationDay(ctx context.Context, f ConversationFilter) (before int64, newer int, err error) {
	q := `SELECT day, SUM(n) FROM conversation_days WHERE account_id = ?`
	args := []any{f.AccountID}
	if f.LineIDs != nil {
		q += ` AND line_id IN (?` + strings.Repeat(", ?", len(f.LineIDs)-1) + `)`
		for _, id := range f.LineIDs {
			args = append(args, id)
		}
	}
	rows, err := s.query(ctx, q+` GROUP BY day ORDER BY day DESC`, args...)
	if err != nil {
		return 0, 0, fmt.Errorf("store: conversation days: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var day int64
		var n int
		if err := rows.Scan(&day, &n); err != nil {
			return 0, 0, fmt.Errorf("store: conversation days: %w", err)
		}
		if newer+n > f.Offset {
			return (day + 1) * dayMicros, newer, nil
		}
		newer += n
	}
	return 0, newer, rows.Err()
}

func setState(c *domain.Conversation, resolvedAt, resolvedBy, assignedTo sql.NullInt64) {
	if resolvedAt.Valid {
		t := fromMicros(resolvedAt.Int64)
		c.ResolvedAt = &t
	}
	c.ResolvedBy, c.AssignedTo = resolvedBy.Int64, assignedTo.Int64
}

// Conversation returns the conversation of key (line and participants), and
// whether it has any visible message. not_found when none was ever stored.
func (s *Store) Conversation(ctx context.Context, key domain.ConversationKey) (domain.Conversation, bool, error) {
	c := domain.Conversation{Key: key}
	var resolvedAt, resolvedBy, assignedTo sql.NullInt64
	var visible bool
	// A thread whose only message is scheduled is visible too (it stands in
	// no list until a message is sent or received).
	err := s.queryRow(ctx, `SELECT id, account_id, resolved_at, resolved_by, assigned_to,
		last_message_id IS NOT NULL OR EXISTS (SELECT 1 FROM messages m WHERE m.conversation_id = c.id AND m.status = 'scheduled' AND m.deleted_at IS NULL)
		FROM conversations c WHERE line_id = ? AND participants = ?`,
		key.Line.ID, key.Joined()).Scan(&c.ID, &c.AccountID, &resolvedAt, &resolvedBy, &assignedTo, &visible)
	if err == nil && c.AccountID != key.Line.AccountID {
		err = sql.ErrNoRows
	}
	if err != nil {
		return c, false, fmt.Errorf("store: conversation: %w", notFound(err, "conversation"))
	}
	setState(&c, resolvedAt, resolvedBy, assignedTo)
	return c, visible, nil
}

const threadColumns = `id, direction, from_number, to_numbers, body, media, type, status, sent_by, delivery_status, delivery_error, delivery_at, created_at, scheduled, scheduled_at, blocked, block_reason`

// ThreadPage returns messages of conversation conv, newest first, with each
// one's read state for userID (0: an API key, for which a message is read
// once any user has read it).
func (s *Store) ThreadPage(ctx context.Context, conv domain.Conversation, userID int64, limit, offset int) ([]domain.ThreadMessage, error) {
	rows, err := s.query(ctx, `SELECT `+threadColumns+` FROM messages WHERE conversation_id = ? AND `+visibleMessage+` ORDER BY id DESC LIMIT ? OFFSET ?`,
		conv.ID, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("store: thread: %w", err)
	}
	defer rows.Close()
	out := make([]domain.ThreadMessage, 0, limit)
	for rows.Next() {
		m := domain.ThreadMessage{}
		m.AccountID, m.ConversationID, m.LineID = conv.AccountID, conv.ID, conv.Key.Line.ID
		var to, media string
		var sentBy, deliveryAt, scheduledAt sql.NullInt64
		var dStatus, dErr sql.NullString
		var created int64
		if err := rows.Scan(&m.ID, &m.Direction, &m.From, &to, &m.Body, &media, &m.Type, &m.Status, &sentBy, &dStatus, &dErr, &deliveryAt, &created,
			&m.Scheduled, &scheduledAt, &m.Blocked, &m.BlockReason); err != nil {
			return nil, fmt.Errorf("store: thread: %w", err)
		}
		json.Unmarshal([]byte(to), &m.To)
		json.Unmarshal([]byte(media), &m.Media)
		m.SentBy, m.DeliveryStatus, m.DeliveryError = sentBy.Int64, dStatus.String, dErr.String
		if deliveryAt.Valid {
			t := fromMicros(deliveryAt.Int64)
			m.DeliveryAt = &t
		}
		if scheduledAt.Valid {
			t := fromMicros(scheduledAt.Int64)
			m.ScheduledAt = &t
		}
		m.CreatedAt = fromMicros(created)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: thread: %w", err)
	}
	rows.Close()
	if len(out) == 0 {
		return out, nil
	}
	return out, s.readState(ctx, conv.ID, userID, out)
}

// readState fills Read and ReadBy of msgs: a user has read a message when a
// mark says so, or else when it is at or below their watermark or they sent it.
func (s *Store) readState(ctx context.Context, convID, userID int64, msgs []domain.ThreadMessage) error {
	watermarks := map[int64]int64{}
	rows, err := s.query(ctx, `SELECT user_id, read_through FROM inbox_reads WHERE conversation_id = ?`, convID)
	if err != nil {
		return fmt.Errorf("store: read state: %w", err)
	}
	for rows.Next() {
		var u, rt int64
		if err := rows.Scan(&u, &rt); err != nil {
			rows.Close()
			return fmt.Errorf("store: read state: %w", err)
		}
		watermarks[u] = rt
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: read state: %w", err)
	}
	type markKey struct{ msg, user int64 }
	marks := map[markKey]bool{}
	args := make([]any, len(msgs))
	for i, m := range msgs {
		args[i] = m.ID
	}
	rows, err = s.query(ctx, `SELECT message_id, user_id, is_read FROM inbox_read_marks WHERE message_id IN (?`+strings.Repeat(", ?", len(msgs)-1)+`)`, args...)
	if err != nil {
		return fmt.Errorf("store: read marks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k markKey
		var read bool
		if err := rows.Scan(&k.msg, &k.user, &read); err != nil {
			return fmt.Errorf("store: read marks: %w", err)
		}
		marks[k] = read
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: read marks: %w", err)
	}
	for i := range msgs {
		m := &msgs[i]
		readers := map[int64]bool{}
		if m.SentBy != 0 {
			readers[m.SentBy] = true
		}
		for u, rt := range watermarks {
			if m.ID <= rt {
				readers[u] = true
			}
		}
		for k, read := range marks {
			if k.msg == m.ID {
				readers[k.user] = read
			}
		}
		m.ReadBy = []int64{}
		for u, read := range readers {
			if read {
				m.ReadBy = append(m.ReadBy, u)
			}
		}
		slices.Sort(m.ReadBy)
		if userID == 0 {
			m.Read = len(m.ReadBy) > 0
		} else {
			m.Read = readers[userID]
		}
	}
	return nil
}

// MessagePosition returns how many visible messages of conv are newer than
// message id: its index in the thread, newest first. not_found when id is not
// a visible message of conv.
func (s *Store) MessagePosition(ctx context.Context, convID, id int64) (int, error) {
	var n int
	err := s.queryRow(ctx, `SELECT COUNT(*) FROM messages WHERE conversation_id = ? AND id = ? AND `+visibleMessage, convID, id).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: message position: %w", err)
	}
	if n == 0 {
		return 0, domain.Errorf(domain.NotFound, "message %d is not in this conversation", id)
	}
	err = s.queryRow(ctx, `SELECT COUNT(*) FROM messages WHERE conversation_id = ? AND id > ? AND `+visibleMessage, convID, id).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: message position: %w", err)
	}
	return n, nil
}

// convFacts is what the read-state writes need to know about a conversation,
// read with the row locked (PostgreSQL) so that they apply one at a time.
type convFacts struct {
	account, line   int64
	last, lastAt    int64 // 0 when the thread has no visible message
	inCount         int64
	teamRead        int64
	teamUnread      int64
	resolvedAt      sql.NullInt64
	resolvedBy      sql.NullInt64
	assignedTo      sql.NullInt64
	participantsKey string
}

func lockConversation(ctx context.Context, tx *Tx, id int64) (convFacts, error) {
	var f convFacts
	var last, lastAt sql.NullInt64
	err := tx.queryRow(ctx, `SELECT account_id, line_id, last_message_id, last_message_at, in_count, team_read_through, team_unread, resolved_at, resolved_by, assigned_to, participants
		FROM conversations WHERE id = ?`+tx.s.forUpdate(), id).
		Scan(&f.account, &f.line, &last, &lastAt, &f.inCount, &f.teamRead, &f.teamUnread, &f.resolvedAt, &f.resolvedBy, &f.assignedTo, &f.participantsKey)
	if err != nil {
		return f, fmt.Errorf("store: conversation: %w", notFound(err, "conversation"))
	}
	f.last, f.lastAt = last.Int64, lastAt.Int64
	return f, nil
}

// MarkThreadRead marks every message of conversation convID read for userID:
// one row written (the watermark moves to the newest message and the user's
// marks in the thread go), whatever the thread's length.
func (s *Store) MarkThreadRead(ctx context.Context, convID, userID int64) error {
	return s.writeData(ctx, func(tx *Tx) error {
		f, err := lockConversation(ctx, tx, convID)
		if err != nil {
			return err
		}
		return markThreadRead(ctx, tx, convID, userID, f)
	})
}

func markThreadRead(ctx context.Context, tx *Tx, convID, userID int64, f convFacts) error {
	if f.last == 0 {
		return nil
	}
	if userID == 0 {
		// An API key has no personal state: only the team's view moves.
		return markTeamRead(ctx, tx, convID, f)
	}
	if _, err := tx.exec(ctx, `INSERT INTO inbox_reads (conversation_id, user_id, account_id, line_id, read_through, unread, last_message_at) VALUES (?, ?, ?, ?, ?, 0, 0)
		ON CONFLICT (conversation_id, user_id) DO UPDATE SET unread = 0,
			read_through = CASE WHEN excluded.read_through > inbox_reads.read_through THEN excluded.read_through ELSE inbox_reads.read_through END`,
		convID, userID, f.account, f.line, f.last); err != nil {
		return fmt.Errorf("store: mark read: %w", err)
	}
	if _, err := tx.exec(ctx, `DELETE FROM inbox_read_marks WHERE user_id = ? AND conversation_id = ?`, userID, convID); err != nil {
		return fmt.Errorf("store: mark read: %w", err)
	}
	return markTeamRead(ctx, tx, convID, f)
}

// markTeamRead records that the thread has been read to its newest message.
func markTeamRead(ctx context.Context, tx *Tx, convID int64, f convFacts) error {
	if f.last > f.teamRead || f.teamUnread != 0 {
		if _, err := tx.exec(ctx, `UPDATE conversations SET team_read_through = ?, team_unread = 0 WHERE id = ?`, max(f.last, f.teamRead), convID); err != nil {
			return fmt.Errorf("store: mark read: %w", err)
		}
	}
	return nil
}

// userRow returns userID's watermark and unread count in a conversation,
// creating the row (nothing read yet) if there is none.
func userRow(ctx context.Context, tx *Tx, convID, userID int64, f convFacts) (readThrough, unread int64, err error) {
	err = tx.queryRow(ctx, `SELECT read_through, unread FROM inbox_reads WHERE conversation_id = ? AND user_id = ?`, convID, userID).Scan(&readThrough, &unread)
	if errors.Is(err, sql.ErrNoRows) {
		_, err = tx.exec(ctx, `INSERT INTO inbox_reads (conversation_id, user_id, account_id, line_id, read_through, unread, last_message_at) VALUES (?, ?, ?, ?, 0, ?, ?)`,
			convID, userID, f.account, f.line, f.inCount, f.lastAt)
		return 0, f.inCount, err
	}
	return readThrough, unread, err
}

// MarkMessages sets userID's read state of messages ids (distinct) of
// conversation convID. not_found, and nothing changed, when one of them is
// not a visible message of the thread.
func (s *Store) MarkMessages(ctx context.Context, convID, userID int64, ids []int64, read bool) error {
	return s.writeData(ctx, func(tx *Tx) error {
		f, err := lockConversation(ctx, tx, convID)
		if err != nil {
			return err
		}
		rt, _, err := userRow(ctx, tx, convID, userID, f)
		if err != nil {
			return fmt.Errorf("store: read state: %w", err)
		}
		var delta int64
		for _, id := range ids {
			var direction string
			var sentBy sql.NullInt64
			err := tx.queryRow(ctx, `SELECT direction, sent_by FROM messages WHERE id = ? AND conversation_id = ? AND `+visibleMessage, id, convID).Scan(&direction, &sentBy)
			if errors.Is(err, sql.ErrNoRows) {
				return domain.Errorf(domain.NotFound, "message %d is not in this conversation", id)
			}
			if err != nil {
				return fmt.Errorf("store: read state: %w", err)
			}
			def := id <= rt || sentBy.Int64 == userID
			before := def
			var mark bool
			err = tx.queryRow(ctx, `SELECT is_read FROM inbox_read_marks WHERE message_id = ? AND user_id = ?`, id, userID).Scan(&mark)
			if err == nil {
				before = mark
			} else if !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("store: read state: %w", err)
			}
			if read == def {
				_, err = tx.exec(ctx, `DELETE FROM inbox_read_marks WHERE message_id = ? AND user_id = ?`, id, userID)
			} else {
				_, err = tx.exec(ctx, `INSERT INTO inbox_read_marks (message_id, user_id, conversation_id, is_read) VALUES (?, ?, ?, ?)
					ON CONFLICT (message_id, user_id) DO UPDATE SET is_read = excluded.is_read`, id, userID, convID, read)
			}
			if err != nil {
				return fmt.Errorf("store: read mark: %w", err)
			}
			if direction == "in" && before != read {
				if read {
					delta--
				} else {
					delta++
				}
			}
		}
		if delta != 0 {
			if _, err := tx.exec(ctx, `UPDATE inbox_reads SET unread = unread + ?, last_message_at = ? WHERE conversation_id = ? AND user_id = ?`,
				delta, f.lastAt, convID, userID); err != nil {
				return fmt.Errorf("store: read state: %w", err)
			}
		}
		return nil
	})
}

// MarkLineRead marks read, for userID, every message of line lineID (since:
// only those sent at or after it; zero time for all). It visits only the
// conversations unread for the user.
func (s *Store) MarkLineRead(ctx context.Context, lineID, userID int64, since time.Time) error {
	return s.writeData(ctx, func(tx *Tx) error {
		var convs []int64
		err := tx.query(ctx, `SELECT conversation_id FROM inbox_reads WHERE user_id = ? AND line_id = ? AND unread > 0`, []any{userID, lineID}, func(r row) error {
			var id int64
			if err := r.Scan(&id); err != nil {
				return err
			}
			convs = append(convs, id)
			return nil
		})
		if err != nil {
			return fmt.Errorf("store: line read: %w", err)
		}
		for _, id := range convs {
			f, err := lockConversation(ctx, tx, id)
			if err != nil {
				return err
			}
			if since.IsZero() {
				err = markThreadRead(ctx, tx, id, userID, f)
			} else {
				err = markThreadReadSince(ctx, tx, id, userID, f, micros(since))
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// markThreadReadSince marks read the messages of a thread sent at or after
// since: the watermark moves to the newest message, and the older messages
// that were unread keep that state as marks.
func markThreadReadSince(ctx context.Context, tx *Tx, convID, userID int64, f convFacts, since int64) error {
	var first sql.NullInt64
	if err := tx.queryRow(ctx, `SELECT MIN(id) FROM messages WHERE conversation_id = ? AND created_at >= ? AND `+visibleMessage, convID, since).Scan(&first); err != nil {
		return fmt.Errorf("store: line read: %w", err)
	}
	if !first.Valid {
		return nil // nothing that recent
	}
	rt, _, err := userRow(ctx, tx, convID, userID, f)
	if err != nil {
		return fmt.Errorf("store: line read: %w", err)
	}
	// Older messages above the watermark without a mark stay unread: mark them so.
	if _, err := tx.exec(ctx, `INSERT INTO inbox_read_marks (message_id, user_id, conversation_id, is_read)
		SELECT m.id, CAST(? AS BIGINT), m.conversation_id, FALSE FROM messages m
		WHERE m.conversation_id = ? AND m.id > ? AND m.id < ? AND m.deleted_at IS NULL AND (m.status IN ('sent', 'received') OR m.scheduled)
			AND NOT EXISTS (SELECT 1 FROM inbox_read_marks k WHERE k.message_id = m.id AND k.user_id = ?)
			AND NOT (m.sent_by IS NOT NULL AND m.sent_by = ?)`,
		userID, convID, rt, first.Int64, userID, userID); err != nil {
		return fmt.Errorf("store: line read: %w", err)
	}
	// Read marks are now what the watermark says; unread marks from since on are read.
	if _, err := tx.exec(ctx, `DELETE FROM inbox_read_marks WHERE user_id = ? AND conversation_id = ? AND (is_read OR message_id >= ?)`, userID, convID, first.Int64); err != nil {
		return fmt.Errorf("store: line read: %w", err)
	}
	var unread int64
	if err := tx.queryRow(ctx, `SELECT COUNT(*) FROM inbox_read_marks k JOIN messages m ON m.id = k.message_id
		WHERE k.user_id = ? AND k.conversation_id = ? AND NOT k.is_read AND m.direction = 'in'`, userID, convID).Scan(&unread); err != nil {
		return fmt.Errorf("store: line read: %w", err)
	}
	if _, err := tx.exec(ctx, `UPDATE inbox_reads SET read_through = ?, unread = ?, last_message_at = ? WHERE conversation_id = ? AND user_id = ?`,
		max(rt, f.last), unread, f.lastAt, convID, userID); err != nil {
		return fmt.Errorf("store: line read: %w", err)
	}
	if unread == 0 {
		return markTeamRead(ctx, tx, convID, f)
	}
	return nil
}

// UnreadCounts returns unread inbound texts per line id for userID (0: the
// team view of an API key), counting only texts sent at or after since when
// since is not zero. Lines with none are absent. Without since it sums the
// counters of the conversations unread for the caller; with since it counts
// those conversations' unread messages of that period.
func (s *Store) UnreadCounts(ctx context.Context, accountID, userID int64, since time.Time) (map[int64]int64, error) {
	var queries []string
	var args [][]any
	switch {
	case userID != 0 && since.IsZero():
		queries = append(queries, `SELECT line_id, SUM(unread) FROM inbox_reads WHERE user_id = ? AND unread > 0 GROUP BY line_id`)
		args = append(args, []any{userID})
	case userID != 0:
		queries = append(queries,
			`SELECT r.line_id, COUNT(*) FROM inbox_reads r JOIN messages m ON m.conversation_id = r.conversation_id AND m.id > r.read_through
			WHERE r.user_id = ? AND r.unread > 0 AND m.direction = 'in' AND m.created_at >= ? AND m.deleted_at IS NULL AND (m.status IN ('sent', 'received') OR m.scheduled)
				AND NOT EXISTS (SELECT 1 FROM inbox_read_marks k WHERE k.message_id = m.id AND k.user_id = r.user_id AND k.is_read)
			GROUP BY r.line_id`,
			`SELECT r.line_id, COUNT(*) FROM inbox_read_marks k JOIN messages m ON m.id = k.message_id
				JOIN inbox_reads r ON r.conversation_id = k.conversation_id AND r.user_id = k.user_id
			WHERE k.user_id = ? AND NOT k.is_read AND m.id <= r.read_through AND m.direction = 'in' AND m.created_at >= ? AND m.deleted_at IS NULL
			GROUP BY r.line_id`)
		args = append(args, []any{userID, micros(since)}, []any{userID, micros(since)})
	case since.IsZero():
		queries = append(queries, `SELECT line_id, SUM(team_unread) FROM conversations WHERE account_id = ? AND team_unread > 0 GROUP BY line_id`)
		args = append(args, []any{accountID})
	default:
		queries = append(queries, `SELECT c.line_id, COUNT(*) FROM conversations c JOIN messages m ON m.conversation_id = c.id AND m.id > c.team_read_through
			WHERE c.account_id = ? AND c.team_unread > 0 AND m.direction = 'in' AND m.created_at >= ? AND m.deleted_at IS NULL AND (m.status IN ('sent', 'received') OR m.scheduled)
			GROUP BY c.line_id`)
		args = append(args, []any{accountID, micros(since)})
	}
	out := map[int64]int64{}
	for i, q := range queries {
		rows, err := s.query(ctx, q, args[i]...)
		if err != nil {
			return nil, fmt.Errorf("store: unread: %w", err)
		}
		for rows.Next() {
			var line, n int64
			if err := rows.Scan(&line, &n); err != nil {
				rows.Close()
				return nil, fmt.Errorf("store: unread: %w", err)
			}
			out[line] += n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("store: unread: %w", err)
		}
	}
	return out, nil
}

// conversationForState finds or creates the conversation of key and locks it:
// resolve, reopen, assign and comment work on a pair with no stored state.
func conversationForState(ctx context.Context, tx *Tx, key domain.ConversationKey) (int64, convFacts, error) {
	id, err := upsertConversation(ctx, tx, key.Line.AccountID, key.Line.ID, key.Joined())
	if err != nil {
		return 0, convFacts{}, err
	}
	f, err := lockConversation(ctx, tx, id)
	return id, f, err
}

func addActivity(ctx context.Context, tx *Tx, account, conv int64, kind string, actor, subject int64, body string) error {
	if _, err := tx.exec(ctx, `INSERT INTO conversation_activity (account_id, conversation_id, kind, actor_id, subject_id, body, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		account, conv, kind, nullID(actor), nullID(subject), body, tx.now); err != nil {
		return fmt.Errorf("store: activity: %w", err)
	}
	return nil
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

// stateOf is the Conversation a write returns, from the facts it holds.
func stateOf(id int64, key domain.ConversationKey, f convFacts) domain.Conversation {
	c := domain.Conversation{ID: id, AccountID: f.account, Key: key}
	setState(&c, f.resolvedAt, f.resolvedBy, f.assignedTo)
	return c
}

// StateChange is a resolve, reopen, assign or comment, by Actor (0: an API key).
type StateChange struct {
	Key   domain.ConversationKey
	Actor int64
}

// Resolve marks the conversation resolved, credited to by (0: nobody),
// unless it already is (then nothing is re-stamped), and saves comment (if
// not empty) by author in the same transaction.
func (s *Store) Resolve(ctx context.Context, ch StateChange, by int64, comment string, author int64) (domain.Conversation, error) {
	var out domain.Conversation
	err := s.writeData(ctx, func(tx *Tx) error {
		id, f, err := conversationForState(ctx, tx, ch.Key)
		if err != nil {
			return err
		}
		if !f.resolvedAt.Valid {
			if _, err := tx.exec(ctx, `UPDATE conversations SET resolved_at = ?, resolved_by = ? WHERE id = ?`, tx.now, nullID(by), id); err != nil {
				return fmt.Errorf("store: resolve: %w", err)
			}
			f.resolvedAt = sql.NullInt64{Int64: tx.now, Valid: true}
			f.resolvedBy = sql.NullInt64{Int64: by, Valid: by != 0}
			if err := addActivity(ctx, tx, f.account, id, domain.ActivityResolve, ch.Actor, by, ""); err != nil {
				return err
			}
		}
		if comment != "" {
			if err := addActivity(ctx, tx, f.account, id, domain.ActivityComment, author, 0, comment); err != nil {
				return err
			}
		}
		out = stateOf(id, ch.Key, f)
		return nil
	})
	return out, err
}

// Reopen marks the conversation unresolved (a no-op when it is).
func (s *Store) Reopen(ctx context.Context, ch StateChange) (domain.Conversation, error) {
	var out domain.Conversation
	err := s.writeData(ctx, func(tx *Tx) error {
		id, f, err := conversationForState(ctx, tx, ch.Key)
		if err != nil {
			return err
		}
		if f.resolvedAt.Valid {
			if _, err := tx.exec(ctx, `UPDATE conversations SET resolved_at = NULL, resolved_by = NULL WHERE id = ?`, id); err != nil {
				return fmt.Errorf("store: reopen: %w", err)
			}
			f.resolvedAt, f.resolvedBy = sql.NullInt64{}, sql.NullInt64{}
			if err := addActivity(ctx, tx, f.account, id, domain.ActivityReopen, ch.Actor, 0, ""); err != nil {
				return err
			}
		}
		out = stateOf(id, ch.Key, f)
		return nil
	})
	return out, err
}

// Assign gives the conversation to user (0: nobody).
func (s *Store) Assign(ctx context.Context, ch StateChange, user int64) (domain.Conversation, error) {
	var out domain.Conversation
	err := s.writeData(ctx, func(tx *Tx) error {
		id, f, err := conversationForState(ctx, tx, ch.Key)
		if err != nil {
			return err
		}
		if f.assignedTo.Int64 != user {
			if _, err := tx.exec(ctx, `UPDATE conversations SET assigned_to = ? WHERE id = ?`, nullID(user), id); err != nil {
				return fmt.Errorf("store: assign: %w", err)
			}
			f.assignedTo = sql.NullInt64{Int64: user, Valid: user != 0}
			kind := domain.ActivityAssign
			if user == 0 {
				kind = domain.ActivityUnassign
			}
			if err := addActivity(ctx, tx, f.account, id, kind, ch.Actor, user, ""); err != nil {
				return err
			}
		}
		out = stateOf(id, ch.Key, f)
		return nil
	})
	return out, err
}

// AddComment saves an internal note by ch.Actor.
func (s *Store) AddComment(ctx context.Context, ch StateChange, body string) (domain.Conversation, error) {
	var out domain.Conversation
	err := s.writeData(ctx, func(tx *Tx) error {
		id, f, err := conversationForState(ctx, tx, ch.Key)
		if err != nil {
			return err
		}
		if err := addActivity(ctx, tx, f.account, id, domain.ActivityComment, ch.Actor, 0, body); err != nil {
			return err
		}
		out = stateOf(id, ch.Key, f)
		return nil
	})
	return out, err
}

// Comments lists a conversation's notes, oldest first.
func (s *Store) Comments(ctx context.Context, convID int64) ([]domain.Comment, error) {
	rows, err := s.query(ctx, `SELECT id, actor_id, body, created_at FROM conversation_activity WHERE conversation_id = ? AND kind = 'comment' ORDER BY id`, convID)
	if err != nil {
		return nil, fmt.Errorf("store: comments: %w", err)
	}
	defer rows.Close()
	out := []domain.Comment{}
	for rows.Next() {
		var c domain.Comment
		var author sql.NullInt64
		var created int64
		if err := rows.Scan(&c.ID, &author, &c.Body, &created); err != nil {
			return nil, fmt.Errorf("store: comments: %w", err)
		}
		c.AuthorID, c.CreatedAt = author.Int64, fromMicros(created)
		out = append(out, c)
	}
	return out, rows.Err()
}

// Activity is one recorded change to a conversation.
type Activity struct {
	Kind           string
	Actor, Subject int64
	Body           string
	CreatedAt      time.Time
	ConversationID int64
}

// ConversationActivity lists what happened to a conversation, oldest first.
func (s *Store) ConversationActivity(ctx context.Context, convID int64) ([]Activity, error) {
	rows, err := s.query(ctx, `SELECT kind, actor_id, subject_id, body, created_at FROM conversation_activity WHERE conversation_id = ? ORDER BY id`, convID)
	if err != nil {
		return nil, fmt.Errorf("store: activity: %w", err)
	}
	defer rows.Close()
	var out []Activity
	for rows.Next() {
		a := Activity{ConversationID: convID}
		var actor, subject sql.NullInt64
		var created int64
		if err := rows.Scan(&a.Kind, &actor, &subject, &a.Body, &created); err != nil {
			return nil, fmt.Errorf("store: activity: %w", err)
		}
		a.Actor, a.Subject, a.CreatedAt = actor.Int64, subject.Int64, fromMicros(created)
		out = append(out, a)
	}
	return out, rows.Err()
}

// DeleteConversation erases a conversation for good: its messages' text and
// media (the rows stay, because the ledger's charges point at them), its read
// state, notes and resolution. The next text between the same parties starts
// a fresh thread. It returns the media names to remove from the blob store.
func (s *Store) DeleteConversation(ctx context.Context, convID int64) ([]string, error) {
	var media []string
	err := s.writeData(ctx, func(tx *Tx) error {
		media = nil // the function runs again if its group is retried
		if _, err := lockConversation(ctx, tx, convID); err != nil {
			return err
		}
		// Scheduled messages are their schedules' (cancelled with DELETE
		// …/scheduled/{id}): they stay, with their media.
		err := tx.query(ctx, `SELECT media FROM messages WHERE conversation_id = ? AND deleted_at IS NULL AND media <> '[]' AND status <> 'scheduled'`, []any{convID}, func(r row) error {
			var m string
			if err := r.Scan(&m); err != nil {
				return err
			}
			var names []string
			json.Unmarshal([]byte(m), &names)
			media = append(media, names...)
			return nil
		})
		if err != nil {
			return fmt.Errorf("store: delete conversation: %w", err)
		}
		for _, q := range []string{
			`UPDATE messages SET deleted_at = ?, body = '', media = '[]' WHERE conversation_id = ? AND deleted_at IS NULL AND status <> 'scheduled'`,
			`DELETE FROM inbox_read_marks WHERE conversation_id = ?`,
			`DELETE FROM inbox_reads WHERE conversation_id = ?`,
			`DELETE FROM conversation_activity WHERE conversation_id = ?`,
			`UPDATE conversations SET last_message_id = NULL, last_message_at = NULL, resolved_at = NULL, resolved_by = NULL, assigned_to = NULL,
				in_count = 0, team_read_through = 0, team_unread = 0 WHERE id = ?`,
		} {
			args := []any{convID}
			if strings.HasPrefix(q, "UPDATE messages") {
				args = []any{tx.now, convID}
			}
			if _, err := tx.exec(ctx, q, args...); err != nil {
				return fmt.Errorf("store: delete conversation: %w", err)
			}
		}
		// Only files no other message (or pending schedule) still uses go.
		media, err = releaseMedia(ctx, tx, media, true)
		return err
	})
	return media, err
}

// DeleteMessage erases one message of a conversation for good (its text and
// media; the row stays for the ledger) and takes it out of every unread
// count. It returns the media names to remove from the blob store.
func (s *Store) DeleteMessage(ctx context.Context, convID, id int64) ([]string, error) {
	var names []string
	err := s.writeData(ctx, func(tx *Tx) error {
		f, err := lockConversation(ctx, tx, convID)
		if err != nil {
			return err
		}
		var direction, media string
		var status string
		err = tx.queryRow(ctx, `SELECT direction, media, status FROM messages WHERE id = ? AND conversation_id = ? AND `+visibleMessage, id, convID).Scan(&direction, &media, &status)
		if errors.Is(err, sql.ErrNoRows) {
			return domain.Errorf(domain.NotFound, "message %d is not in this conversation", id)
		}
		if err == nil && status == domain.StatusScheduled {
			// Its schedule owns it: cancelling is how it goes.
			return domain.Errorf(domain.Conflict, "message %d is scheduled, not sent: cancel it with DELETE /sms/lines/{line}/scheduled/{id}", id)
		}
		if err != nil {
			return fmt.Errorf("store: delete message: %w", err)
		}
		json.Unmarshal([]byte(media), &names)
		if direction == "in" {
			// Out of the count of every user for whom it was unread: above
			// their watermark without a read mark, or marked unread.
			if _, err := tx.exec(ctx, `UPDATE inbox_reads SET unread = unread - 1 WHERE conversation_id = ? AND (
					(read_through < ? AND NOT EXISTS (SELECT 1 FROM inbox_read_marks k WHERE k.message_id = ? AND k.user_id = inbox_reads.user_id AND k.is_read))
					OR EXISTS (SELECT 1 FROM inbox_read_marks k WHERE k.message_id = ? AND k.user_id = inbox_reads.user_id AND NOT k.is_read))`,
				convID, id, id, id); err != nil {
				return fmt.Errorf("store: delete message: %w", err)
			}
			teamUnread := f.teamUnread
			if id > f.teamRead {
				teamUnread--
			}
			if _, err := tx.exec(ctx, `UPDATE conversations SET in_count = in_count - 1, team_unread = ? WHERE id = ?`, teamUnread, convID); err != nil {
				return fmt.Errorf("store: delete message: %w", err)
			}
		}
		if _, err := tx.exec(ctx, `DELETE FROM inbox_read_marks WHERE message_id = ?`, id); err != nil {
			return fmt.Errorf("store: delete message: %w", err)
		}
		if _, err := tx.exec(ctx, `UPDATE messages SET deleted_at = ?, body = '', media = '[]' WHERE id = ?`, tx.now, id); err != nil {
			return fmt.Errorf("store: delete message: %w", err)
		}
		// Only files no other message (or pending schedule) still uses go.
		if names, err = releaseMedia(ctx, tx, names, true); err != nil {
			return err
		}
		if id != f.last {
			return nil
		}
		// The newest message went: the one before it leads the thread now.
		var prev, prevAt sql.NullInt64
		err = tx.queryRow(ctx, `SELECT id, created_at FROM messages WHERE conversation_id = ? AND status <> 'scheduled' AND `+visibleMessage+` ORDER BY id DESC LIMIT 1`, convID).Scan(&prev, &prevAt)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: delete message: %w", err)
		}
		var at any
		if prev.Valid {
			at = max(prevAt.Int64, 1)
		}
		if _, err := tx.exec(ctx, `UPDATE conversations SET last_message_id = ?, last_message_at = ? WHERE id = ?`, nullID(prev.Int64), at, convID); err != nil {
			return fmt.Errorf("store: delete message: %w", err)
		}
		if prev.Valid {
			if _, err := tx.exec(ctx, `UPDATE inbox_reads SET last_message_at = ? WHERE conversation_id = ? AND unread > 0`, prevAt.Int64, convID); err != nil {
				return fmt.Errorf("store: delete message: %w", err)
			}
		}
		return nil
	})
	return names, err
}

// countInbound is the inbox's part of storing an inbound text: the
// conversation leads its lists and is unresolved again (recorded when it was
// resolved), and the text is unread for every user with state in the thread
// and for each of readers (the users who may see the line).
func countInbound(ctx context.Context, tx *Tx, account, line, convID, msgID int64, readers []int64) error {
	if _, err := tx.exec(ctx, `INSERT INTO conversation_activity (account_id, conversation_id, kind, created_at)
		SELECT account_id, id, CAST(? AS TEXT), CAST(? AS BIGINT) FROM conversations WHERE id = ? AND resolved_at IS NOT NULL`, domain.ActivityReopenInbound, tx.now, convID); err != nil {
		return fmt.Errorf("store: reopen: %w", err)
	}
	var inCount int64
	if err := tx.queryRow(ctx, `UPDATE conversations SET last_message_id = ?, last_message_at = ?, in_count = in_count + 1, team_unread = team_unread + 1,
			resolved_at = NULL, resolved_by = NULL WHERE id = ? RETURNING in_count`, msgID, tx.now, convID).Scan(&inCount); err != nil {
		return fmt.Errorf("store: conversation: %w", err)
	}
	if _, err := tx.exec(ctx, `UPDATE inbox_reads SET unread = unread + 1, last_message_at = ? WHERE conversation_id = ?`, tx.now, convID); err != nil {
		return fmt.Errorf("store: unread: %w", err)
	}
	if len(readers) == 0 {
		return nil
	}
	// Usually every reader follows the thread already: one query says so.
	args := []any{convID}
	for _, u := range readers {
		args = append(args, u)
	}
	var following int
	if err := tx.queryRow(ctx, `SELECT COUNT(*) FROM inbox_reads WHERE conversation_id = ? AND user_id IN (?`+strings.Repeat(", ?", len(readers)-1)+`)`, args...).Scan(&following); err != nil {
		return fmt.Errorf("store: unread: %w", err)
	}
	if following == len(readers) {
		return nil
	}
	for _, u := range readers {
		// A user new to the thread has read none of it.
		if _, err := tx.exec(ctx, `INSERT INTO inbox_reads (conversation_id, user_id, account_id, line_id, read_through, unread, last_message_at) VALUES (?, ?, ?, ?, 0, ?, ?)
			ON CONFLICT (conversation_id, user_id) DO NOTHING`, convID, u, account, line, inCount, tx.now); err != nil {
			return fmt.Errorf("store: unread: %w", err)
		}
	}
	return nil
}
