package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"switchboard/internal/domain"
	"switchboard/internal/webhooks"
)

// manageWebhooks is the Webhooks role permission behind every /webhooks route.
var manageWebhooks = rolePermission{name: "Webhooks", check: webhooks.CanManage}

// webhookJSON is the public API's Webhook.
type webhookJSON struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	URL         string `json:"url"`
	Type        string `json:"type"`
	Enabled     bool   `json:"enabled"`
	CreatedAt   string `json:"createdAt"`
	UpdatedAt   string `json:"updatedAt"`
}

// createdWebhookJSON is the POST /webhooks answer: the Webhook and, this once,
// its signing secret.
type createdWebhookJSON struct {
	webhookJSON
	Secret string `json:"secret"`
}

func toWebhookJSON(w domain.Webhook) webhookJSON {
	return webhookJSON{
		ID: w.ID, Name: w.Name, Description: w.Description, URL: w.URL, Type: w.Type, Enabled: w.Enabled,
		CreatedAt: w.CreatedAt.UTC().Format(time.RFC3339), UpdatedAt: w.UpdatedAt.UTC().Format(time.RFC3339),
	}
}

type webhookTypeJSON struct {
	Type        string `json:"type"`
	Description string `json:"description"`
}

// secretJSON is GET /webhooks/{id}/secret and the rotation's answer: the
// current secret and when each previous one that still signs stops (the
// previous secrets themselves were shown when they were current).
type secretJSON struct {
	Secret          string               `json:"secret"`
	PreviousSecrets []previousSecretJSON `json:"previousSecrets"`
}

type previousSecretJSON struct {
	ExpiresAt string `json:"expiresAt"`
}

func toSecretJSON(w domain.Webhook) secretJSON {
	out := secretJSON{Secret: w.Secret, PreviousSecrets: make([]previousSecretJSON, len(w.Previous))}
	for i, p := range w.Previous {
		out.PreviousSecrets[i] = previousSecretJSON{ExpiresAt: p.Until.UTC().Format(time.RFC3339)}
	}
	return out
}

// webhookBody is POST /webhooks and the merge update of PUT and PATCH.
type webhookBody struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
	URL         *string `json:"url"`
	Type        *string `json:"type"`
	Enabled     *bool   `json:"enabled"`
}

// decodeWebhookBody decodes strictly and refuses null values: a merge update
// leaves out what it does not change, and null would be ambiguous.
func decodeWebhookBody(w http.ResponseWriter, r *http.Request) (webhookBody, error) {
	var b webhookBody
	raw, err := readBody(w, r, defaultBodyLimit)
	if err != nil {
		return b, err
	}
	if err := decodeJSON(w, withBody(r, raw), &b, defaultBodyLimit, false); err != nil {
		return b, err
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) == nil {
		for k, v := range fields {
			if string(v) == "null" {
				return b, domain.Errorf(domain.Invalid, "field %s must not be null; leave it out to keep it unchanged", k)
			}
		}
	}
	return b, nil
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *http.Request) error {
	// Both parameters are refused given twice by the route's query parser;
	// their values have rules of their own (the type is checked by the
	// service, against the type list).
	q := queryOf(r)
	var lp webhooks.ListParams
	if v, ok := q.raw("type"); ok {
		if v == "" {
			return domain.Errorf(domain.Invalid, "query parameter type must be one of the webhook types; got an empty value")
		}
		lp.Type = v
	}
	if v, ok := q.raw("enabled"); ok {
		switch v {
		case "true":
			lp.EnabledOnly = true
		case "false":
			return domain.Errorf(domain.Unsupported, "enabled=false is not supported; only enabled=true filters")
		default:
			return domain.Errorf(domain.Invalid, "query parameter enabled must be true; got %q", v)
		}
	}
	list, err := s.webhooks.List(r.Context(), principal(r), lp)
	if err != nil {
		return err
	}
	out := make([]webhookJSON, len(list))
	for i, wh := range list {
		out[i] = toWebhookJSON(wh)
	}
	writeData(w, http.StatusOK, out)
	return nil
}

func (s *Server) listWebhookTypes(w http.ResponseWriter, r *http.Request) error {
	out := make([]webhookTypeJSON, len(domain.WebhookTypes))
	for i, t := range domain.WebhookTypes {
		out[i] = webhookTypeJSON{Type: t.Type, Description: t.Description}
	}
	writeData(w, http.StatusOK, out)
	return nil
}

func (s *Server) getWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "webhook")
	if err != nil {
		return err
	}
	wh, err := s.webhooks.Get(r.Context(), principal(r), id)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toWebhookJSON(wh))
	return nil
}

func (s *Server) createWebhook(w http.ResponseWriter, r *http.Request) error {
	b, err := decodeWebhookBody(w, r)
	if err != nil {
		return err
	}
	cp := webhooks.CreateParams{}
	for dst, src := range map[*string]*string{&cp.Name: b.Name, &cp.Description: b.Description, &cp.URL: b.URL, &cp.Type: b.Type} {
		if src != nil {
			*dst = *src
		}
	}
	if b.Enabled != nil {
		cp.Enabled = *b.Enabled
	}
	wh, err := s.webhooks.Create(r.Context(), principal(r), cp)
	if err != nil {
		return err
	}
	w.Header().Set("Location", Prefix+"/webhooks/"+strconv.FormatInt(wh.ID, 10))
	writeData(w, http.StatusCreated, createdWebhookJSON{webhookJSON: toWebhookJSON(wh), Secret: wh.Secret})
	return nil
}

func (s *Server) updateWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "webhook")
	if err != nil {
		return err
	}
	b, err := decodeWebhookBody(w, r)
	if err != nil {
		return err
	}
	wh, err := s.webhooks.Update(r.Context(), principal(r), id, domain.WebhookPatch{
		Name: b.Name, Description: b.Description, URL: b.URL, Type: b.Type, Enabled: b.Enabled,
	})
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toWebhookJSON(wh))
	return nil
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "webhook")
	if err != nil {
		return err
	}
	if err := s.webhooks.Delete(r.Context(), principal(r), id); err != nil {
		return err
	}
	writeNoContent(w)
	return nil
}

// setWebhookEnabled serves enable and disable; both are idempotent.
func (s *Server) setWebhookEnabled(enabled bool) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := pathID(r, "id", "webhook")
		if err != nil {
			return err
		}
		wh, err := s.webhooks.SetEnabled(r.Context(), principal(r), id, enabled)
		if err != nil {
			return err
		}
		writeData(w, http.StatusOK, toWebhookJSON(wh))
		return nil
	}
}

func (s *Server) getWebhookSecret(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "webhook")
	if err != nil {
		return err
	}
	wh, err := s.webhooks.Secret(r.Context(), principal(r), id)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toSecretJSON(wh)) // no-store, as every API answer (Server.api)
	return nil
}

func (s *Server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "webhook")
	if err != nil {
		return err
	}
	wh, err := s.webhooks.RotateSecret(r.Context(), principal(r), id)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toSecretJSON(wh)) // no-store, as every API answer (Server.api)
	return nil
}

// deliveryJSON is one delivery in GET /webhooks/{id}/deliveries.
type deliveryJSON struct {
	ID            int64        `json:"id"`
	WebhookID     int64        `json:"webhookId"`
	EventID       string       `json:"eventId"`
	Type          string       `json:"type"`
	State         string       `json:"state"`
	Attempts      int          `json:"attempts"`
	NextAttemptAt string       `json:"nextAttemptAt,omitempty"`
	CreatedAt     string       `json:"createdAt"`
	LastAttempt   *attemptJSON `json:"lastAttempt,omitempty"`
	// AttemptLog is every attempt, newest first, up to
	// store.DeliveryLogAttempts (GET …/attempts pages them all).
	AttemptLog []attemptLogJSON `json:"attemptLog"`
	// RecoveryID names the recover job that queued the delivery.
	RecoveryID int64 `json:"recoveryId,omitempty"`
}

type attemptJSON struct {
	At         string `json:"at"`
	StatusCode int    `json:"statusCode"`
	LatencyMs  int64  `json:"latencyMs"`
	Error      string `json:"error"`
}

func toDeliveryJSON(d domain.WebhookDelivery) deliveryJSON {
	out := deliveryJSON{ID: d.ID, WebhookID: d.WebhookID, EventID: d.MessageID(), Type: d.EventType, State: d.State, Attempts: d.Attempts,
		CreatedAt: d.CreatedAt.UTC().Format(time.RFC3339)}
	if d.NextAttemptAt != nil {
		out.NextAttemptAt = d.NextAttemptAt.UTC().Format(time.RFC3339)
	}
	if d.Last != nil {
		out.LastAttempt = &attemptJSON{At: d.Last.At.UTC().Format(time.RFC3339), StatusCode: d.Last.StatusCode, LatencyMs: d.Last.Latency.Milliseconds(), Error: d.Last.Error}
	}
	out.AttemptLog, out.RecoveryID = toAttemptLogJSON(d.Log), d.RecoveryID
	return out
}

// Paging of GET /webhooks/{id}/deliveries.
const (
	defaultDeliveriesLimit = 50
	maxDeliveriesLimit     = 200
)

// listWebhookDeliveries pages newest first with a cursor: `before` is the
// smallest id of the previous page, and the answer's `next` names the next
// page's cursor while there may be one.
func (s *Server) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "webhook")
	if err != nil {
		return err
	}
	limit, before, err := pageParams(r, defaultDeliveriesLimit, maxDeliveriesLimit, "a delivery")
	if err != nil {
		return err
	}
	list, err := s.webhooks.Deliveries(r.Context(), principal(r), id, before, limit)
	if err != nil {
		return err
	}
	data := make([]deliveryJSON, len(list))
	for i, d := range list {
		data[i] = toDeliveryJSON(d)
	}
	var next *int64
	if len(list) == limit {
		n := list[len(list)-1].ID
		next = &n
	}
	writePage(w, data, next)
	return nil
}

func (s *Server) redeliverWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "webhook")
	if err != nil {
		return err
	}
	deliveryID, err := pathID(r, "deliveryId", "delivery")
	if err != nil {
		return err
	}
	d, err := s.webhooks.Redeliver(r.Context(), principal(r), id, deliveryID)
	if err != nil {
		return err
	}
	writeData(w, http.StatusAccepted, toDeliveryJSON(d))
	return nil
}

// testWebhook sends a signed test event now and answers with its delivery:
// the attempt's outcome, whether the endpoint took it or not.
func (s *Server) testWebhook(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "webhook")
	if err != nil {
		return err
	}
	d, err := s.webhooks.SendTest(r.Context(), principal(r), id)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toDeliveryJSON(d))
	return nil
}
