package httpapi

import (
	"bytes"
	"encoding/json"
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

// deliveryID reads the {deliveryId} path segment; one that is not an id
// names no delivery.
func deliveryID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("deliveryId"), 10, 64)
	if err != nil || id <= 0 {
		return 0, domain.Errorf(domain.NotFound, "delivery not found")
	}
	return id, nil
}

// pageParams reads limit (1 to max, def when absent) and before (an id of
// what, the previous page's last) of a newest-first page.
func pageParams(r *http.Request, def, max int, what string) (limit int, before int64, err error) {
	q := r.URL.Query()
	limit = def
	if v := q.Get("limit"); v != "" || q.Has("limit") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > max {
			return 0, 0, domain.Errorf(domain.Invalid, "limit must be an integer from 1 to %d", max)
		}
		limit = n
	}
	if v := q.Get("before"); v != "" || q.Has("before") {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return 0, 0, domain.Errorf(domain.Invalid, "before must be %s id", what)
		}
		before = n
	}
	return limit, before, nil
}

// writePage writes {"data": data, "next": next} (next left out when nil),
// without escaping HTML: an endpoint's answer is often HTML, and escaped it
// takes six bytes a character.
func writePage(w http.ResponseWriter, data any, next *int64) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		Data any    `json:"data"`
		Next *int64 `json:"next,omitempty"`
	}{data, next}); err != nil {
		return err
	}
	writeEncoded(w, http.StatusOK, b.Bytes())
	return nil
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
	id, err := webhookID(r)
	if err != nil {
		return err
	}
	did, err := deliveryID(r)
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
	return writePage(w, toAttemptLogJSON(list), next)
}
