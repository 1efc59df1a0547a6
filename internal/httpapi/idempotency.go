package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"net/http"

	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// IdempotencyHeader is the optional request header that makes a retried
// send safe (beyond the spec; see docs/decisions.md).
const IdempotencyHeader = "Idempotency-Key"

type idempotencyClaimCtx struct{}

// idempotencyClaim is the claim the idempotent middleware holds for r, if any.
func idempotencyClaim(r *http.Request) *store.IdempotencyClaim {
	c, _ := r.Context().Value(idempotencyClaimCtx{}).(*store.IdempotencyClaim)
	return c
}

// idempotent wraps a POST handler: with an Idempotency-Key, the same key and
// body replay the stored first response without running the handler again;
// a different body is 422; a request still running is 409. Responses other
// than 5xx are stored; a 5xx releases the key so that a retry runs again.
func (s *Server) idempotent(limit int64, h handlerFunc) handlerFunc {
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
		p := principal(r)
		// The person is part of the request: a user whose role does not
		// cover the line must not be handed another user's stored answer.
		// (API keys, with the whole account's reach, share one another's.)
		h256 := sha256.New()
		binary.Write(h256, binary.BigEndian, p.UserID)
		h256.Write(raw)
		hash := h256.Sum(nil)
		replay, claim, err := s.store.BeginIdempotent(r.Context(), p.AccountID, key, hash)
		if err != nil {
			return err
		}
		if replay != nil {
			w.Header().Set("Idempotent-Replayed", "true")
			writeEncoded(w, replay.Status, replay.Body)
			return nil
		}
		r = withBody(r, raw)
		r = r.WithContext(context.WithValue(r.Context(), idempotencyClaimCtx{}, claim))
		tee := &teeWriter{statusWriter: statusWriter{ResponseWriter: w}}
		if err := h(tee, r); err != nil {
			writeError(tee, r, s.log, err)
		}
		// Recorded even if the client has gone: otherwise its retry would
		// find the key still running.
		if err := s.store.FinishIdempotent(context.WithoutCancel(r.Context()), claim, tee.status, tee.body.Bytes()); err != nil {
			s.log.ErrorContext(r.Context(), "store idempotent response", "err", err, "request_id", requestID(r.Context()))
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

// teeWriter keeps a copy of the response for the idempotency record.
type teeWriter struct {
	statusWriter
	body bytes.Buffer
}

func (t *teeWriter) Write(b []byte) (int, error) {
	t.body.Write(b)
	return t.statusWriter.Write(b)
}
