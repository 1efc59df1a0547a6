package sms

import (
	"context"
	"unicode/utf8"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/phone"
)

// MaxBlockReason is the longest reason a block may carry, in characters.
const MaxBlockReason = 500

// Blocked lists the numbers blocked on line, newest first.
func (s *Service) Blocked(ctx context.Context, p auth.Principal, line string) ([]domain.BlockedSender, error) {
	l, err := s.Line(ctx, p, line)
	if err != nil {
		return nil, err
	}
	return s.store.BlockedSenders(ctx, l)
}

// BlockedSender returns line's entry for number; not_found when not blocked.
func (s *Service) BlockedSender(ctx context.Context, p auth.Principal, line, number string) (domain.BlockedSender, error) {
	l, err := s.Line(ctx, p, line)
	if err != nil {
		return domain.BlockedSender{}, err
	}
	n, err := blockedNumber(number)
	if err != nil {
		return domain.BlockedSender{}, err
	}
	return s.store.BlockedSender(ctx, l, n)
}

// Block stops number's texts to line from reaching the inbox. created is
// false when it was already blocked; the stored entry is returned unchanged.
func (s *Service) Block(ctx context.Context, p auth.Principal, line, number, reason string) (b domain.BlockedSender, created bool, err error) {
	l, err := s.Line(ctx, p, line)
	if err != nil {
		return b, false, err
	}
	if number == "" {
		return b, false, domain.Errorf(domain.Invalid, "number is required")
	}
	n, ok := phone.Normalize(number)
	if !ok || !phone.Dialable(n) {
		return b, false, domain.Errorf(domain.Invalid, "number %q is not a dialable phone number", number)
	}
	if c := utf8.RuneCountInString(reason); c > MaxBlockReason {
		return b, false, domain.Errorf(domain.Invalid, "reason is %d characters; at most %d are allowed", c, MaxBlockReason)
	}
	b = domain.BlockedSender{LineID: l.ID, Line: l.Number, Number: n, Reason: reason}
	created, err = s.store.Block(ctx, &b)
	return b, created, err
}

// Unblock lets number text line again; not_found when it was not blocked.
func (s *Service) Unblock(ctx context.Context, p auth.Principal, line, number string) error {
	l, err := s.Line(ctx, p, line)
	if err != nil {
		return err
	}
	n, err := blockedNumber(number)
	if err != nil {
		return err
	}
	return s.store.Unblock(ctx, l, n)
}

// blockedNumber normalizes a path's number; a malformed one is 400, since it
// could never have been blocked.
func blockedNumber(number string) (string, error) {
	n, ok := phone.Normalize(number)
	if !ok {
		return "", domain.Errorf(domain.Invalid, "number %q is not a phone number", number)
	}
	return n, nil
}
