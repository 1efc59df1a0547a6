package store

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"switchboard/internal/domain"
)

// The attempt log: every attempt of a delivery is a webhook_attempts row
// (FinishDeliveries), shown newest first.

// DeliveryLogAttempts is how many of a delivery's attempts, the newest,
// come with it in a list of deliveries: 12 is every attempt of the default
// retry schedule (the first and 11 retries), so a delivery shows its whole
// history unless a shorter-lived custom schedule made more; the rest are a
// page of WebhookAttempts away. It bounds a page of deliveries.
const DeliveryLogAttempts = 12

// MaxAttemptResponse is how much of an endpoint's answer an attempt keeps,
// in bytes.
const MaxAttemptResponse = 1024

// attemptResponse is the excerpt of an endpoint's answer an attempt keeps:
// at most MaxAttemptResponse bytes of valid UTF-8 without NUL. PostgreSQL's
// text refuses invalid UTF-8 and NUL, and one binary answer would fail the
// whole batch of outcomes it was recorded with; a multi-byte character that
// the read cut at the end is left out rather than shown as garbage.
func attemptResponse(b string) string {
	if len(b) > MaxAttemptResponse {
		b = b[:MaxAttemptResponse]
	}
	// A character cut short at the end (the read stopped in it) goes.
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRuneInString(b[i:]) {
				b = b[:i]
			}
			break
		}
	}
	b = strings.ToValidUTF8(b, "\uFFFD")
	b = strings.ReplaceAll(b, "\x00", "\uFFFD")
	// Replacements can make it longer: cut again, at a character boundary.
	if len(b) > MaxAttemptResponse {
		cut := MaxAttemptResponse
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		b = b[:cut]
	}
	return b
}

// withAttemptLogs fills the Log of each delivery in list, a page of the
// account's subscription webhookID newest first, with its newest
// DeliveryLogAttempts attempts, in one query. The page is named by its id
// range, within the account's subscription, so that the statement's text
// is the same for every page (SQLite prepares each text once).
func (s *Store) withAttemptLogs(ctx context.Context, accountID, webhookID int64, list []domain.WebhookDelivery) error {
	if len(list) == 0 {
		return nil
	}
	at := make(map[int64]int, len(list))
	for i, d := range list {
		at[d.ID] = i
		list[i].Log = []domain.WebhookAttempt{}
	}
	rows, err := s.db.Query(ctx, `SELECT delivery_id, id, attempted_at, status_code, latency_us, error, response FROM (
		SELECT delivery_id, id, attempted_at, status_code, latency_us, error, response,
			ROW_NUMBER() OVER (PARTITION BY delivery_id ORDER BY id DESC) AS n
		FROM webhook_attempts WHERE delivery_id IN (
			SELECT id FROM webhook_deliveries WHERE webhook_id = ? AND account_id = ? AND id BETWEEN ? AND ?)) a
		WHERE n <= ? ORDER BY delivery_id, id DESC`, webhookID, accountID, list[len(list)-1].ID, list[0].ID, DeliveryLogAttempts)
	if err != nil {
		return fmt.Errorf("store: attempt log: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var deliveryID int64
		a, err := scanAttempt(rows, &deliveryID)
		if err != nil {
			return fmt.Errorf("store: attempt log: %w", err)
		}
		// A delivery in the range but not in the page (PostgreSQL: one
		// that committed since) is left out.
		if i, ok := at[deliveryID]; ok {
			list[i].Log = append(list[i].Log, a)
		}
	}
	return rows.Err()
}

func scanAttempt(sc interface{ Scan(...any) error }, deliveryID *int64) (domain.WebhookAttempt, error) {
	var a domain.WebhookAttempt
	var at, latency int64
	if err := sc.Scan(deliveryID, &a.ID, &at, &a.StatusCode, &latency, &a.Error, &a.Response); err != nil {
		return a, err
	}
	a.At, a.Latency = fromMicros(at), time.Duration(latency)*time.Microsecond
	return a, nil
}

// WebhookAttempts pages the attempt log of the account's delivery of
// subscription webhookID: newest first, at most limit, with ids below before
// (0: from the newest). A delivery that is not the account's, or not that
// subscription's, is not found.
func (s *Store) WebhookAttempts(ctx context.Context, accountID, webhookID, deliveryID, before int64, limit int) ([]domain.WebhookAttempt, error) {
	var one int
	if err := s.db.QueryRow(ctx, `SELECT 1 FROM webhook_deliveries WHERE id = ? AND webhook_id = ? AND account_id = ?`, deliveryID, webhookID, accountID).Scan(&one); err != nil {
		return nil, notFound(err, "delivery")
	}
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := s.db.Query(ctx, `SELECT delivery_id, id, attempted_at, status_code, latency_us, error, response FROM webhook_attempts
		WHERE delivery_id = ? AND id < ? ORDER BY id DESC LIMIT ?`, deliveryID, before, limit)
	if err != nil {
		return nil, fmt.Errorf("store: webhook attempts: %w", err)
	}
	defer rows.Close()
	out := []domain.WebhookAttempt{}
	for rows.Next() {
		var d int64
		a, err := scanAttempt(rows, &d)
		if err != nil {
			return nil, fmt.Errorf("store: webhook attempts: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}
