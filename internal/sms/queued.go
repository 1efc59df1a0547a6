package sms

import (
	"context"
	"strconv"

	"switchboard/internal/domain"
	"switchboard/internal/sms/smsevent"
)

// Accepted implements carrier.Outcomes: the carrier took message id, which
// waited in a connection's queue. It is charged and event sent written, as
// for a direct send; a database that refuses is retried until it takes it,
// since the carrier has the message either way.
func (s *Service) Accepted(ctx context.Context, id int64, ref string) error {
	line, to, err := s.partiesOf(ctx, id)
	if domain.IsNotFound(err) {
		s.log.Warn("a queued message the carrier took is not in the database", "message_id", id)
		return nil
	}
	if err != nil {
		return err
	}
	sent, err := smsevent.Sent(id, line, to)
	if err != nil {
		return err
	}
	if err := s.store.MarkQueuedSent(ctx, id, ref, sent); err != nil {
		s.log.Error("record carrier acceptance of a queued message failed; retrying until the database answers", "message_id", id, "err", err)
		s.settle.start("sent:"+strconv.FormatInt(id, 10), id, func(ctx context.Context) error {
			return s.store.MarkQueuedSent(ctx, id, ref, sent)
		}, func(err error) {
			s.log.Error("charge of a queued message the carrier accepted is not recorded: the process stopped while the database refused it; a delivery receipt will still charge it",
				"message_id", id, "carrier_ref", ref, "err", err)
		})
		return nil
	}
	s.evidenceArrived(id)
	return nil
}

// Refused implements carrier.Outcomes: the carrier refused message id,
// which waited in a connection's queue. It fails, uncharged, with event
// failed (its client was answered 202 pending, or is waiting still).
func (s *Service) Refused(ctx context.Context, id int64, reason string) error {
	line, to, err := s.partiesOf(ctx, id)
	if domain.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	failed, err := smsevent.Failed(id, line, to, storable(reason))
	if err != nil {
		return err
	}
	status, err := s.store.MarkQueuedFailed(ctx, id, failed)
	if err != nil {
		return err
	}
	if status == domain.StatusFailed {
		s.dropFailedMedia(ctx, id) // the carrier fetched none of them
	}
	s.evidenceArrived(id)
	return nil
}
