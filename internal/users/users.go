// Package users answers GET /users: the account's company users, filtered by
// what the calling person's role lets them see.
package users

import (
	"context"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// List returns the users p may see, ordered by last name, first name and id,
// with Company falling back to the account name.
func List(ctx context.Context, st *store.Store, p auth.Principal) ([]domain.User, error) {
	if p.IsUser() && p.Permissions.Users == domain.UsersNone {
		return nil, domain.Errorf(domain.PermissionDenied, "your role does not allow viewing users")
	}
	acct, err := st.Account(ctx, p.AccountID)
	if err != nil {
		return nil, err
	}
	all, err := st.Users(ctx, p.AccountID)
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
