package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"switchboard/internal/domain"
)

// attemptLogJSON is one attempt of a delivery in its attempt log.
type attemptLogJSON struct {
	ID         int64  `json:"id"`
	At         string `json:"at"`
	StatusCode int    `json:"statusCode"`
	LatencyMs  int64  `json:"latencyMs"`
	Error      string `json:"error"`
	Response   string `json:"response"`
}

func toAttemptLogJSON(log []domain.WebhookAttempt) []attemptLogJSON {
	out := make([]attemptLogJSON, len(log))
	for i, a := range log {
		out[i] = attemptLogJSON{ID: a.ID, At: a.At.UTC().Format(time.RFC3339), StatusCode: a.StatusCode,
			LatencyMs: a.Latency.Milliseconds(), Error: a.Error, Response: a.Response}
	}
	return out
}

// pageParams reads limit (1 to max, def when absent) and before (an id of
// what, the previous page's last) of a newest-first page.
func pageParams(r *http.Request, def, max int, what string) (limit int, before int64, err error) {
	q := queryOf(r)
	limit, before = q.int("limit", def, 1, max), q.id("before", what)
	return limit, before, q.err()
}

// Paging of GET /webhooks/{id}/deliveries/{deliveryId}/attempts.
const (
	defaultAttemptsLimit = 50
	maxAttemptsLimit     = 200
)

// listDeliveryAttempts pages a delivery's attempt log newest first, with the
// same cursor as the deliveries list: `before` is the smallest id of the
// previous page, and `next` names the next page's cursor while there may be
// one.
func (s *Server) listDeliveryAttempts(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "webhook")
	if err != nil {
		return err
	}
	did, err := pathID(r, "deliveryId", "delivery")
	if err != nil {
		return err
	}
	limit, before, err := pageParams(r, defaultAttemptsLimit, maxAttemptsLimit, "an attempt")
	if err != nil {
		return err
	}
	list, err := s.webhooks.Attempts(r.Context(), principal(r), id, did, before, limit)
	if err != nil {
		return err
	}
	var next *int64
	if len(list) == limit {
		n := list[len(list)-1].ID
		next = &n
	}
	writePage(w, toAttemptLogJSON(list), next)
	return nil
}

// recoverBody is POST /webhooks/{id}/recover.
type recoverBody struct {
	Since *string `json:"since"`
	Until *string `json:"until"`
}

// recoveryJSON is a recover job: its window, whether it is still queuing
// (status), how many deliveries it queued, and their states now.
type recoveryJSON struct {
	ID         int64                  `json:"id"`
	WebhookID  int64                  `json:"webhookId"`
	Status     string                 `json:"status"`
	Since      string                 `json:"since"`
	Until      string                 `json:"until"`
	Queued     int                    `json:"queued"`
	Deliveries recoveryDeliveriesJSON `json:"deliveries"`
	CreatedAt  string                 `json:"createdAt"`
	FinishedAt string                 `json:"finishedAt,omitempty"`
}

type recoveryDeliveriesJSON struct {
	Pending   int `json:"pending"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
}

func toRecoveryJSON(rc domain.WebhookRecovery) recoveryJSON {
	out := recoveryJSON{ID: rc.ID, WebhookID: rc.WebhookID, Status: rc.Status,
		// The window to the microsecond it is kept in: a since given with
		// a fraction is answered with it.
		Since: rc.Since.UTC().Format(time.RFC3339Nano), Until: rc.Until.UTC().Format(time.RFC3339Nano),
		Queued: rc.Queued, CreatedAt: rc.CreatedAt.UTC().Format(time.RFC3339),
		Deliveries: recoveryDeliveriesJSON{Pending: rc.Deliveries[domain.DeliveryPending], Succeeded: rc.Deliveries[domain.DeliverySucceeded],
			Failed: rc.Deliveries[domain.DeliveryFailed], Skipped: rc.Deliveries[domain.DeliverySkipped]}}
	if rc.FinishedAt != nil {
		out.FinishedAt = rc.FinishedAt.UTC().Format(time.RFC3339)
	}
	return out
}

// recoverTime reads an RFC 3339 time field of the recover body.
func recoverTime(field, v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, domain.Errorf(domain.Invalid, "%s must be an RFC 3339 time, e.g. 2026-01-02T15:04:05Z", field)
	}
	return t, nil
}

// recoverWebhook starts a recover job (Svix's "recover"): 202 with the job,
// and its path in Location.
func (s *Server) recoverWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "webhook")
	if err != nil {
		return err
	}
	var b recoverBody
	if err := decodeJSON(w, r, &b, defaultBodyLimit, false); err != nil {
		return err
	}
	if b.Since == nil {
		return domain.Errorf(domain.Invalid, "since is required: the start of the window to recover, an RFC 3339 time")
	}
	since, err := recoverTime("since", *b.Since)
	if err != nil {
		return err
	}
	var until time.Time
	if b.Until != nil {
		if until, err = recoverTime("until", *b.Until); err != nil {
			return err
		}
	}
	rc, err := s.webhooks.Recover(r.Context(), principal(r), id, since, until)
	if err != nil {
		return err
	}
	w.Header().Set("Location", Prefix+"/webhooks/"+strconv.FormatInt(id, 10)+"/recover/"+strconv.FormatInt(rc.ID, 10))
	writeData(w, http.StatusAccepted, toRecoveryJSON(rc))
	return nil
}

// getWebhookRecovery answers a recover job's progress.
func (s *Server) getWebhookRecovery(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "webhook")
	if err != nil {
		return err
	}
	rid, err := pathID(r, "recoverId", "recover job")
	if err != nil {
		return err
	}
	rc, err := s.webhooks.Recovery(r.Context(), principal(r), id, rid)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toRecoveryJSON(rc))
	return nil
}
