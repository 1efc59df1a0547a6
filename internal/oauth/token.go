package oauth

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"mime"
	"net/http"
	"regexp"
	"strings"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store"
)

// verifierRE is a PKCE code verifier (RFC 7636 §4.1).
var verifierRE = regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)

type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token"`
	Scope        string `json:"scope"`
}

// readForm parses an application/x-www-form-urlencoded body, refusing other
// content types and repeated parameters (RFC 6749 §3.2). Parameters in the
// URL query are not read.
func readForm(w http.ResponseWriter, r *http.Request) (map[string]string, bool) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		writeError(w, http.StatusBadRequest, errInvalidRequest, "the body must be application/x-www-form-urlencoded")
		return nil, false
	}
	r.Body = http.MaxBytesReader(w, r.Body, formBodyLimit)
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, errInvalidRequest, "the form body could not be read")
		return nil, false
	}
	if name, found := nulParam(r.PostForm); found {
		writeError(w, http.StatusBadRequest, errInvalidRequest, nulMessage(name))
		return nil, false
	}
	form := make(map[string]string, len(r.PostForm))
	for k, v := range r.PostForm {
		if len(v) > 1 {
			writeError(w, http.StatusBadRequest, errInvalidRequest, k+" is repeated")
			return nil, false
		}
		form[k] = v[0]
	}
	return form, true
}

// token is the token endpoint (RFC 6749 §3.2).
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	form, ok := readForm(w, r)
	if !ok {
		return
	}
	grantType := form["grant_type"]
	switch grantType {
	case "":
		writeError(w, http.StatusBadRequest, errInvalidRequest, "grant_type is required")
		return
	case "authorization_code", "refresh_token":
	default:
		writeError(w, http.StatusBadRequest, errUnsupportedGrantType, "grant_type must be authorization_code or refresh_token")
		return
	}
	client, ok := s.tokenClient(w, r, form["client_id"], true)
	if !ok {
		return
	}
	if client.ClientID == store.AppClientID {
		// The app's codes are redeemed, and its refresh tokens kept, by the
		// server itself (session.go): no script ever holds a refresh token
		// of the app, not even one that obtained a code.
		writeError(w, http.StatusBadRequest, errUnauthorizedClient, "the Switchboard app's tokens are issued only through its session at "+AppSessionPath)
		return
	}
	if grantType == "authorization_code" {
		s.exchangeCode(w, r, client, form)
	} else {
		s.refresh(w, r, client, form)
	}
}

// tokenClient identifies the public client by client_id: required on the
// token endpoint, optional on revocation.
func (s *Server) tokenClient(w http.ResponseWriter, r *http.Request, clientID string, required bool) (store.OAuthClient, bool) {
	if clientID == "" {
		if required {
			writeError(w, http.StatusBadRequest, errInvalidRequest, "client_id is required")
			return store.OAuthClient{}, false
		}
		return store.OAuthClient{}, true
	}
	c, err := s.store.OAuthClient(r.Context(), clientID)
	if domain.IsNotFound(err) {
		writeError(w, http.StatusUnauthorized, errInvalidClient, "unknown client_id")
		return c, false
	}
	if err != nil {
		s.serverError(w, r, "token client", err)
		return c, false
	}
	return c, true
}

func (s *Server) exchangeCode(w http.ResponseWriter, r *http.Request, client store.OAuthClient, form map[string]string) {
	code, verifier, redirectURI := form["code"], form["code_verifier"], form["redirect_uri"]
	switch {
	case code == "":
		writeError(w, http.StatusBadRequest, errInvalidRequest, "code is required")
		return
	case verifier == "":
		writeError(w, http.StatusBadRequest, errInvalidRequest, "code_verifier is required (PKCE)")
		return
	case redirectURI == "":
		writeError(w, http.StatusBadRequest, errInvalidRequest, "redirect_uri is required")
		return
	case !wellFormed(code, CodePrefix):
		writeError(w, http.StatusBadRequest, errInvalidGrant, "the authorization code is invalid, expired or already used")
		return
	case !verifierRE.MatchString(verifier):
		// Cannot match any S256 challenge; RFC 7636 §4.6 answers invalid_grant.
		writeError(w, http.StatusBadRequest, errInvalidGrant, "code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~")
		return
	}
	sum := sha256.Sum256([]byte(verifier))
	access, refresh := secret(AccessTokenPrefix), secret(RefreshTokenPrefix)
	out, err := s.store.ExchangeOAuthCode(r.Context(), store.CodeExchange{
		CodeHash:    auth.HashSecret(code),
		ClientID:    client.ClientID,
		RedirectURI: redirectURI,
		Challenge:   base64.RawURLEncoding.EncodeToString(sum[:]),
	}, s.pair(access, refresh))
	if err != nil {
		s.grantFailed(w, r, client, "authorization code", err)
		return
	}
	s.issued(w, access, refresh, out)
}

func (s *Server) refresh(w http.ResponseWriter, r *http.Request, client store.OAuthClient, form map[string]string) {
	token := form["refresh_token"]
	if token == "" {
		writeError(w, http.StatusBadRequest, errInvalidRequest, "refresh_token is required")
		return
	}
	var scopes []string
	if param, asked := form["scope"]; asked {
		var err error
		if scopes, err = parseScope(param); err != nil {
			writeError(w, http.StatusBadRequest, errInvalidScope, err.Error())
			return
		}
	}
	if !wellFormed(token, RefreshTokenPrefix) {
		writeError(w, http.StatusBadRequest, errInvalidGrant, "the refresh token is invalid, expired or revoked")
		return
	}
	access, next := secret(AccessTokenPrefix), secret(RefreshTokenPrefix)
	out, err := s.store.RotateRefreshToken(r.Context(), store.RefreshExchange{
		RefreshHash: auth.HashSecret(token),
		ClientID:    client.ClientID,
		Scopes:      scopes,
	}, s.pair(access, next))
	if err != nil {
		s.grantFailed(w, r, client, "refresh token", err)
		return
	}
	s.issued(w, access, next, out)
}

func (s *Server) pair(access, refresh string) store.TokenPair {
	return store.TokenPair{AccessHash: auth.HashSecret(access), RefreshHash: auth.HashSecret(refresh), AccessTTL: s.accessTTL, RefreshTTL: s.refreshTTL}
}

func (s *Server) issued(w http.ResponseWriter, access, refresh string, out store.IssuedTokens) {
	writeJSON(w, http.StatusOK, tokenResponse{
		AccessToken:  access,
		TokenType:    "Bearer",
		ExpiresIn:    int64(s.accessTTL.Seconds()),
		RefreshToken: refresh,
		Scope:        strings.Join(out.Scopes, " "),
	})
}

// grantFailed maps a store refusal to the token endpoint's errors.
func (s *Server) grantFailed(w http.ResponseWriter, r *http.Request, client store.OAuthClient, what string, err error) {
	ctx := r.Context()
	switch {
	case store.IsOAuthReplay(err):
		// Either the client has a bug or someone else holds a copy: both
		// copies are now worthless, which is the point.
		s.log.WarnContext(ctx, "oauth "+what+" replayed: grant revoked", "client_id", client.ClientID, "ip", s.clientIP(r))
		writeError(w, http.StatusBadRequest, errInvalidGrant, "the "+what+" was already used; every token issued from it has been revoked")
	case domain.ErrorCode(err) == domain.InsufficientScope:
		writeError(w, http.StatusBadRequest, errInvalidScope, "a refresh may only ask for scopes already granted")
	case domain.ErrorCode(err) == domain.NotFound:
		writeError(w, http.StatusBadRequest, errInvalidGrant, "the "+what+" is invalid, expired or revoked")
	case domain.ErrorCode(err) == domain.Invalid:
		var de *domain.Error
		msg := "the " + what + " does not match this request"
		if errors.As(err, &de) {
			msg = de.Message
		}
		writeError(w, http.StatusBadRequest, errInvalidGrant, msg)
	default:
		s.serverError(w, r, "token", err)
	}
}

// revoke is token revocation (RFC 7009). Unknown tokens are not an error:
// the answer must not tell a guesser which tokens exist.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	form, ok := readForm(w, r)
	if !ok {
		return
	}
	token := form["token"]
	if token == "" {
		writeError(w, http.StatusBadRequest, errInvalidRequest, "token is required")
		return
	}
	client, ok := s.tokenClient(w, r, form["client_id"], false)
	if !ok {
		return
	}
	// token_type_hint is ignored: the prefix says which kind a token is.
	if wellFormed(token, AccessTokenPrefix) || wellFormed(token, RefreshTokenPrefix) {
		if err := s.store.RevokeOAuthToken(r.Context(), auth.HashSecret(token), client.ClientID); err != nil {
			s.log.ErrorContext(r.Context(), "oauth revoke", "err", err)
			writeError(w, http.StatusServiceUnavailable, errServerError, "revocation failed; try again")
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}
