package httpapi

import (
	"context"
	"net/http"

	"switchboard/internal/domain"
	"switchboard/internal/sms"
)

// IdempotencyHeader is the optional request header that makes a retried
// send safe (beyond the spec; see docs/decisions.md).
const IdempotencyHeader = "Idempotency-Key"

type idempotencyCtx struct{}

// idempotencyOf is the Idempotency-Key hold the idempotent middleware has
// for r, if any.
func idempotencyOf(r *http.Request) *sms.Idempotency {
	c, _ := r.Context().Value(idempotencyCtx{}).(*sms.Idempotency)
	return c
}

// idempotentAt wraps a handler that spends money (a send, a schedule): with an Idempotency-Key, the same key
// and body get the first request's answer again (sms.Service.BeginIdempotent
// keeps it as data; it is encoded here as any answer is) without running the
// handler; a different body is 422; a request still running is 409. A
// failure that promises nothing happened (5xx) releases the key so that a
// retry runs again; any other failure is kept as the key's answer. With
// pathScoped the request's path is part of what must match (the same body
// to another line is another request); a send's key covers its body alone,
// as records written before schedules existed do.
func (s *Server) idempotentAt(limit int64, pathScoped bool, h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		keys := r.Header.Values(IdempotencyHeader)
		if len(keys) == 0 {
			return h(w, r)
		}
		// Present but empty, or twice, is a client bug: running the request
		// unprotected would bill the retry the client thinks is safe.
		key := keys[0]
		if len(keys) > 1 || !validIdempotencyKey(key) {
			return domain.Errorf(domain.Invalid, "%s must be sent once, with 1 to 255 printable ASCII characters", IdempotencyHeader)
		}
		raw, err := readBody(w, r, limit)
		if err != nil {
			return err
		}
		request := raw
		if pathScoped {
			request = append([]byte(r.URL.Path+"\n"), raw...)
		}
		replay, idem, err := s.sms.BeginIdempotent(r.Context(), principal(r), key, request)
		if err != nil {
			return err
		}
		if replay != nil {
			w.Header().Set("Idempotent-Replayed", "true")
			switch {
			case replay.Err != nil:
				return replay.Err
			case replay.Scheduled != nil:
				writeData(w, http.StatusCreated, s.scheduledOut(*replay.Scheduled))
				return nil
			}
			writeSendResult(w, replay.Result, replay.Outcome)
			return nil
		}
		r = withBody(r, raw)
		r = r.WithContext(context.WithValue(r.Context(), idempotencyCtx{}, idem))
		if err := h(w, r); err != nil {
			// Recorded before the answer is written, and even if the client
			// has gone: otherwise its retry would find the key still running.
			s.sms.FinishIdempotent(r.Context(), idem, err)
			return err
		}
		return nil
	}
}

func validIdempotencyKey(k string) bool {
	if len(k) == 0 || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}
