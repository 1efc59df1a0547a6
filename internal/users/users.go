// Package users answers GET /users: the account's company users, filtered by
// what the calling person's role lets them see.
package users

import (
	"context"
	"fmt"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// Config is what the users service needs. Store is required.
type Config struct {
	Store *store.Store
}

// Service lists an account's users.
type Service struct {
	store *store.Store
}

// New builds the service.
func New(cfg Config) *Service { return &Service{store: cfg.Store} }

// List returns the users p may see, ordered by last name, first name and id,
// with Company falling back to the account name.
func (s *Service) List(ctx context.Context, p auth.Principal) ([]domain.User, error) {
	if p.IsUser() && p.Permissions.Users == domain.UsersNone {
		return nil, domain.Errorf(domain.PermissionDenied, "your role does not allow viewing users")
	}
	acct, err := s.store.Account(ctx, p.AccountID)
	if err != nil {
		return nil, err
	}
	all, err := s.store.Users(ctx, p.AccountID)
	if err != nil {
		return nil, err
	}
	out := all[:0:0]
	for _, u := range all {
		if p.IsUser() && p.Permissions.Users == domain.UsersSelf && u.ID != p.UserID {
			continue
		}
		if u.Company == "" {
			u.Company = acct.Name
		}
		out = append(out, u)
	}
	return out, nil
}

// ListEncoded is List passed through encode, the answer kept in the store's
// read cache until the database changes: the list is read far more often
// than users change, and encoding it is most of the cost. Everyone with the
// same view of the account shares one entry.
func (s *Service) ListEncoded(ctx context.Context, p auth.Principal, encode func([]domain.User) ([]byte, error)) ([]byte, error) {
	view := "all"
	if p.IsUser() && p.Permissions.Users != domain.UsersAll {
		view = fmt.Sprintf("%s:%d", p.Permissions.Users, p.UserID)
	}
	return store.Memo(ctx, s.store, fmt.Sprintf("users:%d:%s", p.AccountID, view), func() ([]byte, error) {
		list, err := s.List(ctx, p)
		if err != nil {
			return nil, err
		}
		return encode(list)
	})
}
