package auth

import (
	"context"

	"switchboard/internal/domain"
	"switchboard/internal/phone"
	"switchboard/internal/store"
)

// Lines returns the account's SMS-capable lines that p may use: every one for
// an API key, those the person's role grants for an OAuth token.
func Lines(ctx context.Context, st *store.Store, p Principal) ([]domain.Line, error) {
	if err := p.RequireNumbers(); err != nil {
		return nil, err
	}
	all, err := st.Lines(ctx, p.AccountID, true)
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

// Line finds number (as a path or a filter gives it) among the SMS lines p
// may use. Another account's line, one p's role does not grant, or a
// malformed number is not_found: the caller cannot tell them apart.
func Line(ctx context.Context, st *store.Store, p Principal, number string) (domain.Line, error) {
	lines, err := Lines(ctx, st, p)
	if err != nil {
		return domain.Line{}, err
	}
	return FindLine(lines, number)
}

// FindLine finds number among lines (those Lines returned), not_found
// when absent.
func FindLine(lines []domain.Line, number string) (domain.Line, error) {
	if n, ok := phone.Normalize(number); ok {
		for _, l := range lines {
			if l.Number == n {
				return l, nil
			}
		}
	}
	return domain.Line{}, domain.Errorf(domain.NotFound, "line %s not found", number)
}
