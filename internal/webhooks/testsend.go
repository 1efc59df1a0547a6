package webhooks

import (
	"context"
	"encoding/json"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// TestEvent is data.event of the event POST /webhooks/{id}/test sends.
const TestEvent = "test"

// testData is the data of a test event. The event has the subscription's own
// type, so a receiver that routes by type exercises the route it will use.
type testData struct {
	Event     string `json:"event"`
	WebhookID int64  `json:"webhookId"`
	Message   string `json:"message"`
}

// SendTest sends a signed test event to the account's subscription id now,
// enabled or not, and returns its delivery as recorded: succeeded or failed,
// with the one attempt made. A test is never retried and changes nothing
// about the subscription (no backoff, no disabling on 410): it reports what
// the endpoint does, nothing more.
//
// The attempt takes a slot of the subscription's, shared with the
// dispatcher's deliveries (hookSlots), waiting for one up to testSlotWait;
// past that it is 503 unavailable, nothing sent or recorded.
func (d *Dispatcher) SendTest(ctx context.Context, accountID, id int64) (domain.WebhookDelivery, error) {
	payload, err := json.Marshal(testData{Event: TestEvent, WebhookID: id, Message: "A test event sent by POST /webhooks/{id}/test."})
	if err != nil {
		return domain.WebhookDelivery{}, err
	}
	st := d.st
	// Another account's subscription is not found before any waiting.
	if _, err := st.Webhook(ctx, accountID, id); err != nil {
		return domain.WebhookDelivery{}, err
	}
	release, err := d.takeTestSlot(ctx, id)
	if err != nil {
		return domain.WebhookDelivery{}, err
	}
	defer release()
	deliveryID, err := st.AddTestDelivery(ctx, accountID, id, payload, d.cfg.Owner, d.cfg.Lease)
	if err != nil {
		return domain.WebhookDelivery{}, err
	}
	jobs, err := st.DeliveryJobs(ctx, []int64{deliveryID})
	if err != nil {
		return domain.WebhookDelivery{}, err
	}
	if len(jobs) == 0 {
		return domain.WebhookDelivery{}, domain.Errorf(domain.NotFound, "webhook not found") // deleted meanwhile
	}
	// The attempt and its record outlive a client that hangs up: the
	// delivery is in the history either way. The client's timeout bounds it.
	ctx = context.WithoutCancel(ctx)
	ex := d.send(ctx, jobs[0])
	out := store.DeliveryOutcome{DeliveryID: deliveryID, WebhookID: id, Attempt: &ex.attempt, Response: ex.response, State: domain.DeliveryFailed}
	if ex.ok() {
		out.State = domain.DeliverySucceeded
	}
	if _, err := st.FinishDeliveries(ctx, d.cfg.Owner, []store.DeliveryOutcome{out}); err != nil {
		return domain.WebhookDelivery{}, err
	}
	d.outcomes.WithLabelValues(outcomeLabel(out)).Inc()
	return st.WebhookDelivery(ctx, accountID, id, deliveryID)
}

// SendTest sends a signed test event to subscription id now (see
// Dispatcher.SendTest).
func (s *Service) SendTest(ctx context.Context, p auth.Principal, id int64) (domain.WebhookDelivery, error) {
	return s.sender.SendTest(ctx, p.AccountID, id)
}
