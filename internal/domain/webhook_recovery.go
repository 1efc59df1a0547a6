package domain

import "time"

// Recover job states.
const (
	RecoveryRunning = "running" // still finding and queuing deliveries
	RecoveryDone    = "done"    // every delivery it was asked for is queued
)

// WebhookRecovery is a recover job (POST /webhooks/{id}/recover): the
// subscription's deliveries of events in [Since, Until) that did not succeed,
// sent again with their original webhook-id.
type WebhookRecovery struct {
	ID        int64
	AccountID int64
	WebhookID int64
	Status    string
	Since     time.Time
	Until     time.Time
	// Queued counts the deliveries it queued so far; Deliveries how many of
	// them are in each delivery state now.
	Queued     int
	Deliveries map[string]int
	CreatedAt  time.Time
	UpdatedAt  time.Time
	// FinishedAt is when it became done.
	FinishedAt *time.Time
}
