package main

import (
	"context"
	"fmt"
	"strings"

	"switchboard/internal/search/words"
)

// The COPY path's derived rows: what the store writes beside each message
// and conversation (search terms), and the state it keeps up to date as
// messages arrive and threads are read, made once from the loaded rows.

// numbers: each conversation's number suffixes, as indexConversation
// writes them when the store creates the conversation.
func (l *loader) numbers(ctx context.Context) error {
	t := 0
	var buf [][]any
	return l.copy(ctx, "conversation_numbers", []string{"account_id", "suffix", "conversation_id"}, func() []any {
		for len(buf) == 0 && t < len(l.p.threads) {
			seen := map[string]bool{}
			for _, p := range strings.Split(l.p.threads[t].number, ",") {
				for _, s := range words.Suffixes(p) {
					if !seen[s] {
						seen[s] = true
						buf = append(buf, []any{l.s.account, s, l.conv0 + int64(t)})
					}
				}
			}
			t++
		}
		if len(buf) == 0 {
			return nil
		}
		row := buf[0]
		buf = buf[1:]
		return row
	})
}

// readThreads lists the threads every user read in a temporary table, for
// derive and readState.
func (l *loader) readThreads(ctx context.Context) error {
	if _, err := l.tx.Exec(ctx, `CREATE TEMPORARY TABLE inboxgen_read (conversation_id BIGINT PRIMARY KEY) ON COMMIT DROP`); err != nil {
		return err
	}
	t := 0
	return l.copy(ctx, "inboxgen_read", []string{"conversation_id"}, func() []any {
		for t < len(l.p.threads) {
			if t++; l.p.threads[t-1].read {
				return []any{l.conv0 + int64(t-1)}
			}
		}
		return nil
	})
}

// words: every message's words, as indexMessage writes them: the text's
// words folded by package words, as a tsvector of the 'simple'
// configuration; a text without words has no row. The texts are few, so
// each is folded and made a tsvector once and joined to its messages.
func (l *loader) words(ctx context.Context) error {
	if _, err := l.tx.Exec(ctx, `CREATE TEMPORARY TABLE inboxgen_words (body TEXT PRIMARY KEY, words TEXT NOT NULL) ON COMMIT DROP`); err != nil {
		return err
	}
	for _, body := range texts {
		if ws := words.Index(body); ws != "" {
			if _, err := l.tx.Exec(ctx, `INSERT INTO inboxgen_words (body, words) VALUES ($1, $2)`, body, ws); err != nil {
				return err
			}
		}
	}
	tag, err := l.tx.Exec(ctx, `INSERT INTO message_words (message_id, words)
		SELECT m.id, w.tsv FROM messages m JOIN (SELECT body, to_tsvector('simple', words) AS tsv FROM inboxgen_words) w ON w.body = m.body
		WHERE m.id BETWEEN $1 AND $2 ORDER BY m.id`, l.msg0, l.lastMsg())
	if err != nil {
		return fmt.Errorf("message words: %w", err)
	}
	l.logf("message_words: %d rows", tag.RowsAffected())
	return nil
}

// derive sets each conversation's newest message (countInbound's and
// leadConversation's), its inbound count and the team's read state: a
// thread every user read is read to its newest message (markTeamRead),
// any other has all its inbound texts unread. The update runs the
// conversations' unread-counter trigger, as the store's updates do.
func (l *loader) derive(ctx context.Context) error {
	tag, err := l.tx.Exec(ctx, `UPDATE conversations c SET last_message_id = m.last_id, last_message_at = m.last_at, in_count = m.ins,
			team_read_through = CASE WHEN r.conversation_id IS NULL THEN 0 ELSE m.last_id END,
			team_unread = CASE WHEN r.conversation_id IS NULL THEN m.ins ELSE 0 END
		FROM (SELECT conversation_id, MAX(id) AS last_id, (array_agg(created_at ORDER BY id DESC))[1] AS last_at,
				COUNT(*) FILTER (WHERE direction = 'in' AND NOT blocked) AS ins
			FROM messages WHERE id BETWEEN $1 AND $2 AND deleted_at IS NULL AND status IN ('sent', 'received') GROUP BY conversation_id) m
		LEFT JOIN inboxgen_read r ON r.conversation_id = m.conversation_id
		WHERE c.id = m.conversation_id`, l.msg0, l.lastMsg())
	if err != nil {
		return fmt.Errorf("conversations' state: %w", err)
	}
	l.logf("conversations: %d updated with their newest message and counts", tag.RowsAffected())
	return nil
}

// readState writes every user's inbox_reads row of every conversation: the
// first inbound text made one for each user who may see the line (all of
// them), and a read thread was read by all of them, so each user's row is
// the team's state (watermark, unread count); its last_message_at follows
// the newest message while the thread is unread, and stays where the read
// found it, the newest message too. The insert runs inbox_reads'
// unread-counter trigger, as the store's writes do.
func (l *loader) readState(ctx context.Context) error {
	tag, err := l.tx.Exec(ctx, `INSERT INTO inbox_reads (conversation_id, user_id, account_id, line_id, read_through, unread, last_message_at)
		SELECT c.id, u.id, c.account_id, c.line_id, c.team_read_through, c.team_unread, c.last_message_at
		FROM conversations c CROSS JOIN unnest($3::BIGINT[]) AS u(id)
		WHERE c.id BETWEEN $1 AND $2 ORDER BY c.id, u.id`, l.conv0, l.lastConv(), l.s.users)
	if err != nil {
		return fmt.Errorf("read state: %w", err)
	}
	l.logf("inbox_reads: %d rows", tag.RowsAffected())
	return nil
}

// counters completes the unread counters (inbox_unread_totals). The
// triggers on conversations and inbox_reads noted the unread texts of the
// two statements above, summed into the counters at COMMIT; a counter row
// that the store made and took back to 0 (every thread of the line read
// since) stays, which the sums cannot know: every (user, line) with a
// conversation had one, the user's and the team's (user 0) alike, since
// every conversation opens with an unread text. Those rows are made here at
// 0, and the COMMIT adds the sums to them.
func (l *loader) counters(ctx context.Context) error {
	tag, err := l.tx.Exec(ctx, `INSERT INTO inbox_unread_totals (user_id, account_id, line_id, unread)
		SELECT DISTINCT u.id, c.account_id, c.line_id, 0
		FROM conversations c CROSS JOIN unnest($3::BIGINT[] || 0::BIGINT) AS u(id)
		WHERE c.id BETWEEN $1 AND $2 AND c.in_count > 0
		ON CONFLICT (user_id, account_id, line_id) DO NOTHING`, l.conv0, l.lastConv(), l.s.users)
	if err != nil {
		return fmt.Errorf("unread counters: %w", err)
	}
	l.logf("inbox_unread_totals: %d rows", tag.RowsAffected())
	return nil
}
