package httpapi

import (
	"net/http"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
)

// Credential kinds, as GET /me names them.
const (
	kindUser   = "user"   // an OAuth access token, acting for a person
	kindAPIKey = "apiKey" // an API key, acting for the account
)

// meJSON is the public API's Me: who the credential is and what it may do.
type meJSON struct {
	Kind    string          `json:"kind"`
	Scopes  []string        `json:"scopes"`
	Account meAccountJSON   `json:"account"`
	UserID  int64           `json:"userId,omitempty"`
	User    *userJSON       `json:"user,omitempty"`
	Perms   *permissionJSON `json:"permissions,omitempty"`
	Lines   *[]lineJSON     `json:"lines,omitempty"`
}

// meAccountJSON is Me.account: the account and the settings that limit
// every credential of it, whatever its scopes and role.
type meAccountJSON struct {
	ID                  int64 `json:"id"`
	RecordingsAvailable bool  `json:"recordingsAvailable"`
	MessageDeletion     bool  `json:"messageDeletionAllowed"`
}

// permissionJSON is Me.permissions: the person's role permissions
// (domain.Permissions), with "none" for the zero values so that every
// field always has a value.
type permissionJSON struct {
	Users           string `json:"users"`
	Numbers         string `json:"numbers"`
	CallReports     bool   `json:"callReports"`
	AllowRecordings bool   `json:"allowRecordings"`
	Webhooks        bool   `json:"webhooks"`
}

func toPermissionJSON(p domain.Permissions) *permissionJSON {
	return &permissionJSON{Users: orNone(string(p.Users)), Numbers: orNone(string(p.Numbers)),
		CallReports: p.CallReports, AllowRecordings: p.AllowRecordings, Webhooks: p.Webhooks}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// me answers GET /me: any valid credential may ask who it is, so the route
// requires no scope; what the answer shows beyond the credential itself
// follows the scopes that read it elsewhere (users.Me).
func (s *Server) me(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	me, err := s.users.Me(r.Context(), p)
	if err != nil {
		return err
	}
	out := meJSON{Kind: kindAPIKey, Scopes: []string{},
		Account: meAccountJSON{ID: me.Account.ID, RecordingsAvailable: !me.Account.SensitiveReverify, MessageDeletion: !me.Account.RestrictSMSDelete}}
	// In the order the discovery document lists them, whatever order the
	// credential was issued with: a client can compare answers.
	for _, sc := range auth.AllScopes {
		if p.Has(sc) {
			out.Scopes = append(out.Scopes, string(sc))
		}
	}
	if p.IsUser() {
		out.Kind, out.UserID, out.Perms = kindUser, p.UserID, toPermissionJSON(p.Permissions)
	}
	if me.User != nil {
		u := toUserJSON(*me.User)
		out.User = &u
	}
	if me.ShowLines {
		lines := make([]lineJSON, len(me.Lines))
		for i, l := range me.Lines {
			lines[i] = toLineJSON(l)
		}
		out.Lines = &lines
	}
	writeData(w, http.StatusOK, out)
	return nil
}
