// Package auth turns a bearer credential into a Principal: the account, the
// person (for OAuth tokens), the scopes and the role permissions that every
// endpoint checks. Handlers see only the Principal, never which kind of
// credential produced it.
package auth
