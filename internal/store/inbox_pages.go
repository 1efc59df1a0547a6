package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

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
	Resolved   bool
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
	return s.conversationSummaries(ctx, f.AccountID, f.UserID, ids)
}

// conversationSummaries returns the account's conversations ids as a list
// shows them, in the order of ids: the newest message and userID's unread
// count (0: the team's).
func (s *Store) conversationSummaries(ctx context.Context, accountID, userID int64, ids []int64) ([]domain.ConversationSummary, error) {
	out := make([]domain.ConversationSummary, 0, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	// The page's details, by id: the newest message and the caller's count.
	args := []any{userID}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := s.db.Query(ctx, `SELECT c.id, c.line_id, c.participants, c.resolved_at, c.resolved_by, c.assigned_to,
			c.last_message_id, c.last_message_at, c.in_count, c.team_unread, m.direction, m.body, m.media, m.sent_by, r.unread
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
		var resolvedAt, resolvedBy, assignedTo, sentBy, unread sql.NullInt64
		var lastAt, inCount, teamUnread int64
		if err := rows.Scan(&c.ID, &c.Key.Line.ID, &participants, &resolvedAt, &resolvedBy, &assignedTo,
			&c.LastMessageID, &lastAt, &inCount, &teamUnread, &c.LastDirection, &c.LastMessage, &media, &sentBy, &unread); err != nil {
			return nil, fmt.Errorf("store: conversations: %w", err)
		}
		c.AccountID = accountID
		c.Key.Line.AccountID = accountID
		c.Key.Participants = strings.Split(participants, ",")
		setState(&c.Conversation, resolvedAt, resolvedBy, assignedTo)
		c.LastMessageAt = fromMicros(lastAt)
		c.LastHasMedia = media != "[]" && media != ""
		c.LastSentBy = sentBy.Int64
		switch {
		case userID == 0:
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
		if f.Resolved {
			q.WriteString(` AND c.resolved_at IS NOT NULL`)
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
		if f.Unresolved || f.Resolved || f.Unassigned || f.AssignedTo != 0 {
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
		if s.db.Engine() == SQLite && f.Offset >= cmp.Or(s.deepPage, deepPage) && !f.Unread && !f.Unresolved && !f.Resolved && !f.Unassigned {
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
	rows, err := s.db.Query(ctx, q.String(), args...)
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
	rows, err := s.db.Query(ctx, q+` GROUP BY day ORDER BY day DESC`, args...)
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
	err := s.db.QueryRow(ctx, `SELECT id, account_id, resolved_at, resolved_by, assigned_to,
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
	rows, err := s.db.Query(ctx, `SELECT `+threadColumns+` FROM messages WHERE conversation_id = ? AND `+visibleMessage+` ORDER BY id DESC LIMIT ? OFFSET ?`,
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

// MessagePosition returns how many visible messages of conv are newer than
// message id: its index in the thread, newest first. not_found when id is not
// a visible message of conv.
func (s *Store) MessagePosition(ctx context.Context, convID, id int64) (int, error) {
	var n int
	err := s.db.QueryRow(ctx, `SELECT COUNT(*) FROM messages WHERE conversation_id = ? AND id = ? AND `+visibleMessage, convID, id).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: message position: %w", err)
	}
	if n == 0 {
		return 0, domain.Errorf(domain.NotFound, "message %d is not in this conversation", id)
	}
	err = s.db.QueryRow(ctx, `SELECT COUNT(*) FROM messages WHERE conversation_id = ? AND id > ? AND `+visibleMessage, convID, id).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: message position: %w", err)
	}
	return n, nil
}
