package sms

import (
	"context"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
)

// Lines returns the account's SMS-capable lines that p may use: every one for
// an API key, those the person's role grants for an OAuth token.
func (s *Service) Lines(ctx context.Context, p auth.Principal) ([]domain.Line, error) {
	if err := p.RequireNumbers(); err != nil {
		return nil, err
	}
	all, err := s.store.Lines(ctx, p.AccountID, true)
	if err != nil {
		return nil, err
	}
	out := make([]domain.Line, 0, len(all)) // all is the store's shared copy
	for _, l := range all {
		if p.CanUseLine(l) {
			out = append(out, l)
		}
	}
	return out, nil
}
