package sms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// Limits of POST /sms/lines/{line}/scheduled beyond a send's.
const (
	// MaxSubject is the longest subject, in characters.
	MaxSubject = 200
)

// ScheduleRequest is the body of POST /sms/lines/{line}/scheduled.
type ScheduleRequest struct {
	To      []string
	Message string
	Subject string
	Media   []string // hosted URLs of the account: from POST /sms/media or a send's messages[].media
	SendAt  time.Time
}

// Schedule validates and prices req and queues it on line for req.SendAt.
// The send's rules apply, except that nothing is sent now, so a recipient
// that would be skipped (invalid, opted out) is 400, naming it. The price is
// fixed now, with the send's rate rules, and charged when the message is
// sent. With idem, the result is the Idempotency-Key's answer, written in the
// schedule's transaction.
func (s *Service) Schedule(ctx context.Context, p auth.Principal, line string, req ScheduleRequest, idem *Idempotency) (domain.ScheduledMessage, error) {
	l, err := s.Line(ctx, p, line)
	if err != nil {
		return domain.ScheduledMessage{}, err
	}
	if err := validateSchedule(req, s.now()); err != nil {
		return domain.ScheduledMessage{}, err
	}
	names, err := s.hostedNames(ctx, p.AccountID, req.Media)
	if err != nil {
		return domain.ScheduledMessage{}, err
	}
	var res domain.SendResult
	to, err := s.recipients(ctx, l, req.To, &res)
	if err != nil {
		return domain.ScheduledMessage{}, err
	}
	var refused []string
	for _, sk := range res.Skipped {
		if sk.Reason != domain.SkipDuplicate {
			refused = append(refused, fmt.Sprintf("%q (%s)", sk.To, sk.Reason))
		}
	}
	if len(refused) > 0 {
		return domain.ScheduledMessage{}, domain.Errorf(domain.Invalid, "to: these recipients cannot be sent to: %s", strings.Join(refused, ", "))
	}
	mms := len(to) > 1 || len(names) > 0
	msg, unit, err := s.price(ctx, p.AccountID, to, req.Message, mms)
	if err != nil {
		return domain.ScheduledMessage{}, err
	}
	m := domain.ScheduledMessage{AccountID: p.AccountID, LineID: l.ID, Line: l.Number, Recipients: to, UnitPrices: unit,
		Subject: req.Subject, Text: req.Message, Media: names, Type: msg.Type, Units: msg.Units, Price: msg.Price,
		// Microseconds are what is stored, so they are what the answer
		// says too: a sendAt of nine fractional digits is echoed as it will
		// be listed, not as given.
		SendAt: req.SendAt.UTC().Truncate(time.Microsecond), CreatedBy: p.UserID}
	var answer *store.IdempotencyAnswer
	if idem != nil {
		// The answer is the schedule as it stands now, with the id the
		// store's transaction assigns: handed as data (see scheduledRecord).
		data, err := scheduledRecord(m)
		if err != nil {
			return domain.ScheduledMessage{}, err
		}
		answer = &store.IdempotencyAnswer{Claim: idem.claim, Data: data}
	}
	if err := s.store.CreateScheduled(ctx, &m, answer); err != nil {
		if nh := (*store.NotHostedError)(nil); errors.As(err, &nh) {
			// Removed by the cleanup since hostedNames read it.
			return domain.ScheduledMessage{}, notHosted(nh.Index)
		}
		return domain.ScheduledMessage{}, err
	}
	return m, nil
}

// scheduledRecord is the Idempotency-Key record of schedule m, for the store
// to name the new schedule in: m encoded with store.PlaceholderID for its id
// (ID is its first field, before any text of the caller's).
func scheduledRecord(m domain.ScheduledMessage) (store.IDTemplate, error) {
	m.ID = store.PlaceholderID
	b, err := json.Marshal(record{Scheduled: &m})
	if err != nil {
		return store.IDTemplate{}, fmt.Errorf("sms: idempotency record: %w", err)
	}
	return store.NewIDTemplate(b, `{"scheduled":{"ID":`)
}

// validateSchedule checks the request's own shape (before any lookup).
func validateSchedule(req ScheduleRequest, now time.Time) error {
	if len(req.To) == 0 {
		return domain.Errorf(domain.Invalid, "to is required: 1 to %d recipients", MaxRecipients)
	}
	if len(req.To) > MaxToEntries {
		return domain.Errorf(domain.Invalid, "to has %d entries; at most %d distinct recipients are allowed", len(req.To), MaxRecipients)
	}
	if len(req.Message) > MaxMessageBytes {
		return domain.Errorf(domain.Invalid, "message is %d bytes; at most %d are allowed", len(req.Message), MaxMessageBytes)
	}
	if !utf8.ValidString(req.Message) || !utf8.ValidString(req.Subject) {
		return domain.Errorf(domain.Invalid, "message and subject must be valid UTF-8")
	}
	if len(req.Media) == 0 && strings.TrimSpace(req.Message) == "" {
		if req.Message == "" {
			return domain.Errorf(domain.Invalid, "message is required unless media is set")
		}
		return domain.Errorf(domain.Invalid, "message is only whitespace")
	}
	if n := utf8.RuneCountInString(req.Subject); n > MaxSubject {
		return domain.Errorf(domain.Invalid, "subject is %d characters; at most %d are allowed", n, MaxSubject)
	}
	if len(req.Media) > MaxAttachments {
		return domain.Errorf(domain.Invalid, "media has %d items; at most %d are allowed", len(req.Media), MaxAttachments)
	}
	switch {
	case req.SendAt.IsZero():
		return domain.Errorf(domain.Invalid, "sendAt is required (RFC 3339, in the future)")
	case !req.SendAt.After(now):
		return domain.Errorf(domain.Invalid, "sendAt %s is not in the future", req.SendAt.UTC().Format(time.RFC3339))
	case req.SendAt.After(now.AddDate(1, 0, 0)): // one calendar year: the same date and time next year
		return domain.Errorf(domain.Invalid, "sendAt %s is more than a year ahead", req.SendAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// hostedNames turns media URLs into the names of media this server hosts for
// the account (uploaded with POST /sms/media or attached to a send); any
// other URL, another account's included, is 400, naming its field (never
// echoing it: media URLs are secrets).
func (s *Service) hostedNames(ctx context.Context, accountID int64, urls []string) ([]string, error) {
	if len(urls) == 0 {
		return nil, nil
	}
	names := make([]string, len(urls))
	for i, u := range urls {
		names[i] = s.mediaName(u)
	}
	owned, err := s.store.HostedMediaOwned(ctx, accountID, names)
	if err != nil {
		return nil, err
	}
	for i, n := range names {
		if n == "" || !owned[n] {
			return nil, notHosted(i)
		}
	}
	return names, nil
}

// notHosted is the 400 of media[i], a URL that is not a file hosted for the
// account; the same whatever the reason, so that another account's files
// cannot be told from URLs never hosted.
func notHosted(i int) error {
	return domain.Errorf(domain.Invalid, "media[%d] is not media this server hosts for your account: use a URL that POST /sms/media returned, or one of a sent message's messages[].media", i)
}

// mediaName is the hosted name whose public URL is u, or "" when u is not
// one: the last path element, accepted only if it maps back to exactly u.
func (s *Service) mediaName(u string) string {
	parsed, err := url.Parse(u)
	if err != nil || parsed.Path == "" {
		return ""
	}
	name := path.Base(parsed.Path)
	if name == "" || name == "." || name == "/" || s.mediaURL(name) != u {
		return ""
	}
	return name
}

// Scheduled lists line's queued messages, soonest first.
func (s *Service) Scheduled(ctx context.Context, p auth.Principal, line string) ([]domain.ScheduledMessage, error) {
	l, err := s.Line(ctx, p, line)
	if err != nil {
		return nil, err
	}
	return s.store.ScheduledMessages(ctx, l)
}

// CancelScheduled cancels line's queued message id: it is never sent or
// charged. One already sent or cancelled, or unknown, is not_found.
func (s *Service) CancelScheduled(ctx context.Context, p auth.Principal, line, id string) error {
	l, err := s.Line(ctx, p, line)
	if err != nil {
		return err
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return domain.Errorf(domain.NotFound, "scheduled message %q not found", id)
	}
	return s.store.CancelScheduled(ctx, l, n)
}

// MediaURLs is the public URLs of hosted names, in order.
func (s *Service) MediaURLs(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = s.mediaURL(n)
	}
	return out
}
