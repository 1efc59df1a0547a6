package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/search/words"
)

// Search's storage: the words of each message (message_words) and the digit
// suffixes of each conversation's numbers (conversation_numbers), written in
// the transaction that writes the message or creates the conversation, and
// the queries over them. What a query means (which words, which lines the
// caller may read) is package search's; see migrations/*/0034_search.sql.

// indexMessage adds message id's words (body's, folded) to the search index,
// in the message's transaction. A text without words adds nothing.
func indexMessage(ctx context.Context, tx *Tx, id int64, body string) error {
	ws := words.Index(body)
	if ws == "" {
		return nil
	}
	q := `INSERT INTO message_words (rowid, words) VALUES (?, ?)`
	if tx.Engine() == Postgres {
		q = `INSERT INTO message_words (message_id, words) VALUES (?, to_tsvector('simple', ?))`
	}
	if err := tx.ExecLater(ctx, q, id, ws); err != nil {
		return fmt.Errorf("store: search index: %w", err)
	}
	return nil
}

// unindexMessages removes the words of the messages of conversation conv
// that cond (a condition on messages, with args) selects: before they are
// erased.
func unindexMessages(ctx context.Context, tx *Tx, cond string, args ...any) error {
	q := `DELETE FROM message_words WHERE rowid IN (SELECT id FROM messages WHERE ` + cond + `)`
	if tx.Engine() == Postgres {
		q = `DELETE FROM message_words WHERE message_id IN (SELECT id FROM messages WHERE ` + cond + `)`
	}
	if _, err := tx.Exec(ctx, q, args...); err != nil {
		return fmt.Errorf("store: search index: %w", err)
	}
	return nil
}

// indexConversation adds conversation conv's number suffixes (participants
// comma-joined) to the search index. Idempotent: a conversation that
// existed already (an upsert that met a concurrent insert) adds nothing.
func indexConversation(ctx context.Context, tx *Tx, account, conv int64, participants string) error {
	var args []any
	seen := map[string]bool{}
	for _, p := range strings.Split(participants, ",") {
		for _, s := range words.Suffixes(p) {
			if !seen[s] {
				seen[s] = true
				args = append(args, account, s, conv)
			}
		}
	}
	if len(args) == 0 {
		return nil
	}
	q := `INSERT INTO conversation_numbers (account_id, suffix, conversation_id) VALUES (?, ?, ?)` +
		strings.Repeat(`, (?, ?, ?)`, len(args)/3-1) + ` ON CONFLICT DO NOTHING`
	if err := tx.ExecLater(ctx, q, args...); err != nil {
		return fmt.Errorf("store: search index: %w", err)
	}
	return nil
}

// SearchTerm is one word of a message search, folded (package words): it
// matches a word it begins when Prefix, else only the same word.
type SearchTerm struct {
	Word   string
	Prefix bool
}

// MessageSearch selects one page of the messages a search finds, newest
// first. Filters combine with AND.
type MessageSearch struct {
	AccountID int64
	// LineIDs restricts the search to these lines; nil means every line of
	// the account (an empty, non-nil slice matches nothing).
	LineIDs []int64
	Terms   []SearchTerm // every one must match (at least one)
	// Direction is "in", "out" or "" (both).
	Direction string
	// From and To bound the message's time: From <= at < To (zero: open).
	From, To time.Time
	// Resolved and Unresolved keep messages of resolved (unresolved)
	// conversations only.
	Resolved, Unresolved bool
	// Before is the page's cursor: only messages with a smaller id (0: from
	// the newest).
	Before int64
	Limit  int
}

// MessageHit is one message a search found, with its conversation.
type MessageHit struct {
	ID           int64
	LineID       int64
	Direction    string
	Body         string
	CreatedAt    time.Time
	Conversation domain.Conversation // Key.Line holds only the line's id
}

// SearchMessages returns one page of the sent and received messages (never a
// deleted, pending, failed or scheduled one) of the account whose words
// match every term, newest first.
func (s *Store) SearchMessages(ctx context.Context, f MessageSearch) ([]MessageHit, error) {
	if (f.LineIDs != nil && len(f.LineIDs) == 0) || len(f.Terms) == 0 || f.Limit <= 0 {
		return []MessageHit{}, nil
	}
	if s.db.Engine() == Postgres {
		return s.searchMessagesPG(ctx, f)
	}
	// The index drives (CROSS JOIN keeps it outermost), newest first
	// without a sort: FTS5 walks its matches in descending rowid order and
	// the page stops the walk. A word with few matches is as quick: FTS5
	// reads the word's list of messages, not the messages.
	q := `SELECT ` + hitColumns + ` FROM message_words CROSS JOIN messages m ON m.id = message_words.rowid
		JOIN conversations c ON c.id = m.conversation_id WHERE message_words MATCH ?`
	args := []any{ftsQuery(f.Terms)}
	if f.Before > 0 {
		q += ` AND message_words.rowid < ?`
		args = append(args, f.Before)
	}
	cond, cargs := hitFilters(f)
	return s.queryHits(ctx, f, q+cond+` ORDER BY message_words.rowid DESC LIMIT ?`, append(append(args, cargs...), f.Limit)...)
}

const hitColumns = `m.id, m.line_id, m.direction, m.body, m.created_at, c.id, c.participants, c.resolved_at, c.resolved_by, c.assigned_to`

// hitFilters is the search's conditions on the message (m) and its
// conversation (c) beside its words, each starting with AND.
func hitFilters(f MessageSearch) (string, []any) {
	var q strings.Builder
	q.WriteString(` AND m.account_id = ? AND m.deleted_at IS NULL AND m.status IN ('sent', 'received')`)
	args := []any{f.AccountID}
	if f.LineIDs != nil {
		q.WriteString(` AND m.line_id IN (` + placeholders(len(f.LineIDs)) + `)`)
		for _, id := range f.LineIDs {
			args = append(args, id)
		}
	}
	if f.Direction != "" {
		q.WriteString(` AND m.direction = ?`)
		args = append(args, f.Direction)
	}
	if !f.From.IsZero() {
		q.WriteString(` AND m.created_at >= ?`)
		args = append(args, micros(f.From))
	}
	if !f.To.IsZero() {
		q.WriteString(` AND m.created_at < ?`)
		args = append(args, micros(f.To))
	}
	if f.Resolved {
		q.WriteString(` AND c.resolved_at IS NOT NULL`)
	}
	if f.Unresolved {
		q.WriteString(` AND c.resolved_at IS NULL`)
	}
	return q.String(), args
}

// queryHits runs a search query whose columns are hitColumns.
func (s *Store) queryHits(ctx context.Context, f MessageSearch, q string, args ...any) ([]MessageHit, error) {
	rows, err := s.db.QueryPlanned(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: search messages: %w", err)
	}
	defer rows.Close()
	out := make([]MessageHit, 0, f.Limit)
	for rows.Next() {
		var h MessageHit
		var created int64
		var participants string
		var resolvedAt, resolvedBy, assignedTo sql.NullInt64
		if err := rows.Scan(&h.ID, &h.LineID, &h.Direction, &h.Body, &created, &h.Conversation.ID, &participants,
			&resolvedAt, &resolvedBy, &assignedTo); err != nil {
			return nil, fmt.Errorf("store: search messages: %w", err)
		}
		h.CreatedAt = fromMicros(created)
		c := &h.Conversation
		c.AccountID = f.AccountID
		c.Key.Line = domain.Line{ID: h.LineID, AccountID: f.AccountID}
		c.Key.Participants = strings.Split(participants, ",")
		setState(c, resolvedAt, resolvedBy, assignedTo)
		out = append(out, h)
	}
	return out, rows.Err()
}

// ftsQuery is terms as an FTS5 query: each a quoted string, a prefix query
// when it is one, all of them required.
func ftsQuery(terms []SearchTerm) string {
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString(`"` + strings.ReplaceAll(t.Word, `"`, `""`) + `"`)
		if t.Prefix {
			b.WriteByte('*')
		}
	}
	return b.String()
}

// tsQuery is terms as a PostgreSQL tsquery: each a quoted lexeme, :* when a
// prefix, all of them required.
func tsQuery(terms []SearchTerm) string {
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" & ")
		}
		w := strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(t.Word)
		b.WriteString(`'` + w + `'`)
		if t.Prefix {
			b.WriteString(":*")
		}
	}
	return b.String()
}

// NumberSearch selects one page of the conversations whose numbers contain
// Digits, most recently active first.
type NumberSearch struct {
	AccountID int64
	UserID    int64   // whose unread counts the summaries carry (0: the team's)
	LineIDs   []int64 // as MessageSearch's
	Digits    string  // at least words.MinNumberDigits ASCII digits
	Resolved  bool
	// Unresolved keeps unresolved conversations only.
	Unresolved bool
	// After is the page's cursor: the previous page's last conversation
	// (its newest message's time and its id); zero: from the top.
	AfterAt time.Time
	AfterID int64
	Limit   int
}

// SearchConversations returns one page of the account's conversations (with
// a message left) one of whose numbers contains f.Digits, as the list shows
// them, most recently active first.
func (s *Store) SearchConversations(ctx context.Context, f NumberSearch) ([]domain.ConversationSummary, error) {
	if (f.LineIDs != nil && len(f.LineIDs) == 0) || len(f.Digits) < words.MinNumberDigits || f.Limit <= 0 {
		return []domain.ConversationSummary{}, nil
	}
	// Digits are ASCII, so the next string after every one beginning with
	// them is the same with its last byte one higher ('9' becomes ':').
	upper := f.Digits[:len(f.Digits)-1] + string(f.Digits[len(f.Digits)-1]+1)
	// The numbers' matches first, then their conversations by key: on
	// PostgreSQL as an array (an InitPlan), since a generic plan of IN
	// (subquery), which knows no range's size, scans every conversation.
	match := `SELECT n.conversation_id FROM conversation_numbers n WHERE n.account_id = ? AND n.suffix >= ? AND n.suffix < ?`
	q := `SELECT c.id FROM conversations c WHERE c.id IN (` + match + `)`
	if s.db.Engine() == Postgres {
		q = `SELECT c.id FROM conversations c WHERE c.id = ANY(ARRAY(` + match + `))`
	}
	q += ` AND c.account_id = ? AND c.last_message_at IS NOT NULL`
	args := []any{f.AccountID, f.Digits, upper, f.AccountID}
	if f.LineIDs != nil {
		q += ` AND c.line_id IN (` + placeholders(len(f.LineIDs)) + `)`
		for _, id := range f.LineIDs {
			args = append(args, id)
		}
	}
	if f.Resolved {
		q += ` AND c.resolved_at IS NOT NULL`
	}
	if f.Unresolved {
		q += ` AND c.resolved_at IS NULL`
	}
	if f.AfterID > 0 {
		at := micros(f.AfterAt)
		q += ` AND (c.last_message_at < ? OR (c.last_message_at = ? AND c.id < ?))`
		args = append(args, at, at, f.AfterID)
	}
	q += ` ORDER BY c.last_message_at DESC, c.id DESC LIMIT ?`
	args = append(args, f.Limit)
	rows, err := s.db.QueryPlanned(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: search conversations: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: search conversations: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: search conversations: %w", err)
	}
	rows.Close()
	return s.conversationSummaries(ctx, f.AccountID, f.UserID, ids)
}

// searchBackfill indexes the messages and conversations stored before
// migration 0034 (its Go step, in its transaction), logging progress every
// few seconds: on a large database it takes a while (docs/benchmarks.md,
// "Search").
func (s *Store) searchBackfill(ctx context.Context, tx *sql.Tx) error {
	pg := s.db.Engine() == Postgres
	var total int64
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM messages`).Scan(&total); err != nil {
		return err
	}
	started, lastLog := time.Now(), time.Now()
	var done int64
	progress := func(final bool) {
		if final || time.Since(lastLog) >= 2*time.Second {
			lastLog = time.Now()
			s.log.Info("migration 0034: building the search index", "messages", done, "of", total,
				"elapsed", time.Since(started).Round(time.Second).String())
		}
	}
	const batch = 1000
	insert := func(n int) string {
		row := `(?, ?)`
		if pg {
			row = `(?, to_tsvector('simple', ?))`
		}
		col := `rowid`
		if pg {
			col = `message_id`
		}
		return s.db.Rebind(`INSERT INTO message_words (` + col + `, words) VALUES ` + row + strings.Repeat(`, `+row, n-1))
	}
	var after int64
	for {
		// Every message but a scheduled one's stand-in (indexed when it is
		// sent, as a new message): a pending one may still be sent.
		rows, err := tx.QueryContext(ctx, s.db.Rebind(`SELECT id, body FROM messages WHERE id > ? AND deleted_at IS NULL AND status <> 'scheduled' ORDER BY id LIMIT ?`), after, batch)
		if err != nil {
			return err
		}
		var args []any
		n := 0
		for rows.Next() {
			var id int64
			var body string
			if err := rows.Scan(&id, &body); err != nil {
				rows.Close()
				return err
			}
			after = id
			n++
			if ws := words.Index(body); ws != "" {
				args = append(args, id, ws)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(args) > 0 {
			if _, err := tx.ExecContext(ctx, insert(len(args)/2), args...); err != nil {
				return err
			}
		}
		done += int64(n)
		progress(false)
		if n < batch {
			break
		}
	}
	progress(true)
	// Conversations: far fewer, each a few rows of suffixes.
	after = 0
	for {
		rows, err := tx.QueryContext(ctx, s.db.Rebind(`SELECT id, account_id, participants FROM conversations WHERE id > ? ORDER BY id LIMIT ?`), after, batch)
		if err != nil {
			return err
		}
		var args []any
		n := 0
		for rows.Next() {
			var id, account int64
			var participants string
			if err := rows.Scan(&id, &account, &participants); err != nil {
				rows.Close()
				return err
			}
			after = id
			n++
			seen := map[string]bool{}
			for _, p := range strings.Split(participants, ",") {
				for _, suf := range words.Suffixes(p) {
					if !seen[suf] {
						seen[suf] = true
						args = append(args, account, suf, id)
					}
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		// At most 3 parameters a row and a few thousand rows a statement.
		for len(args) > 0 {
			k := min(len(args), 3*2000)
			q := `INSERT INTO conversation_numbers (account_id, suffix, conversation_id) VALUES (?, ?, ?)` +
				strings.Repeat(`, (?, ?, ?)`, k/3-1) + ` ON CONFLICT DO NOTHING`
			if _, err := tx.ExecContext(ctx, s.db.Rebind(q), args[:k]...); err != nil {
				return err
			}
			args = args[k:]
		}
		if n < batch {
			break
		}
	}
	return nil
}
