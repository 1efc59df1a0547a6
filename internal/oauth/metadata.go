package oauth

import (
	"encoding/json"
	"net/http"

	"switchboard/internal/auth"
)

// metadata is the authorization server metadata document (RFC 8414).
type metadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	RevocationEndpoint                string   `json:"revocation_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	ResponseModesSupported            []string `json:"response_modes_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	RevocationAuthMethodsSupported    []string `json:"revocation_endpoint_auth_methods_supported"`
	// RFC 9207: authorization responses carry iss, so a client talking to
	// several servers can tell which one answered.
	IssParameterSupported bool `json:"authorization_response_iss_parameter_supported"`
}

func (s *Server) buildMetadata() []byte {
	m := metadata{
		Issuer:                            s.issuer,
		AuthorizationEndpoint:             s.base + "/oauth/authorize",
		TokenEndpoint:                     s.base + "/api/v1/oauth/token",
		RegistrationEndpoint:              s.base + "/api/v1/oauth/register",
		RevocationEndpoint:                s.base + "/api/v1/oauth/revoke",
		ScopesSupported:                   auth.Strings(auth.AllScopes),
		ResponseTypesSupported:            []string{"code"},
		ResponseModesSupported:            []string{"query"},
		GrantTypesSupported:               []string{"authorization_code", "refresh_token"},
		CodeChallengeMethodsSupported:     []string{"S256"},
		TokenEndpointAuthMethodsSupported: []string{"none"},
		RevocationAuthMethodsSupported:    []string{"none"},
		IssParameterSupported:             true,
	}
	b, _ := json.Marshal(m)
	return append(b, '\n')
}

func (s *Server) discovery(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	// Changes only with a new release or a new issuer: an hour of caching
	// spares clients a request per authorization.
	h.Set("Cache-Control", "public, max-age=3600")
	w.Write(s.metadata)
}
