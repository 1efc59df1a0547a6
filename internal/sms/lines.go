package sms

import (
	"context"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
)

// Lines returns the account's SMS-capable lines that p may use (auth.Lines).
func (s *Service) Lines(ctx context.Context, p auth.Principal) ([]domain.Line, error) {
	return auth.Lines(ctx, s.store, p)
}

// Line finds number (as a path gives it) among the SMS lines p may use
// (auth.Line): anything else is not_found.
func (s *Service) Line(ctx context.Context, p auth.Principal, number string) (domain.Line, error) {
	return auth.Line(ctx, s.store, p, number)
}
