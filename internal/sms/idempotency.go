package sms

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// Idempotency is a send's hold on its Idempotency-Key, from BeginIdempotent.
type Idempotency struct {
	claim *store.IdempotencyClaim
}

// Replay is the answer an Idempotency-Key already holds: a result with its
// outcome, or the error the first request got.
type Replay struct {
	Result  *domain.SendResult
	Outcome domain.SendOutcome
	// Scheduled is a schedule's answer (POST /sms/lines/{line}/scheduled):
	// the message as scheduled, 201.
	Scheduled *domain.ScheduledMessage
	Err       *domain.Error
}

// record is what an Idempotency-Key keeps, as JSON, for the store to hold
// without knowing its content.
type record struct {
	Outcome domain.SendOutcome `json:"outcome,omitempty"`
	Result  *domain.SendResult `json:"result,omitempty"`
	Error   *storedError       `json:"error,omitempty"`
	// Scheduled is the answer of a schedule, stored in its transaction.
	Scheduled *domain.ScheduledMessage `json:"scheduled,omitempty"`
	// Data is the result as records written before results were stored as
	// data kept it: the success response's "data" member. Only records
	// linked to a message can still have it (migration 0006 dropped the rest).
	Data *domain.SendResult `json:"data,omitempty"`
}

// storedError is a *domain.Error as a record keeps it.
type storedError struct {
	Code    domain.Code `json:"code"`
	Kind    domain.Kind `json:"kind,omitempty"`
	Message string      `json:"message"`
	Scope   string      `json:"scope,omitempty"`
}

// BeginIdempotent claims key for the request body from p. The same person's
// same body under a key already answered gets that answer back (a Replay);
// a different body or person is 422; a request still running under the key
// is 409. Otherwise the caller holds the key and passes it to Send, and
// then, if the request fails, to FinishIdempotent.
func (s *Service) BeginIdempotent(ctx context.Context, p auth.Principal, key string, body []byte) (*Replay, *Idempotency, error) {
	// The person is part of the request: a user whose role does not cover
	// the line must not be handed another user's stored answer. (API keys,
	// with the whole account's reach, share one another's.)
	h := sha256.New()
	binary.Write(h, binary.BigEndian, p.UserID)
	h.Write(body)
	rec, claim, err := s.store.BeginIdempotent(ctx, p.AccountID, key, h.Sum(nil))
	if err != nil {
		return nil, nil, err
	}
	if rec == nil {
		return nil, &Idempotency{claim: claim}, nil
	}
	replay, err := replayOf(rec)
	return replay, nil, err
}

// errInterrupted answers a retry whose first request stopped between its
// intent and the carrier's answer and whose message was then abandoned.
func errInterrupted(id int64) *domain.Error {
	return domain.Errorf(domain.Conflict, "the first request with this Idempotency-Key was interrupted before the carrier's answer was recorded, "+
		"and there is no evidence the carrier took its message (id %d): it is not charged, and is charged only if a delivery report for it arrives. "+
		"This key never sends again; to send the text anew, use a new key", id)
}

// replayOf turns a stored record into the answer a retry gets. A record
// linked to a message answers from the message's state now: sent is the
// stored result; abandoned (interrupted, no evidence the carrier took it) is
// a conflict that says so, never a second send. (A pending message's key is
// reported in progress by the store; a failed one's key was released.)
func replayOf(rec *store.IdempotentRecord) (*Replay, error) {
	var r record
	if err := json.Unmarshal(rec.Data, &r); err != nil {
		return nil, fmt.Errorf("sms: idempotency record: %w", err)
	}
	if r.Data != nil {
		r.Outcome, r.Result = domain.SendCreated, r.Data
	}
	if rec.MessageID != 0 && rec.MessageStatus == domain.StatusAbandoned {
		return &Replay{Err: errInterrupted(rec.MessageID)}, nil
	}
	switch {
	case r.Scheduled != nil:
		return &Replay{Scheduled: r.Scheduled}, nil
	case r.Error != nil:
		return &Replay{Err: &domain.Error{Code: r.Error.Code, Kind: r.Error.Kind, Message: r.Error.Message, Scope: r.Error.Scope}}, nil
	case r.Result == nil || r.Outcome == "":
		return nil, errors.New("sms: idempotency record holds neither a result nor an error")
	}
	if rec.MessageID != 0 && len(r.Result.Messages) > 0 {
		r.Result.Messages[0].ID = rec.MessageID
	}
	return &Replay{Result: r.Result, Outcome: r.Outcome}, nil
}

// FinishIdempotent records err, what the request holding idem failed with,
// as the key's answer. An error that promises nothing happened (5xx)
// releases the key instead, so that a retry runs again. A key linked to a
// message is left alone: it answers from the message (see replayOf).
func (s *Service) FinishIdempotent(ctx context.Context, idem *Idempotency, err error) {
	var e *domain.Error
	if domain.NothingHappened(err) || !errors.As(err, &e) {
		if err := s.store.ReleaseIdempotent(context.WithoutCancel(ctx), idem.claim); err != nil {
			s.log.ErrorContext(ctx, "release idempotency key", "err", err)
		}
		return
	}
	s.finishIdempotent(ctx, idem, record{Error: &storedError{Code: e.Code, Kind: e.Kind, Message: e.Message, Scope: e.Scope}})
}

// finishIdempotent stores rec as the key's answer, even if the client has
// gone: otherwise its retry would find the key still running.
func (s *Service) finishIdempotent(ctx context.Context, idem *Idempotency, rec record) {
	ctx = context.WithoutCancel(ctx)
	data, err := json.Marshal(rec)
	if err == nil {
		err = s.store.FinishIdempotent(ctx, idem.claim, data)
	}
	if err != nil {
		s.log.ErrorContext(ctx, "store idempotent answer", "err", err)
	}
}
