package store

import (
	"context"
	"database/sql"
	"fmt"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// Per-owner ceilings on saved replies and drafts: enough for any team, and a
// bound on what one credential can make the database hold.
const (
	MaxTemplatesPerOwner = 1000
	MaxDraftsPerOwner    = 1000
)

const templateColumns = `id, account_id, user_id, title, body, created_at, updated_at, shared`

func scanTemplate(sc interface{ Scan(...any) error }) (domain.Template, error) {
	var t domain.Template
	var created, updated int64
	err := sc.Scan(&t.ID, &t.AccountID, &t.UserID, &t.Title, &t.Body, &created, &updated, &t.Shared)
	t.CreatedAt, t.UpdatedAt = fromMicros(created), fromMicros(updated)
	return t, err
}

// Templates lists the personal saved replies of one owner and the
// account's shared ones (migration 0036), oldest first; each query has its
// index.
func (s *Store) Templates(ctx context.Context, accountID, userID int64) ([]domain.Template, error) {
	rows, err := s.db.Query(ctx, `SELECT `+templateColumns+` FROM templates WHERE account_id = ? AND user_id = ? AND NOT shared
		UNION ALL SELECT `+templateColumns+` FROM templates WHERE account_id = ? AND shared ORDER BY id`, accountID, userID, accountID)
	if err != nil {
		return nil, fmt.Errorf("store: templates: %w", err)
	}
	defer rows.Close()
	out := []domain.Template{}
	for rows.Next() {
		t, err := scanTemplate(rows)
		if err != nil {
			return nil, fmt.Errorf("store: templates: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// CreateTemplate saves a reply for its owner (a shared one for the
// account, t.UserID its author); a conflict when the owner (the account,
// for a shared one) already has the most allowed.
func (s *Store) CreateTemplate(ctx context.Context, t *domain.Template) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		var n int
		count, args := `SELECT COUNT(*) FROM templates WHERE account_id = ? AND user_id = ? AND NOT shared`, []any{t.AccountID, t.UserID}
		if t.Shared {
			count, args = `SELECT COUNT(*) FROM templates WHERE account_id = ? AND shared`, []any{t.AccountID}
		}
		if err := tx.QueryRow(ctx, count, args...).Scan(&n); err != nil {
			return fmt.Errorf("store: count templates: %w", err)
		}
		if n >= MaxTemplatesPerOwner {
			if t.Shared {
				return domain.Errorf(domain.Conflict, "the account already has %d shared saved replies, the most allowed; delete one first", MaxTemplatesPerOwner)
			}
			return domain.Errorf(domain.Conflict, "you already have %d saved replies, the most allowed; delete one first", MaxTemplatesPerOwner)
		}
		id, err := tx.Insert(ctx, `INSERT INTO templates (account_id, user_id, title, body, created_at, updated_at, shared) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			t.AccountID, t.UserID, t.Title, t.Body, tx.Now(), tx.Now(), t.Shared)
		if err != nil {
			return fmt.Errorf("store: create template: %w", err)
		}
		t.ID, t.CreatedAt, t.UpdatedAt = id, fromMicros(tx.Now()), fromMicros(tx.Now())
		return nil
	})
}

// Template returns template id as userID sees it: their own personal one,
// or one the account shares; not_found otherwise.
func (s *Store) Template(ctx context.Context, accountID, userID, id int64) (domain.Template, error) {
	t, err := scanTemplate(s.db.QueryRow(ctx, `SELECT `+templateColumns+` FROM templates WHERE id = ? AND account_id = ? AND (shared OR user_id = ?)`, id, accountID, userID))
	if err != nil {
		return t, notFound(err, "template")
	}
	return t, nil
}

// ReplaceTemplate overwrites the title and body of template id: the owner's
// personal one, or, when t.Shared, the account's shared one (whoever wrote
// it); not_found when there is no such template.
func (s *Store) ReplaceTemplate(ctx context.Context, t *domain.Template) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		owner, args := templateOwner(t.Shared, t.UserID, t.Title, t.Body, tx.Now(), t.ID, t.AccountID)
		got, err := scanTemplate(tx.QueryRow(ctx, `UPDATE templates SET title = ?, body = ?, updated_at = ? WHERE id = ? AND account_id = ? AND `+owner+` RETURNING `+templateColumns, args...))
		if err != nil {
			return notFound(err, "template")
		}
		*t = got
		return nil
	})
}

// DeleteTemplate removes template id (the owner's, or the account's shared
// one when shared); not_found when absent.
func (s *Store) DeleteTemplate(ctx context.Context, accountID, userID, id int64, shared bool) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		owner, args := templateOwner(shared, userID, id, accountID)
		res, err := tx.Exec(ctx, `DELETE FROM templates WHERE id = ? AND account_id = ? AND `+owner, args...)
		return deleted(res, err, "template")
	})
}

// templateOwner is the condition on a template's owner, with args and its
// own: a shared one is the account's (whoever wrote it), a personal one
// userID's.
func templateOwner(shared bool, userID int64, args ...any) (string, []any) {
	if shared {
		return `shared`, args
	}
	return `NOT shared AND user_id = ?`, append(args, userID)
}

// Draft returns the owner's draft under key.
func (s *Store) Draft(ctx context.Context, accountID, userID int64, key string) (domain.Draft, error) {
	d := domain.Draft{AccountID: accountID, UserID: userID, Key: key}
	var updated int64
	err := s.db.QueryRow(ctx, `SELECT message, updated_at FROM drafts WHERE account_id = ? AND user_id = ? AND draft_id = ?`, accountID, userID, key).Scan(&d.Message, &updated)
	if err != nil {
		return domain.Draft{}, notFound(err, "draft")
	}
	d.UpdatedAt = fromMicros(updated)
	return d, nil
}

// PutDraft creates or replaces the owner's draft under d.Key.
func (s *Store) PutDraft(ctx context.Context, d *domain.Draft) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `UPDATE drafts SET message = ?, updated_at = ? WHERE account_id = ? AND user_id = ? AND draft_id = ?`,
			d.Message, tx.Now(), d.AccountID, d.UserID, d.Key)
		if err != nil {
			return fmt.Errorf("store: put draft: %w", err)
		}
		d.UpdatedAt = fromMicros(tx.Now())
		if n, _ := res.RowsAffected(); n > 0 {
			return nil
		}
		var count int
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM drafts WHERE account_id = ? AND user_id = ?`, d.AccountID, d.UserID).Scan(&count); err != nil {
			return fmt.Errorf("store: count drafts: %w", err)
		}
		if count >= MaxDraftsPerOwner {
			return domain.Errorf(domain.Conflict, "you already have %d drafts, the most allowed; discard one first", MaxDraftsPerOwner)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO drafts (account_id, user_id, draft_id, message, updated_at) VALUES (?, ?, ?, ?, ?)`,
			d.AccountID, d.UserID, d.Key, d.Message, tx.Now()); err != nil {
			return fmt.Errorf("store: put draft: %w", err)
		}
		return nil
	})
}

// DeleteDraft discards the owner's draft under key; not_found when absent.
func (s *Store) DeleteDraft(ctx context.Context, accountID, userID int64, key string) error {
	return s.db.Write(ctx, sqldb.DropCache, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `DELETE FROM drafts WHERE account_id = ? AND user_id = ? AND draft_id = ?`, accountID, userID, key)
		return deleted(res, err, "draft")
	})
}

// deleted turns a DELETE's result into not_found when it removed nothing.
func deleted(res sql.Result, err error, what string) error {
	if err != nil {
		return fmt.Errorf("store: delete %s: %w", what, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return domain.Errorf(domain.NotFound, "%s not found", what)
	}
	return nil
}
