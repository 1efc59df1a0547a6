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
		out = append(out, withCompany(u, acct))
	}
	return out, nil
}

// withCompany is u as the API shows it: Company falls back to the account's name.
func withCompany(u domain.User, acct domain.Account) domain.User {
	if u.Company == "" {
		u.Company = acct.Name
	}
	return u
}

// Me is who a credential is (GET /me). It shows nothing the credential
// could not read elsewhere: the person's own record only where GET /users
// would list it, the lines only where GET /sms/lines would answer.
type Me struct {
	Account domain.Account
	// User is the person a token acts for, as GET /users lists them; nil
	// for an API key, and without the users:read scope or a role that shows
	// the person their own record.
	User *domain.User
	// Lines are the SMS lines the credential may use, as GET /sms/lines
	// lists them (none for a role without the Phone numbers permission);
	// read only when ShowLines, that is with the sms:read scope.
	Lines     []domain.Line
	ShowLines bool
}

// Me answers who p is.
func (s *Service) Me(ctx context.Context, p auth.Principal) (Me, error) {
	acct, err := s.store.Account(ctx, p.AccountID)
	if err != nil {
		return Me{}, err
	}
	me := Me{Account: acct}
	if p.IsUser() && p.Has(auth.UsersRead) && p.Permissions.Users != domain.UsersNone {
		u, err := s.store.User(ctx, p.AccountID, p.UserID)
		if err != nil {
			return Me{}, err
		}
		u = withCompany(u, acct)
		me.User = &u
	}
	if p.Has(auth.SMSRead) {
		me.ShowLines = true
		if p.RequireNumbers() == nil {
			if me.Lines, err = auth.Lines(ctx, s.store, p); err != nil {
				return Me{}, err
			}
		}
	}
	return me, nil
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
