package oauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"switchboard/internal/store"
)

// Registration limits.
const (
	registerBodyLimit = 16 << 10
	maxRedirectURIs   = 10
	maxRedirectURILen = 2000
	maxClientNameLen  = 100 // characters
)

type registration struct {
	ClientID                string   `json:"client_id"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
}

// metadataError is a registration refusal (RFC 7591 §3.2.2).
type metadataError struct{ code, description string }

func (e *metadataError) Error() string { return e.code + ": " + e.description }

func badMetadata(format string, args ...any) error {
	return &metadataError{errInvalidClientMetadata, fmt.Sprintf(format, args...)}
}

func badRedirect(format string, args ...any) error {
	return &metadataError{errInvalidRedirectURI, fmt.Sprintf(format, args...)}
}

// Outcomes of a registration, the label of switchboard_oauth_registrations_total.
const (
	outcomeRegistered  = "registered"
	outcomeInvalid     = "invalid"
	outcomeRateLimited = "rate_limited"
	outcomeError       = "error"
)

// register is dynamic client registration (RFC 7591) for public clients. It
// stays open to anyone, so it is rate limited per client address and in
// total; clients that never obtain a grant are pruned after
// store.OAuthUnusedClientTTL. The registration's token is taken before the
// body is read (so a parallel burst cannot overshoot) and given back when
// nothing was written: fixing one's metadata costs no budget.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	addr := ipKey(s.clientIP(r))
	if wait := s.registrations.allow(addr); wait > 0 {
		s.registered.WithLabelValues(outcomeRateLimited).Inc()
		secs := int((wait + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeError(w, http.StatusTooManyRequests, errRateLimited,
			fmt.Sprintf("too many client registrations; try again in %d seconds", secs))
		return
	}
	reg, err := s.decodeRegistration(w, r)
	if err == nil {
		err = s.checkRedirectURIs(r, reg.RedirectURIs)
	}
	var me *metadataError
	if err != nil {
		s.registrations.refund(addr)
	}
	if errors.As(err, &me) {
		s.registered.WithLabelValues(outcomeInvalid).Inc()
		writeError(w, http.StatusBadRequest, me.code, me.description)
		return
	}
	if err != nil {
		s.registered.WithLabelValues(outcomeError).Inc()
		s.serverError(w, r, "register client", err)
		return
	}
	c := store.OAuthClient{ClientID: secret(""), Name: reg.ClientName, RedirectURIs: reg.RedirectURIs}
	if err := s.store.CreateOAuthClient(ctx, &c); err != nil {
		s.registrations.refund(addr)
		s.registered.WithLabelValues(outcomeError).Inc()
		s.serverError(w, r, "register client", err)
		return
	}
	s.registered.WithLabelValues(outcomeRegistered).Inc()
	s.log.InfoContext(ctx, "oauth client registered", "client_id", c.ClientID, "client_name", c.Name, "redirect_uris", c.RedirectURIs)
	noStore(w)
	writeJSON(w, http.StatusCreated, registration{
		ClientID:                c.ClientID,
		ClientIDIssuedAt:        c.CreatedAt.Unix(),
		ClientName:              c.Name,
		RedirectURIs:            c.RedirectURIs,
		TokenEndpointAuthMethod: "none",
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
	})
}

// decodeRegistration reads the request's client metadata. Unknown metadata
// is ignored (RFC 7591 §2), but known fields must be spelled exactly and have
// the right types, and the body must be one JSON object.
func (s *Server) decodeRegistration(w http.ResponseWriter, r *http.Request) (registration, error) {
	var reg registration
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		return reg, badMetadata("the request body must be application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, registerBodyLimit))
	if err != nil {
		return reg, badMetadata("the request body is too large or unreadable")
	}
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&fields); err != nil || fields == nil {
		return reg, badMetadata("the request body must be a JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return reg, badMetadata("the request body has data after the JSON object")
	}
	field := func(name string, dst any) error {
		v, ok := fields[name]
		if !ok || string(v) == "null" {
			return nil
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return badMetadata("%s has the wrong type", name)
		}
		return nil
	}
	var authMethod string
	if err := errors.Join(
		field("client_name", &reg.ClientName),
		field("redirect_uris", &reg.RedirectURIs),
		field("token_endpoint_auth_method", &authMethod),
		field("grant_types", &reg.GrantTypes),
		field("response_types", &reg.ResponseTypes),
	); err != nil {
		return reg, badMetadata("%s", strings.ReplaceAll(err.Error(), errInvalidClientMetadata+": ", ""))
	}

	reg.ClientName = strings.TrimSpace(reg.ClientName)
	switch {
	case reg.ClientName == "":
		return reg, badMetadata("client_name is required")
	case !utf8.ValidString(reg.ClientName) || strings.ContainsFunc(reg.ClientName, unicode.IsControl):
		return reg, badMetadata("client_name must be printable text")
	case utf8.RuneCountInString(reg.ClientName) > maxClientNameLen:
		return reg, badMetadata("client_name is longer than %d characters", maxClientNameLen)
	case authMethod != "" && authMethod != "none":
		return reg, badMetadata("only public clients are supported: token_endpoint_auth_method must be \"none\"")
	}
	for _, g := range reg.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return reg, badMetadata("grant type %q is not supported", g)
		}
	}
	for _, rt := range reg.ResponseTypes {
		if rt != "code" {
			return reg, badMetadata("response type %q is not supported", rt)
		}
	}
	if len(reg.RedirectURIs) == 0 {
		return reg, badRedirect("redirect_uris must list at least one URI")
	}
	if len(reg.RedirectURIs) > maxRedirectURIs {
		return reg, badRedirect("at most %d redirect URIs", maxRedirectURIs)
	}
	var uris []string
	for _, u := range reg.RedirectURIs {
		if !slices.Contains(uris, u) {
			uris = append(uris, u)
		}
	}
	reg.RedirectURIs = uris
	return reg, nil
}

// checkRedirectURIs applies the registration rules: absolute https URLs, no
// fragment or user info, on a host the operator allowed (exact host,
// case-insensitive).
func (s *Server) checkRedirectURIs(r *http.Request, uris []string) error {
	for _, raw := range uris {
		u, err := url.Parse(raw)
		switch {
		case len(raw) > maxRedirectURILen:
			return badRedirect("a redirect URI is longer than %d characters", maxRedirectURILen)
		case err != nil:
			return badRedirect("%q is not a valid URL", raw)
		case u.Scheme != "https":
			return badRedirect("%q must be an absolute https URL", raw)
		case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
			return badRedirect("%q must be an absolute https URL with a host", raw)
		case strings.Contains(raw, "#"):
			return badRedirect("%q must not have a fragment", raw)
		case u.User != nil:
			return badRedirect("%q must not carry user information", raw)
		case strings.ContainsFunc(raw, func(c rune) bool { return c <= ' ' || c == 0x7f }):
			return badRedirect("%q contains spaces or control characters", raw)
		}
		ok, err := s.store.HostAllowed(r.Context(), u.Hostname())
		if err != nil {
			return err
		}
		if !ok {
			return badRedirect("the host %q is not allowed for redirect URIs on this server; ask its operator to allow it", u.Hostname())
		}
	}
	return nil
}
