package auth

import (
	"fmt"
	"slices"
	"strings"
)

// Scope is a capability a credential may carry.
type Scope string

// The scopes of the public API.
const (
	WebhooksRead   Scope = "webhooks:read"
	WebhooksWrite  Scope = "webhooks:write"
	ReportsRead    Scope = "reports:read"
	UsersRead      Scope = "users:read"
	SMSRead        Scope = "sms:read"
	SMSWrite       Scope = "sms:write"
	SMSSend        Scope = "sms:send"
	RecordingsRead Scope = "recordings:read"
	MessagesRead   Scope = "messages:read"
	MessagesWrite  Scope = "messages:write"
)

// AllScopes lists every scope, in the order the discovery document gives them.
var AllScopes = []Scope{
	WebhooksRead, WebhooksWrite, ReportsRead, UsersRead, SMSRead, SMSWrite, SMSSend,
	RecordingsRead, MessagesRead, MessagesWrite,
}

// ParseScopes reads a comma- or space-separated scope list; "all" means every scope.
// Unknown scopes are an error so that a typo never silently grants less.
func ParseScopes(list string) ([]Scope, error) {
	var out []Scope
	for _, tok := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' }) {
		if tok == "all" {
			return slices.Clone(AllScopes), nil
		}
		s := Scope(tok)
		if !slices.Contains(AllScopes, s) {
			return nil, fmt.Errorf("unknown scope %q", tok)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("at least one scope is required")
	}
	return out, nil
}

// Strings converts scopes to their string form.
func Strings(scopes []Scope) []string {
	out := make([]string, len(scopes))
	for i, s := range scopes {
		out[i] = string(s)
	}
	return out
}
