package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// readState fills Read and ReadBy of msgs: a user has read a message when a
// mark says so, or else when it is at or below their watermark or they sent it.
func (s *Store) readState(ctx context.Context, convID, userID int64, msgs []domain.ThreadMessage) error {
	watermarks := map[int64]int64{}
	rows, err := s.db.Query(ctx, `SELECT user_id, read_through FROM inbox_reads WHERE conversation_id = ?`, convID)
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
	rows, err = s.db.Query(ctx, `SELECT message_id, user_id, is_read FROM inbox_read_marks WHERE message_id IN (?`+strings.Repeat(", ?", len(msgs)-1)+`)`, args...)
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
	err := tx.QueryRow(ctx, `SELECT account_id, line_id, last_message_id, last_message_at, in_count, team_read_through, team_unread, resolved_at, resolved_by, assigned_to, participants
		FROM conversations WHERE id = ?`+tx.ForUpdate(), id).
		Scan(&f.account, &f.line, &last, &lastAt, &f.inCount, &f.teamRead, &f.teamUnread, &f.resolvedAt, &f.resolvedBy, &f.assignedTo, &f.participantsKey)
	if err != nil {
		return f, fmt.Errorf("store: conversation: %w", notFound(err, "conversation"))
	}
	f.last, f.lastAt = last.Int64, lastAt.Int64
	return f, nil
}

// MarkThreadRead marks every message of conversation convID read for userID:
// one row written (the watermark moves to the newest message and the user's
// marks in the thread go), whatever the thread's length. ch.Changed is
// written when the user's state moved, with their new watermark. Reading a
// thread with markRead asks ThreadIsRead first: most such reads find the
// thread read, and need no write and no event.
func (s *Store) MarkThreadRead(ctx context.Context, convID, userID int64, ch Change) error {
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		f, err := lockConversation(ctx, tx, convID)
		if err != nil {
			return err
		}
		tx.Touches(f.account)
		moved, through, err := markThreadRead(ctx, tx, convID, userID, f)
		if err != nil {
			return err
		}
		return ch.write(ctx, tx, f.account, moved, stateOf(convID, domain.ConversationKey{}, f), through)
	})
}

// ThreadIsRead reports whether marking the thread read for userID (0: the
// team view alone) would change nothing: the newest message is at or below
// the team's watermark and the user's, neither count is left, and the user
// has no marks in the thread. One indexed read.
func (s *Store) ThreadIsRead(ctx context.Context, convID, userID int64) (bool, error) {
	var last, rt, unread sql.NullInt64
	var teamRead, teamUnread int64
	var marks bool
	err := s.db.QueryRow(ctx, `SELECT c.last_message_id, c.team_read_through, c.team_unread, r.read_through, r.unread,
			EXISTS (SELECT 1 FROM inbox_read_marks k WHERE k.user_id = ? AND k.conversation_id = c.id)
		FROM conversations c LEFT JOIN inbox_reads r ON r.conversation_id = c.id AND r.user_id = ? WHERE c.id = ?`,
		userID, userID, convID).Scan(&last, &teamRead, &teamUnread, &rt, &unread, &marks)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil // the write says not_found
	}
	if err != nil {
		return false, fmt.Errorf("store: mark read: %w", err)
	}
	if !last.Valid {
		return true, nil
	}
	if teamRead < last.Int64 || teamUnread != 0 {
		return false, nil
	}
	return userID == 0 || (rt.Valid && rt.Int64 >= last.Int64 && unread.Int64 == 0 && !marks), nil
}

// markThreadRead marks the thread read for userID and reports whether the
// user's read state moved, and their watermark after it. An API key's read
// (userID 0) moves only the team's view: no personal state moved.
func markThreadRead(ctx context.Context, tx *Tx, convID, userID int64, f convFacts) (moved bool, through int64, err error) {
	if f.last == 0 {
		return false, 0, nil
	}
	if userID == 0 {
		// An API key has no personal state: only the team's view moves.
		return false, 0, markTeamRead(ctx, tx, convID, f)
	}
	var rt, unread int64
	var marks bool
	err = tx.QueryRow(ctx, `SELECT read_through, unread, EXISTS (SELECT 1 FROM inbox_read_marks k WHERE k.user_id = ? AND k.conversation_id = ?)
		FROM inbox_reads WHERE conversation_id = ? AND user_id = ?`, userID, convID, convID, userID).Scan(&rt, &unread, &marks)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		moved = true // nothing read yet
	case err != nil:
		return false, 0, fmt.Errorf("store: mark read: %w", err)
	default:
		moved = rt < f.last || unread != 0 || marks
	}
	if _, err := tx.Exec(ctx, `INSERT INTO inbox_reads (conversation_id, user_id, account_id, line_id, read_through, unread, last_message_at) VALUES (?, ?, ?, ?, ?, 0, 0)
		ON CONFLICT (conversation_id, user_id) DO UPDATE SET unread = 0,
			read_through = CASE WHEN excluded.read_through > inbox_reads.read_through THEN excluded.read_through ELSE inbox_reads.read_through END`,
		convID, userID, f.account, f.line, f.last); err != nil {
		return false, 0, fmt.Errorf("store: mark read: %w", err)
	}
	if marks {
		if _, err := tx.Exec(ctx, `DELETE FROM inbox_read_marks WHERE user_id = ? AND conversation_id = ?`, userID, convID); err != nil {
			return false, 0, fmt.Errorf("store: mark read: %w", err)
		}
	}
	return moved, max(rt, f.last), markTeamRead(ctx, tx, convID, f)
}

// markTeamRead records that the thread has been read to its newest message.
func markTeamRead(ctx context.Context, tx *Tx, convID int64, f convFacts) error {
	if f.last > f.teamRead || f.teamUnread != 0 {
		if _, err := tx.Exec(ctx, `UPDATE conversations SET team_read_through = ?, team_unread = 0 WHERE id = ?`, max(f.last, f.teamRead), convID); err != nil {
			return fmt.Errorf("store: mark read: %w", err)
		}
	}
	return nil
}

// userRow returns userID's watermark and unread count in a conversation,
// creating the row (nothing read yet) if there is none.
func userRow(ctx context.Context, tx *Tx, convID, userID int64, f convFacts) (readThrough, unread int64, err error) {
	err = tx.QueryRow(ctx, `SELECT read_through, unread FROM inbox_reads WHERE conversation_id = ? AND user_id = ?`, convID, userID).Scan(&readThrough, &unread)
	if errors.Is(err, sql.ErrNoRows) {
		_, err = tx.Exec(ctx, `INSERT INTO inbox_reads (conversation_id, user_id, account_id, line_id, read_through, unread, last_message_at) VALUES (?, ?, ?, ?, 0, ?, ?)`,
			convID, userID, f.account, f.line, f.inCount, f.lastAt)
		return 0, f.inCount, err
	}
	return readThrough, unread, err
}

// MarkMessages sets userID's read state of messages ids (distinct) of
// conversation convID. not_found, and nothing changed, when one of them is
// not a visible message of the thread. ch's events are written only when
// the read state of one of them moved.
func (s *Store) MarkMessages(ctx context.Context, convID, userID int64, ids []int64, read bool, ch Change) error {
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		f, err := lockConversation(ctx, tx, convID)
		if err != nil {
			return err
		}
		tx.Touches(f.account)
		moved := false
		rt, _, err := userRow(ctx, tx, convID, userID, f)
		if err != nil {
			return fmt.Errorf("store: read state: %w", err)
		}
		var delta int64
		for _, id := range ids {
			var direction string
			var sentBy sql.NullInt64
			var blocked bool
			err := tx.QueryRow(ctx, `SELECT direction, sent_by, blocked FROM messages WHERE id = ? AND conversation_id = ? AND `+visibleMessage, id, convID).Scan(&direction, &sentBy, &blocked)
			if errors.Is(err, sql.ErrNoRows) {
				return domain.Errorf(domain.NotFound, "message %d is not in this conversation", id)
			}
			if err != nil {
				return fmt.Errorf("store: read state: %w", err)
			}
			def := id <= rt || sentBy.Int64 == userID
			before := def
			var mark bool
			err = tx.QueryRow(ctx, `SELECT is_read FROM inbox_read_marks WHERE message_id = ? AND user_id = ?`, id, userID).Scan(&mark)
			if err == nil {
				before = mark
			} else if !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("store: read state: %w", err)
			}
			if read == def {
				_, err = tx.Exec(ctx, `DELETE FROM inbox_read_marks WHERE message_id = ? AND user_id = ?`, id, userID)
			} else {
				_, err = tx.Exec(ctx, `INSERT INTO inbox_read_marks (message_id, user_id, conversation_id, is_read) VALUES (?, ?, ?, ?)
					ON CONFLICT (message_id, user_id) DO UPDATE SET is_read = excluded.is_read`, id, userID, convID, read)
			}
			if err != nil {
				return fmt.Errorf("store: read mark: %w", err)
			}
			moved = moved || before != read
			// A blocked text is in no unread count (StoreInbound): its
			// marks move none.
			if direction == "in" && !blocked && before != read {
				if read {
					delta--
				} else {
					delta++
				}
			}
		}
		if delta != 0 {
			if _, err := tx.Exec(ctx, `UPDATE inbox_reads SET unread = unread + ?, last_message_at = ? WHERE conversation_id = ? AND user_id = ?`,
				delta, f.lastAt, convID, userID); err != nil {
				return fmt.Errorf("store: read state: %w", err)
			}
		}
		return ch.write(ctx, tx, f.account, moved, stateOf(convID, domain.ConversationKey{}, f), 0)
	})
}

// UnreadConversations lists the conversations of line lineID unread for
// userID: what POST /sms/lines/{line}/read marks read, for the inbox to
// build each one's event (their ids and participants; Key.Line is left for
// the caller).
func (s *Store) UnreadConversations(ctx context.Context, lineID, userID int64) ([]domain.Conversation, error) {
	rows, err := s.db.Query(ctx, `SELECT c.id, c.account_id, c.participants
		FROM inbox_reads r JOIN conversations c ON c.id = r.conversation_id WHERE r.user_id = ? AND r.line_id = ? AND r.unread > 0 ORDER BY c.id`, userID, lineID)
	if err != nil {
		return nil, fmt.Errorf("store: line read: %w", err)
	}
	defer rows.Close()
	var out []domain.Conversation
	for rows.Next() {
		var c domain.Conversation
		var parts string
		if err := rows.Scan(&c.ID, &c.AccountID, &parts); err != nil {
			return nil, fmt.Errorf("store: line read: %w", err)
		}
		c.Key.Participants = strings.Split(parts, ",")
		out = append(out, c)
	}
	return out, rows.Err()
}

// LineRead is one conversation a line-wide read marks, with its event.
type LineRead struct {
	ConversationID int64
	Change
}

// MarkLineRead marks read, for userID, every message of the conversations
// convs of line lineID (since: only those sent at or after it; zero time for
// all): the conversations UnreadConversations listed, so that each has its
// event. A text that arrives after that listing stays unread (the user did
// not see it). Each conversation whose read state moved gets its event.
func (s *Store) MarkLineRead(ctx context.Context, lineID, userID int64, since time.Time, convs []LineRead) error {
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		for _, c := range convs {
			f, err := lockConversation(ctx, tx, c.ConversationID)
			if err != nil {
				return err
			}
			tx.Touches(f.account)
			if f.line != lineID {
				return domain.Errorf(domain.NotFound, "conversation not found")
			}
			var moved bool
			var through int64
			if since.IsZero() {
				moved, through, err = markThreadRead(ctx, tx, c.ConversationID, userID, f)
			} else {
				moved, through, err = markThreadReadSince(ctx, tx, c.ConversationID, userID, f, micros(since))
			}
			if err != nil {
				return err
			}
			if err := c.write(ctx, tx, f.account, moved, stateOf(c.ConversationID, domain.ConversationKey{}, f), through); err != nil {
				return err
			}
		}
		return nil
	})
}

// markThreadReadSince marks read the messages of a thread sent at or after
// since: the watermark moves to the newest message, and the older messages
// that were unread keep that state as marks. It reports whether it marked
// anything, and the watermark after it.
func markThreadReadSince(ctx context.Context, tx *Tx, convID, userID int64, f convFacts, since int64) (bool, int64, error) {
	var first sql.NullInt64
	if err := tx.QueryRow(ctx, `SELECT MIN(id) FROM messages WHERE conversation_id = ? AND created_at >= ? AND `+visibleMessage, convID, since).Scan(&first); err != nil {
		return false, 0, fmt.Errorf("store: line read: %w", err)
	}
	if !first.Valid {
		return false, 0, nil // nothing that recent
	}
	rt, _, err := userRow(ctx, tx, convID, userID, f)
	if err != nil {
		return false, 0, fmt.Errorf("store: line read: %w", err)
	}
	// Older messages above the watermark without a mark stay unread: mark them so.
	if _, err := tx.Exec(ctx, `INSERT INTO inbox_read_marks (message_id, user_id, conversation_id, is_read)
		SELECT m.id, CAST(? AS BIGINT), m.conversation_id, FALSE FROM messages m
		WHERE m.conversation_id = ? AND m.id > ? AND m.id < ? AND m.deleted_at IS NULL AND (m.status IN ('sent', 'received') OR m.scheduled)
			AND NOT EXISTS (SELECT 1 FROM inbox_read_marks k WHERE k.message_id = m.id AND k.user_id = ?)
			AND NOT (m.sent_by IS NOT NULL AND m.sent_by = ?)`,
		userID, convID, rt, first.Int64, userID, userID); err != nil {
		return false, 0, fmt.Errorf("store: line read: %w", err)
	}
	// Read marks are now what the watermark says; unread marks from since on are read.
	if _, err := tx.Exec(ctx, `DELETE FROM inbox_read_marks WHERE user_id = ? AND conversation_id = ? AND (is_read OR message_id >= ?)`, userID, convID, first.Int64); err != nil {
		return false, 0, fmt.Errorf("store: line read: %w", err)
	}
	var unread int64
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM inbox_read_marks k JOIN messages m ON m.id = k.message_id
		WHERE k.user_id = ? AND k.conversation_id = ? AND NOT k.is_read AND m.direction = 'in' AND NOT m.blocked`, userID, convID).Scan(&unread); err != nil {
		return false, 0, fmt.Errorf("store: line read: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE inbox_reads SET read_through = ?, unread = ?, last_message_at = ? WHERE conversation_id = ? AND user_id = ?`,
		max(rt, f.last), unread, f.lastAt, convID, userID); err != nil {
		return false, 0, fmt.Errorf("store: line read: %w", err)
	}
	if unread == 0 {
		return true, max(rt, f.last), markTeamRead(ctx, tx, convID, f)
	}
	return true, max(rt, f.last), nil
}

// UnreadCounts returns unread inbound texts per line id for userID (0: the
// team view of an API key), counting only texts sent at or after since when
// since is not zero. Lines with none are absent. Without since it reads the
// caller's counters (inbox_unread_totals, a row per line, kept by triggers:
// see migrations/*/0030_unread_totals.sql); with since it counts the unread
// messages of that period in the conversations unread for the caller.
func (s *Store) UnreadCounts(ctx context.Context, accountID, userID int64, since time.Time) (map[int64]int64, error) {
	var queries []string
	var args [][]any
	switch {
	case userID != 0 && since.IsZero():
		// The counters (migration 0030): a row per line of the user's.
		queries = append(queries, `SELECT line_id, SUM(unread) FROM inbox_unread_totals WHERE user_id = ? AND unread > 0 GROUP BY line_id`)
		args = append(args, []any{userID})
	case userID != 0:
		queries = append(queries,
			`SELECT r.line_id, COUNT(*) FROM inbox_reads r JOIN messages m ON m.conversation_id = r.conversation_id AND m.id > r.read_through
			WHERE r.user_id = ? AND r.unread > 0 AND m.direction = 'in' AND NOT m.blocked AND m.created_at >= ? AND m.deleted_at IS NULL AND (m.status IN ('sent', 'received') OR m.scheduled)
				AND NOT EXISTS (SELECT 1 FROM inbox_read_marks k WHERE k.message_id = m.id AND k.user_id = r.user_id AND k.is_read)
			GROUP BY r.line_id`,
			`SELECT r.line_id, COUNT(*) FROM inbox_read_marks k JOIN messages m ON m.id = k.message_id
				JOIN inbox_reads r ON r.conversation_id = k.conversation_id AND r.user_id = k.user_id
			WHERE k.user_id = ? AND NOT k.is_read AND m.id <= r.read_through AND m.direction = 'in' AND NOT m.blocked AND m.created_at >= ? AND m.deleted_at IS NULL
			GROUP BY r.line_id`)
		args = append(args, []any{userID, micros(since)}, []any{userID, micros(since)})
	case since.IsZero():
		// The team's counters: user 0.
		queries = append(queries, `SELECT line_id, SUM(unread) FROM inbox_unread_totals WHERE user_id = 0 AND account_id = ? AND unread > 0 GROUP BY line_id`)
		args = append(args, []any{accountID})
	default:
		queries = append(queries, `SELECT c.line_id, COUNT(*) FROM conversations c JOIN messages m ON m.conversation_id = c.id AND m.id > c.team_read_through
			WHERE c.account_id = ? AND c.team_unread > 0 AND m.direction = 'in' AND NOT m.blocked AND m.created_at >= ? AND m.deleted_at IS NULL AND (m.status IN ('sent', 'received') OR m.scheduled)
			GROUP BY c.line_id`)
		args = append(args, []any{accountID, micros(since)})
	}
	out := map[int64]int64{}
	for i, q := range queries {
		rows, err := s.db.Query(ctx, q, args[i]...)
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

// countInbound is the inbox's part of storing an inbound text: the
// conversation leads its lists and is unresolved again (recorded when it was
// resolved), and the text is unread for every user with state in the thread
// and for each of readers (the users who may see the line).
func countInbound(ctx context.Context, tx *Tx, account, line, convID, msgID int64, readers []int64) error {
	if _, err := tx.Exec(ctx, `INSERT INTO conversation_activity (account_id, conversation_id, kind, created_at)
		SELECT account_id, id, CAST(? AS TEXT), CAST(? AS BIGINT) FROM conversations WHERE id = ? AND resolved_at IS NOT NULL`, domain.ActivityReopenInbound, tx.Now(), convID); err != nil {
		return fmt.Errorf("store: reopen: %w", err)
	}
	var inCount int64
	if err := tx.QueryRow(ctx, `UPDATE conversations SET last_message_id = ?, last_message_at = ?, in_count = in_count + 1, team_unread = team_unread + 1,
			resolved_at = NULL, resolved_by = NULL WHERE id = ? RETURNING in_count`, msgID, tx.Now(), convID).Scan(&inCount); err != nil {
		return fmt.Errorf("store: conversation: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE inbox_reads SET unread = unread + 1, last_message_at = ? WHERE conversation_id = ?`, tx.Now(), convID); err != nil {
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
	if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM inbox_reads WHERE conversation_id = ? AND user_id IN (?`+strings.Repeat(", ?", len(readers)-1)+`)`, args...).Scan(&following); err != nil {
		return fmt.Errorf("store: unread: %w", err)
	}
	if following == len(readers) {
		return nil
	}
	for _, u := range readers {
		// A user new to the thread has read none of it.
		if _, err := tx.Exec(ctx, `INSERT INTO inbox_reads (conversation_id, user_id, account_id, line_id, read_through, unread, last_message_at) VALUES (?, ?, ?, ?, 0, ?, ?)
			ON CONFLICT (conversation_id, user_id) DO NOTHING`, convID, u, account, line, inCount, tx.Now()); err != nil {
			return fmt.Errorf("store: unread: %w", err)
		}
	}
	return nil
}

// CheckUnreadTotals compares every unread counter (inbox_unread_totals) with
// the sums it stands for, computed from scratch as UnreadCounts did before
// the counters: inbox_reads.unread per user and line, conversations.team_unread
// per account and line (user 0). It returns nil when they agree, or an error
// listing the rows that differ. For tests, and for an operator who doubts
// the counters: it reads every row of both tables.
func (s *Store) CheckUnreadTotals(ctx context.Context) error {
	type key struct{ user, account, line int64 }
	want, got := map[key]int64{}, map[key]int64{}
	for _, q := range []struct {
		sql string
		m   map[key]int64
	}{
		{`SELECT user_id, account_id, line_id, SUM(unread) FROM inbox_reads WHERE unread > 0 GROUP BY user_id, account_id, line_id`, want},
		{`SELECT 0, account_id, line_id, SUM(team_unread) FROM conversations WHERE team_unread > 0 GROUP BY account_id, line_id`, want},
		{`SELECT user_id, account_id, line_id, unread FROM inbox_unread_totals WHERE unread <> 0`, got},
	} {
		rows, err := s.db.Query(ctx, q.sql)
		if err != nil {
			return fmt.Errorf("store: check unread: %w", err)
		}
		for rows.Next() {
			var k key
			var n int64
			if err := rows.Scan(&k.user, &k.account, &k.line, &n); err != nil {
				rows.Close()
				return fmt.Errorf("store: check unread: %w", err)
			}
			q.m[k] = n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: check unread: %w", err)
		}
	}
	var diffs []string
	for k, n := range want {
		if got[k] != n {
			diffs = append(diffs, fmt.Sprintf("user %d account %d line %d: counter %d, rows %d", k.user, k.account, k.line, got[k], n))
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("user %d account %d line %d: counter %d, rows 0", k.user, k.account, k.line, n))
		}
	}
	if len(diffs) > 0 {
		slices.Sort(diffs)
		return fmt.Errorf("store: unread counters differ from their rows: %s", strings.Join(diffs, "; "))
	}
	return nil
}
