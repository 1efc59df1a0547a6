package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// Webhook subscriptions change rarely and are not held by the read cache, so
// their writes leave the cache generation alone (sqldb.KeepCache).

const webhookColumns = `id, account_id, name, description, url, type, enabled, secret, created_at, updated_at`

func scanWebhook(sc interface{ Scan(...any) error }) (domain.Webhook, error) {
	var w domain.Webhook
	var created, updated int64
	err := sc.Scan(&w.ID, &w.AccountID, &w.Name, &w.Description, &w.URL, &w.Type, &w.Enabled, &w.Secret, &created, &updated)
	if err != nil {
		return w, err
	}
	w.CreatedAt, w.UpdatedAt = fromMicros(created), fromMicros(updated)
	return w, nil
}

// CreateWebhook stores a new subscription and sets w.ID and its times.
func (s *Store) CreateWebhook(ctx context.Context, w *domain.Webhook) error {
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		if err := accountExists(ctx, tx, w.AccountID); err != nil {
			return err
		}
		id, err := tx.Insert(ctx, `INSERT INTO webhooks (account_id, name, description, url, type, enabled, secret, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, w.AccountID, w.Name, w.Description, w.URL, w.Type, w.Enabled, w.Secret, tx.Now(), tx.Now())
		if err != nil {
			return fmt.Errorf("store: create webhook: %w", err)
		}
		w.ID = id
		w.CreatedAt, w.UpdatedAt = fromMicros(tx.Now()), fromMicros(tx.Now())
		return nil
	})
}

// Webhook returns the account's subscription id (not_found for another account's).
func (s *Store) Webhook(ctx context.Context, accountID, id int64) (domain.Webhook, error) {
	w, err := scanWebhook(s.db.QueryRow(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = ? AND account_id = ?`, id, accountID))
	if err != nil {
		return w, notFound(err, "webhook")
	}
	return w, nil
}

// Webhooks lists the account's subscriptions by id, only of typ when it is
// not empty and only enabled ones when enabledOnly.
func (s *Store) Webhooks(ctx context.Context, accountID int64, typ string, enabledOnly bool) ([]domain.Webhook, error) {
	q := `SELECT ` + webhookColumns + ` FROM webhooks WHERE account_id = ?`
	args := []any{accountID}
	if typ != "" {
		q += ` AND type = ?`
		args = append(args, typ)
	}
	if enabledOnly {
		q += ` AND enabled = TRUE`
	}
	rows, err := s.db.Query(ctx, q+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: webhooks: %w", err)
	}
	defer rows.Close()
	out := []domain.Webhook{}
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, fmt.Errorf("store: webhooks: %w", err)
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// UpdateWebhook applies patch to the account's subscription id and returns it
// as stored. A patch that changes nothing still answers with the webhook
// (and leaves updatedAt alone).
func (s *Store) UpdateWebhook(ctx context.Context, accountID, id int64, patch domain.WebhookPatch) (domain.Webhook, error) {
	var out domain.Webhook
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		w, err := scanWebhook(tx.QueryRow(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = ? AND account_id = ?`+s.db.ForUpdate(), id, accountID))
		if err != nil {
			return notFound(err, "webhook")
		}
		changed := false
		set := func(dst *string, v *string) {
			if v != nil && *v != *dst {
				*dst, changed = *v, true
			}
		}
		set(&w.Name, patch.Name)
		set(&w.Description, patch.Description)
		set(&w.URL, patch.URL)
		set(&w.Type, patch.Type)
		if patch.Enabled != nil && *patch.Enabled != w.Enabled {
			w.Enabled, changed = *patch.Enabled, true
		}
		if changed {
			// A changed subscription starts afresh: an old endpoint's backoff
			// does not hold back a new one.
			if _, err := tx.Exec(ctx, `UPDATE webhooks SET name = ?, description = ?, url = ?, type = ?, enabled = ?, backoff_until = 0, updated_at = ? WHERE id = ?`,
				w.Name, w.Description, w.URL, w.Type, w.Enabled, tx.Now(), id); err != nil {
				return fmt.Errorf("store: update webhook: %w", err)
			}
			w.UpdatedAt = fromMicros(tx.Now())
		}
		out = w
		return nil
	})
	return out, err
}

// DeleteWebhook removes the account's subscription id and its deliveries.
func (s *Store) DeleteWebhook(ctx context.Context, accountID, id int64) error {
	return s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `DELETE FROM webhooks WHERE id = ? AND account_id = ?`, id, accountID)
		if err != nil {
			return fmt.Errorf("store: delete webhook: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return domain.Errorf(domain.NotFound, "webhook not found")
		}
		return nil
	})
}

// isNoRows reports whether err is sql.ErrNoRows.
func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

var _ = strings.Join
