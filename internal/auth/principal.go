package auth

import (
	"context"
	"slices"

	"switchboard/internal/domain"
)

// Principal is who is calling: an account, optionally a person of it, what the
// credential's scopes allow and, for a person, what their role permits.
type Principal struct {
	AccountID int64
	// UserID is the person an OAuth token acts for; 0 for an API key.
	UserID int64
	Scopes []Scope
	// Permissions are the person's role permissions; unused for API keys.
	Permissions domain.Permissions
	// Credential identifies the key or token, for logs (never the secret).
	Credential string
}

// IsUser reports whether the principal acts for a person (an OAuth token).
func (p Principal) IsUser() bool { return p.UserID != 0 }

// Has reports whether the credential carries scope.
func (p Principal) Has(scope Scope) bool { return slices.Contains(p.Scopes, scope) }

// Require returns insufficient_scope unless the credential carries scope.
func (p Principal) Require(scope Scope) error {
	if p.Has(scope) {
		return nil
	}
	return &domain.Error{Code: domain.InsufficientScope, Message: "this credential lacks the " + string(scope) + " scope", Scope: string(scope)}
}

// CanUseLine applies the "Phone numbers" role permission to line: API keys
// may use every line; a person only lines their role grants.
func (p Principal) CanUseLine(l domain.Line) bool {
	if !p.IsUser() {
		return true
	}
	switch p.Permissions.Numbers {
	case domain.NumbersAll:
		return true
	case domain.NumbersAssigned:
		return l.AvailableTo(p.UserID)
	}
	return false
}

// RequireNumbers returns permission_denied when a person's role grants no phone numbers.
func (p Principal) RequireNumbers() error {
	if p.IsUser() && p.Permissions.Numbers == domain.NumbersNone {
		return domain.Errorf(domain.PermissionDenied, "your role does not grant access to phone numbers")
	}
	return nil
}

type ctxKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the principal stored in ctx.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(Principal)
	return p, ok
}
