package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

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
	if _, err := tx.Exec(ctx, `INSERT INTO conversation_activity (account_id, conversation_id, kind, actor_id, subject_id, body, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		account, conv, kind, nullID(actor), nullID(subject), body, tx.Now()); err != nil {
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

// StateChange is a resolve, reopen, assign or comment, by Actor (0: an API
// key), with its events.
type StateChange struct {
	Key   domain.ConversationKey
	Actor int64
	Change
}

// Resolve marks the conversation resolved, credited to by (0: nobody),
// unless it already is (then nothing is re-stamped), and saves comment (if
// not empty) by author in the same transaction, with ch.Changed when it
// resolved the conversation, ch.Unchanged when it already was.
func (s *Store) Resolve(ctx context.Context, ch StateChange, by int64, comment string, author int64) (domain.Conversation, error) {
	var out domain.Conversation
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		id, f, err := conversationForState(ctx, tx, ch.Key)
		if err != nil {
			return err
		}
		tx.Touches(f.account)
		changed := !f.resolvedAt.Valid
		if changed {
			if _, err := tx.Exec(ctx, `UPDATE conversations SET resolved_at = ?, resolved_by = ? WHERE id = ?`, tx.Now(), nullID(by), id); err != nil {
				return fmt.Errorf("store: resolve: %w", err)
			}
			f.resolvedAt = sql.NullInt64{Int64: tx.Now(), Valid: true}
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
		return ch.write(ctx, tx, f.account, changed, out, 0)
	})
	return out, err
}

// Reopen marks the conversation unresolved (a no-op when it is: then
// ch.Unchanged is the event written, if any).
func (s *Store) Reopen(ctx context.Context, ch StateChange) (domain.Conversation, error) {
	var out domain.Conversation
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		id, f, err := conversationForState(ctx, tx, ch.Key)
		if err != nil {
			return err
		}
		tx.Touches(f.account)
		changed := f.resolvedAt.Valid
		if changed {
			if _, err := tx.Exec(ctx, `UPDATE conversations SET resolved_at = NULL, resolved_by = NULL WHERE id = ?`, id); err != nil {
				return fmt.Errorf("store: reopen: %w", err)
			}
			f.resolvedAt, f.resolvedBy = sql.NullInt64{}, sql.NullInt64{}
			if err := addActivity(ctx, tx, f.account, id, domain.ActivityReopen, ch.Actor, 0, ""); err != nil {
				return err
			}
		}
		out = stateOf(id, ch.Key, f)
		return ch.write(ctx, tx, f.account, changed, out, 0)
	})
	return out, err
}

// Assign gives the conversation to user (0: nobody); ch.Changed is written
// when that changes the owner, ch.Unchanged when not.
func (s *Store) Assign(ctx context.Context, ch StateChange, user int64) (domain.Conversation, error) {
	var out domain.Conversation
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		id, f, err := conversationForState(ctx, tx, ch.Key)
		if err != nil {
			return err
		}
		tx.Touches(f.account)
		changed := f.assignedTo.Int64 != user
		if changed {
			if _, err := tx.Exec(ctx, `UPDATE conversations SET assigned_to = ? WHERE id = ?`, nullID(user), id); err != nil {
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
		return ch.write(ctx, tx, f.account, changed, out, 0)
	})
	return out, err
}

// AddComment saves an internal note by ch.Actor, with ch.Changed.
func (s *Store) AddComment(ctx context.Context, ch StateChange, body string) (domain.Conversation, error) {
	var out domain.Conversation
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		id, f, err := conversationForState(ctx, tx, ch.Key)
		if err != nil {
			return err
		}
		tx.Touches(f.account)
		if err := addActivity(ctx, tx, f.account, id, domain.ActivityComment, ch.Actor, 0, body); err != nil {
			return err
		}
		out = stateOf(id, ch.Key, f)
		return ch.write(ctx, tx, f.account, true, out, 0)
	})
	return out, err
}

// Comments lists a conversation's notes, oldest first.
func (s *Store) Comments(ctx context.Context, convID int64) ([]domain.Comment, error) {
	rows, err := s.db.Query(ctx, `SELECT id, actor_id, body, created_at FROM conversation_activity WHERE conversation_id = ? AND kind = 'comment' ORDER BY id`, convID)
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
	ID             int64
	Kind           string
	Actor, Subject int64
	Body           string
	CreatedAt      time.Time
	ConversationID int64
}

// ConversationActivity lists what happened to a conversation, oldest first.
func (s *Store) ConversationActivity(ctx context.Context, convID int64) ([]Activity, error) {
	rows, err := s.db.Query(ctx, `SELECT kind, actor_id, subject_id, body, created_at FROM conversation_activity WHERE conversation_id = ? ORDER BY id`, convID)
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

// ConversationHistory returns up to limit of a conversation's recorded
// changes, newest first, older than before (0: from the newest).
func (s *Store) ConversationHistory(ctx context.Context, convID, before int64, limit int) ([]Activity, error) {
	q, args := `SELECT id, kind, actor_id, subject_id, body, created_at FROM conversation_activity WHERE conversation_id = ?`, []any{convID}
	if before > 0 {
		q += ` AND id < ?`
		args = append(args, before)
	}
	rows, err := s.db.Query(ctx, q+` ORDER BY id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("store: history: %w", err)
	}
	defer rows.Close()
	out := []Activity{}
	for rows.Next() {
		a := Activity{ConversationID: convID}
		var actor, subject sql.NullInt64
		var created int64
		if err := rows.Scan(&a.ID, &a.Kind, &actor, &subject, &a.Body, &created); err != nil {
			return nil, fmt.Errorf("store: history: %w", err)
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
// ch's events are written with it.
func (s *Store) DeleteConversation(ctx context.Context, convID int64, ch Change) ([]string, error) {
	var media []string
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		media = nil // the function runs again if its group is retried
		f, err := lockConversation(ctx, tx, convID)
		if err != nil {
			return err
		}
		tx.Touches(f.account)
		// Scheduled messages are their schedules' (cancelled with DELETE
		// …/scheduled/{id}): they stay, with their media.
		err = tx.Query(ctx, `SELECT media FROM messages WHERE conversation_id = ? AND deleted_at IS NULL AND media <> '[]' AND status <> 'scheduled'`, []any{convID}, func(r row) error {
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
		// Their words leave the search index with their text.
		if err := unindexMessages(ctx, tx, `conversation_id = ? AND deleted_at IS NULL AND status <> 'scheduled'`, convID); err != nil {
			return err
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
				args = []any{tx.Now(), convID}
			}
			if _, err := tx.Exec(ctx, q, args...); err != nil {
				return fmt.Errorf("store: delete conversation: %w", err)
			}
		}
		// Only files no other message (or pending schedule) still uses go.
		if media, err = releaseMedia(ctx, tx, media, true); err != nil {
			return err
		}
		// Its resolution and owner went with it: the state is empty.
		return ch.write(ctx, tx, f.account, true, domain.Conversation{}, 0)
	})
	return media, err
}

// DeleteMessage erases one message of a conversation for good (its text and
// media; the row stays for the ledger) and takes it out of every unread
// count. It returns the media names to remove from the blob store. ch's
// events are written with it.
func (s *Store) DeleteMessage(ctx context.Context, convID, id int64, ch Change) ([]string, error) {
	var names []string
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		f, err := lockConversation(ctx, tx, convID)
		if err != nil {
			return err
		}
		tx.Touches(f.account)
		var direction, media string
		var status string
		var blocked bool
		err = tx.QueryRow(ctx, `SELECT direction, media, status, blocked FROM messages WHERE id = ? AND conversation_id = ? AND `+visibleMessage, id, convID).Scan(&direction, &media, &status, &blocked)
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
		// The state is unchanged; the event is written once the message is
		// found (a refused deletion writes none).
		if err := ch.write(ctx, tx, f.account, true, stateOf(convID, domain.ConversationKey{}, f), 0); err != nil {
			return err
		}
		json.Unmarshal([]byte(media), &names)
		// A blocked text was never counted (StoreInbound): nothing to take out.
		if direction == "in" && !blocked {
			// Out of the count of every user for whom it was unread: above
			// their watermark without a read mark, or marked unread.
			if _, err := tx.Exec(ctx, `UPDATE inbox_reads SET unread = unread - 1 WHERE conversation_id = ? AND (
					(read_through < ? AND NOT EXISTS (SELECT 1 FROM inbox_read_marks k WHERE k.message_id = ? AND k.user_id = inbox_reads.user_id AND k.is_read))
					OR EXISTS (SELECT 1 FROM inbox_read_marks k WHERE k.message_id = ? AND k.user_id = inbox_reads.user_id AND NOT k.is_read))`,
				convID, id, id, id); err != nil {
				return fmt.Errorf("store: delete message: %w", err)
			}
			teamUnread := f.teamUnread
			if id > f.teamRead {
				teamUnread--
			}
			if _, err := tx.Exec(ctx, `UPDATE conversations SET in_count = in_count - 1, team_unread = ? WHERE id = ?`, teamUnread, convID); err != nil {
				return fmt.Errorf("store: delete message: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `DELETE FROM inbox_read_marks WHERE message_id = ?`, id); err != nil {
			return fmt.Errorf("store: delete message: %w", err)
		}
		if err := unindexMessages(ctx, tx, `id = ?`, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE messages SET deleted_at = ?, body = '', media = '[]' WHERE id = ?`, tx.Now(), id); err != nil {
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
		err = tx.QueryRow(ctx, `SELECT id, created_at FROM messages WHERE conversation_id = ? AND status <> 'scheduled' AND `+visibleMessage+` ORDER BY id DESC LIMIT 1`, convID).Scan(&prev, &prevAt)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: delete message: %w", err)
		}
		var at any
		if prev.Valid {
			at = max(prevAt.Int64, 1)
		}
		if _, err := tx.Exec(ctx, `UPDATE conversations SET last_message_id = ?, last_message_at = ? WHERE id = ?`, nullID(prev.Int64), at, convID); err != nil {
			return fmt.Errorf("store: delete message: %w", err)
		}
		if prev.Valid {
			if _, err := tx.Exec(ctx, `UPDATE inbox_reads SET last_message_at = ? WHERE conversation_id = ? AND unread > 0`, prevAt.Int64, convID); err != nil {
				return fmt.Errorf("store: delete message: %w", err)
			}
		}
		return nil
	})
	return names, err
}
