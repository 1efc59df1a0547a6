package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/store/sqldb"
)

// Previous signing secrets (migration 0027): every secret a rotation replaces
// signs deliveries, beside the current one, until its expiry. They are kept
// as issued, like webhooks.secret (docs/decisions.md, "Secrets are stored as
// issued"). webhooks.previous_until is the latest expiry of a subscription's
// previous secrets, so loading a delivery looks for them only while one may
// still sign.

// MaxPreviousSecrets bounds the previous secrets that sign at once: every
// delivery carries one signature per secret, so a rotation beyond them is
// refused (409) until the oldest expires, rather than dropping a secret
// before its time.
const MaxPreviousSecrets = 10

// RotateWebhookSecret makes secret the account's subscription id's signing
// key and returns the subscription with its still-valid previous secrets
// (Previous, newest first): the one it replaces signs beside it for overlap,
// and so do those replaced before it, each until its own expiry. Expired
// previous secrets of the subscription are deleted.
func (s *Store) RotateWebhookSecret(ctx context.Context, accountID, id int64, secret string, overlap time.Duration) (domain.Webhook, error) {
	var out domain.Webhook
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		w, err := scanWebhook(tx.QueryRow(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = ? AND account_id = ?`+s.db.ForUpdate(), id, accountID))
		if err != nil {
			return notFound(err, "webhook")
		}
		if _, err := tx.Exec(ctx, `DELETE FROM webhook_previous_secrets WHERE webhook_id = ? AND expires_at <= ?`, id, tx.Now()); err != nil {
			return fmt.Errorf("store: rotate webhook secret: %w", err)
		}
		var prev []domain.PreviousSecret
		err = tx.Query(ctx, `SELECT secret, expires_at FROM webhook_previous_secrets WHERE webhook_id = ? ORDER BY expires_at DESC, id DESC`, []any{id}, func(r row) error {
			var p domain.PreviousSecret
			var until int64
			if err := r.Scan(&p.Secret, &until); err != nil {
				return err
			}
			p.Until = fromMicros(until)
			prev = append(prev, p)
			return nil
		})
		if err != nil {
			return fmt.Errorf("store: rotate webhook secret: %w", err)
		}
		if len(prev) >= MaxPreviousSecrets {
			return domain.Errorf(domain.Conflict, "webhook %d already has %d previous secrets that still sign deliveries, the most there may be; rotate again after %s, when the oldest expires",
				id, len(prev), prev[len(prev)-1].Until.Format(time.RFC3339))
		}
		until := tx.Now() + overlap.Microseconds()
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_previous_secrets (webhook_id, secret, expires_at) VALUES (?, ?, ?)`, id, w.Secret, until); err != nil {
			return fmt.Errorf("store: rotate webhook secret: %w", err)
		}
		// previous_until only grows: a shorter overlap than before must not
		// hide previous secrets that still sign.
		latest := until
		if len(prev) > 0 {
			latest = max(latest, micros(prev[0].Until))
		}
		if _, err := tx.Exec(ctx, `UPDATE webhooks SET secret = ?, previous_until = ?, updated_at = ? WHERE id = ?`,
			secret, latest, tx.Now(), id); err != nil {
			return fmt.Errorf("store: rotate webhook secret: %w", err)
		}
		w.Previous = append([]domain.PreviousSecret{{Secret: w.Secret, Until: fromMicros(until)}}, prev...)
		w.Secret, w.UpdatedAt = secret, fromMicros(tx.Now())
		out = w
		return nil
	})
	return out, err
}

// WebhookSecrets returns the account's subscription id with its previous
// secrets that still sign (Previous, newest first).
func (s *Store) WebhookSecrets(ctx context.Context, accountID, id int64) (domain.Webhook, error) {
	w, err := s.Webhook(ctx, accountID, id)
	if err != nil {
		return w, err
	}
	prev, err := s.previousSecrets(ctx, []int64{id})
	w.Previous = prev[id]
	return w, err
}

// previousSecrets reads the previous secrets of subscriptions ids that still
// sign now, newest first.
func (s *Store) previousSecrets(ctx context.Context, ids []int64) (map[int64][]domain.PreviousSecret, error) {
	out := map[int64][]domain.PreviousSecret{}
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, 0, len(ids)+1)
	for _, id := range ids {
		args = append(args, id)
	}
	args = append(args, micros(s.db.Now()))
	rows, err := s.db.Readers().QueryContext(ctx, s.db.Rebind(`SELECT webhook_id, secret, expires_at FROM webhook_previous_secrets
		WHERE webhook_id IN (?`+strings.Repeat(", ?", len(ids)-1)+`) AND expires_at > ? ORDER BY webhook_id, expires_at DESC, id DESC`), args...)
	if err != nil {
		return nil, fmt.Errorf("store: previous webhook secrets: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, until int64
		var p domain.PreviousSecret
		if err := rows.Scan(&id, &p.Secret, &until); err != nil {
			return nil, fmt.Errorf("store: previous webhook secrets: %w", err)
		}
		p.Until = fromMicros(until)
		out[id] = append(out[id], p)
	}
	return out, rows.Err()
}

// withPreviousSecrets sets Webhook.Previous of the jobs whose subscription
// may have previous secrets that still sign (webhooks.previous_until, read
// into prevUntil by the job's index, is in the future): for most deliveries
// none, and no query.
func (s *Store) withPreviousSecrets(ctx context.Context, jobs []DeliveryJob, prevUntil []int64) error {
	now := micros(s.db.Now())
	var ids []int64
	for i, j := range jobs {
		if prevUntil[i] > now && !slices.Contains(ids, j.WebhookID) {
			ids = append(ids, j.WebhookID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	prev, err := s.previousSecrets(ctx, ids)
	if err != nil {
		return err
	}
	for i := range jobs {
		jobs[i].Webhook.Previous = prev[jobs[i].WebhookID]
	}
	return nil
}

// PruneWebhookSecrets deletes previous secrets that expired, at most batch,
// and returns how many went. Expired ones sign nothing; this only keeps old
// keys from lingering in the database (and its backups).
func (s *Store) PruneWebhookSecrets(ctx context.Context, batch int) (int, error) {
	var n int64
	err := s.db.Write(ctx, sqldb.KeepCache, func(tx *Tx) error {
		res, err := tx.Exec(ctx, `DELETE FROM webhook_previous_secrets WHERE id IN (
			SELECT id FROM webhook_previous_secrets WHERE expires_at <= ? ORDER BY expires_at LIMIT ?)`, tx.Now(), batch)
		if err != nil {
			return fmt.Errorf("store: prune webhook secrets: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return int(n), err
}
