package team

import (
	"context"
	"slices"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// Config is what the team service needs. Store is required.
type Config struct {
	Store *store.Store
}

// Service answers the team's questions: teammates and notification
// preferences.
type Service struct {
	store *store.Store
}

// New builds the service.
func New(cfg Config) *Service { return &Service{store: cfg.Store} }

// LineTeam returns the people who can work line, as its inbound texts'
// readers are found (domain.LineReaders: the role's Phone numbers
// permission and the line's assignment), without disabled ones: those who
// may be mentioned in a note on the line.
func LineTeam(ctx context.Context, st *store.Store, line domain.Line) ([]domain.User, error) {
	users, roles, err := usersAndRoles(ctx, st, line.AccountID)
	if err != nil {
		return nil, err
	}
	ids := domain.LineReaders(users, roles, line)
	out := make([]domain.User, 0, len(ids))
	for _, u := range users {
		if !u.Disabled && slices.Contains(ids, u.ID) {
			out = append(out, u)
		}
	}
	return out, nil
}

func usersAndRoles(ctx context.Context, st *store.Store, account int64) ([]domain.User, []domain.Role, error) {
	users, err := st.Users(ctx, account)
	if err != nil {
		return nil, nil, err
	}
	roles, err := st.Roles(ctx, account)
	return users, roles, err
}

// Teammate is a person who can work some of the caller's lines, with those
// lines (the ones the caller may use too).
type Teammate struct {
	User  domain.User
	Lines []string // line numbers, in the order of the caller's lines
}

// Teammates returns the people who can work the lines p may use (lines:
// only these; nil for all of them), p among them, in GET /users's order,
// each with the lines shared. It shows a person only their name and the
// lines both can see, so the Users role permission does not apply: sharing
// a line is enough (docs/decisions.md, "The team: teammates").
func (s *Service) Teammates(ctx context.Context, p auth.Principal, lines []string) ([]Teammate, error) {
	mine, err := auth.Lines(ctx, s.store, p)
	if err != nil {
		return nil, err
	}
	if lines != nil {
		var asked []domain.Line
		for _, n := range lines {
			l, err := auth.FindLine(mine, n)
			if err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(asked, func(a domain.Line) bool { return a.ID == l.ID }) {
				asked = append(asked, l)
			}
		}
		mine = asked
	}
	users, roles, err := usersAndRoles(ctx, s.store, p.AccountID)
	if err != nil {
		return nil, err
	}
	shared := map[int64][]string{}
	for _, l := range mine {
		for _, id := range domain.LineReaders(users, roles, l) {
			shared[id] = append(shared[id], l.Number)
		}
	}
	out := []Teammate{}
	for _, u := range users {
		if ls, ok := shared[u.ID]; ok {
			out = append(out, Teammate{User: u, Lines: ls})
		}
	}
	return out, nil
}
