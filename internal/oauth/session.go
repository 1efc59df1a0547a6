package oauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/store"
)

// The app's session: a token-mediating backend ("OAuth 2.0 for
// Browser-Based Applications", RFC 10017). The server is the app's OAuth
// client: it signs the person in (authorization code with PKCE, the
// verifier kept in an HttpOnly cookie), keeps the refresh token (its hash,
// in app_sessions) and gives the browser only an HttpOnly, SameSite=Strict
// cookie naming the session. Through it the app's script asks for
// short-lived access tokens, which it keeps in memory; no token is ever
// stored by the browser or readable by script outside that exchange.
// docs/decisions.md, "The app's session", records the threats.

// Default limits of an app session, and the lifetime of the access tokens
// it hands out.
const (
	DefaultSessionIdle      = 7 * 24 * time.Hour
	DefaultSessionLifetime  = 30 * 24 * time.Hour
	DefaultSessionAccessTTL = 15 * time.Minute
)

// Addresses of the app's sign-in and session, under the issuer. The cookie
// is scoped to AppPath, so these live under it.
const (
	AppSignInPath       = "/app/signin"
	AppSignedOutPath    = "/app/signed-out"
	AppSessionPath      = "/app/session"
	AppSessionTokenPath = "/app/session/token"
)

// SessionHeader must be on every request to the session endpoints (with
// the value "1"): a page of another origin cannot send it without a CORS
// preflight, which the server never approves.
const SessionHeader = "X-Switchboard-App"

// SessionPrefix starts the secret an app session's cookie holds.
const SessionPrefix = "sbas_"

// sessionCookies names the app's cookies: the session, and the sign-in in
// progress. Over https they carry the __Secure- prefix, so that a browser
// takes them only from a secure origin.
func (s *Server) sessionCookieName() string {
	if s.secure {
		return "__Secure-switchboard-session"
	}
	return "switchboard-session"
}

func (s *Server) signInCookieName() string {
	if s.secure {
		return "__Secure-switchboard-signin"
	}
	return "switchboard-signin"
}

// appCookiePath is the app's path as the browser sees it.
func (s *Server) appCookiePath() string { return s.basePath + AppPath }

func (s *Server) setAppCookie(w http.ResponseWriter, name, value string, maxAge time.Duration, same http.SameSite) {
	c := &http.Cookie{Name: name, Value: value, Path: s.appCookiePath(), HttpOnly: true, Secure: s.secure, SameSite: same}
	if maxAge > 0 {
		c.MaxAge = int(maxAge / time.Second)
	} else {
		c.MaxAge = -1 // Max-Age=0: delete it now
	}
	http.SetCookie(w, c)
}

// appSignIn starts the app's sign-in: a new PKCE verifier in a short-lived
// cookie, and the browser sent to the authorization endpoint for every
// scope (the person's role bounds them). return_to, an address inside the
// app, is where the browser lands once signed in.
func (s *Server) appSignIn(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	if s.appRedirect == "" {
		s.errorPage(w, r, http.StatusServiceUnavailable, "The app is not available", "The Switchboard app cannot sign anyone in on this server; the operator's log says why.")
		return
	}
	verifier := secret("")
	returnTo := s.appReturn(r.URL.Query().Get("return_to"))
	s.setAppCookie(w, s.signInCookieName(), verifier+"."+base64.RawURLEncoding.EncodeToString([]byte(returnTo)), store.OAuthRequestTTL, http.SameSiteLaxMode)
	q := url.Values{
		"response_type":         {"code"},
		"client_id":             {store.AppClientID},
		"redirect_uri":          {s.appRedirect},
		"scope":                 {strings.Join(auth.Strings(auth.AllScopes), " ")},
		"state":                 {signInState(verifier)},
		"code_challenge":        {s256(verifier)},
		"code_challenge_method": {"S256"},
	}
	http.Redirect(w, r, s.basePath+"/oauth/authorize?"+strings.ReplaceAll(q.Encode(), "+", "%20"), http.StatusSeeOther)
}

// appReturn keeps an address inside the app (path and query only) and
// answers the inbox for anything else, so the sign-in is no open redirect.
func (s *Server) appReturn(raw string) string {
	def := s.basePath + "/app/inbox"
	u, err := url.Parse(raw)
	if raw == "" || err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || strings.Contains(raw, "\\") ||
		!strings.HasPrefix(u.Path, s.appCookiePath()) || strings.Contains(u.Path, "/../") {
		return def
	}
	// Not back into the sign-in itself.
	if p := strings.TrimPrefix(u.Path, s.basePath); p == AppSignInPath || p == AppRedirectPath || p == AppSessionPath || strings.HasPrefix(p, AppSessionPath+"/") {
		return def
	}
	u.Fragment = ""
	return u.RequestURI()
}

// signInState is the state parameter of a sign-in: derived from the
// verifier, so that the cookie alone holds both, and it tells nothing of it.
func signInState(verifier string) string {
	sum := sha256.Sum256([]byte("switchboard-app-state:" + verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// appCallback finishes the sign-in: the state must be this browser's, the
// code is redeemed with the verifier from its cookie, and the session
// begins (replacing this browser's earlier one). Failures go to the app's
// signed-out screen with a reason; the code never reaches the app's script.
func (s *Server) appCallback(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	w.Header().Set("Referrer-Policy", "no-referrer")
	ctx := r.Context()
	q := r.URL.Query()
	failed := func(reason string) {
		http.Redirect(w, r, s.basePath+AppSignedOutPath+"?reason="+reason, http.StatusSeeOther)
	}
	c, _ := r.Cookie(s.signInCookieName())
	s.setAppCookie(w, s.signInCookieName(), "", 0, http.SameSiteLaxMode) // one use
	if s.appRedirect == "" {
		failed("failed")
		return
	}
	var verifier, returnTo string
	if c != nil {
		v, ret, _ := strings.Cut(c.Value, ".")
		if b, err := base64.RawURLEncoding.DecodeString(ret); err == nil && wellFormed(v, "") {
			verifier, returnTo = v, s.appReturn(string(b))
		}
	}
	switch {
	case q.Get("error") == errAccessDenied:
		failed("cancelled")
		return
	case q.Get("error") != "":
		failed("failed")
		return
	case verifier == "" || subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(signInState(verifier))) != 1:
		// Not the sign-in this browser started (or its cookie expired):
		// what a forged callback looks like, so it is never redeemed. A
		// browser already signed in (back to an old callback) goes to the app.
		if old, err := r.Cookie(s.sessionCookieName()); err == nil && wellFormed(old.Value, SessionPrefix) && verifier == "" {
			http.Redirect(w, r, s.basePath+"/app/inbox", http.StatusSeeOther)
			return
		}
		failed("stale")
		return
	case !wellFormed(q.Get("code"), CodePrefix):
		failed("failed")
		return
	}
	var replaces []byte
	if old, err := r.Cookie(s.sessionCookieName()); err == nil && wellFormed(old.Value, SessionPrefix) {
		replaces = auth.HashSecret(old.Value)
	}
	session, refresh := secret(SessionPrefix), secret(RefreshTokenPrefix)
	sess, err := s.store.StartAppSession(ctx, store.CodeExchange{
		CodeHash:    auth.HashSecret(q.Get("code")),
		ClientID:    store.AppClientID,
		RedirectURI: s.appRedirect,
		Challenge:   s256(verifier),
	}, store.TokenPair{RefreshHash: auth.HashSecret(refresh), RefreshTTL: s.sessionLimits.Lifetime}, auth.HashSecret(session), replaces)
	if err != nil {
		s.log.WarnContext(ctx, "app sign-in failed", "err", err, "ip", s.clientIP(r))
		failed("failed")
		return
	}
	s.log.InfoContext(ctx, "app session started", "session_id", sess.ID, "grant_id", sess.GrantID, "account_id", sess.AccountID, "user_id", sess.UserID)
	s.setAppCookie(w, s.sessionCookieName(), session, s.sessionLimits.Lifetime, http.SameSiteStrictMode)
	http.Redirect(w, r, returnTo, http.StatusSeeOther)
}

// sessionTokenResponse is an access token handed out through the session.
// Session is the session's grant: a tab that sees it change learns that
// the browser signed in again, perhaps as someone else.
type sessionTokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	Scope       string `json:"scope"`
	Session     int64  `json:"session"`
}

// sessionEnded is the answer for a session that cannot be used: the
// cookie is dropped and the reason given, for the app to say.
type sessionEnded struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
	Reason      string `json:"reason"`
}

var endedWords = map[string]string{
	"unknown": "You are not signed in.",
	"idle":    "Your session ended because it was not used for a while.",
	"expired": "Your session reached its time limit.",
	"revoked": "Your session was ended: signed out elsewhere, or by an administrator.",
}

// sessionToken hands the app a new access token through its session.
func (s *Server) sessionToken(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	if !s.fromApp(w, r) {
		return
	}
	c, err := r.Cookie(s.sessionCookieName())
	if err != nil || !wellFormed(c.Value, SessionPrefix) {
		s.endedAnswer(w, "unknown")
		return
	}
	access, refresh := secret(AccessTokenPrefix), secret(RefreshTokenPrefix)
	sess, issued, err := s.store.RefreshAppSession(r.Context(), auth.HashSecret(c.Value), s.sessionLimits, store.TokenPair{
		AccessHash: auth.HashSecret(access), RefreshHash: auth.HashSecret(refresh),
		AccessTTL: s.sessionAccessTTL, RefreshTTL: s.sessionLimits.Lifetime,
	})
	if end := store.AppSessionEnd(err); end != "" {
		s.endedAnswer(w, end)
		return
	}
	if err != nil {
		s.serverError(w, r, "app session", err)
		return
	}
	writeJSON(w, http.StatusOK, sessionTokenResponse{
		AccessToken: access,
		TokenType:   "Bearer",
		ExpiresIn:   int64(s.sessionAccessTTL / time.Second),
		Scope:       strings.Join(issued.Scopes, " "),
		Session:     sess.GrantID,
	})
}

func (s *Server) endedAnswer(w http.ResponseWriter, reason string) {
	s.setAppCookie(w, s.sessionCookieName(), "", 0, http.SameSiteStrictMode)
	noStore(w)
	writeJSON(w, http.StatusUnauthorized, sessionEnded{Error: "login_required", Description: endedWords[reason], Reason: reason})
}

// sessionEnd signs out: the session's grant is revoked with every token of
// it (the other tabs' access tokens too) and the cookie dropped.
func (s *Server) sessionEnd(w http.ResponseWriter, r *http.Request) {
	noStore(w)
	if !s.fromApp(w, r) {
		return
	}
	if c, err := r.Cookie(s.sessionCookieName()); err == nil && wellFormed(c.Value, SessionPrefix) {
		if err := s.store.EndAppSession(r.Context(), auth.HashSecret(c.Value)); err != nil {
			s.log.ErrorContext(r.Context(), "app sign-out", "err", err)
			writeError(w, http.StatusServiceUnavailable, errServerError, "signing out failed; try again")
			return
		}
	}
	s.setAppCookie(w, s.sessionCookieName(), "", 0, http.SameSiteStrictMode)
	w.WriteHeader(http.StatusNoContent)
}

// fromApp refuses a request to a session endpoint that the app's own page
// did not make: it must carry SessionHeader, and its Origin (or, without
// one, its Sec-Fetch-Site) must be the server's own. SameSite=Strict
// already keeps the cookie off other sites' requests; these checks hold
// where it does not (an older browser, a sibling subdomain, which is the
// same site).
func (s *Server) fromApp(w http.ResponseWriter, r *http.Request) bool {
	refuse := func(why string) bool {
		writeError(w, http.StatusForbidden, errInvalidRequest, why)
		return false
	}
	if r.Header.Get(SessionHeader) != "1" {
		return refuse("the session is the app's own: send " + SessionHeader + ": 1 from its page")
	}
	site := r.Header.Get("Sec-Fetch-Site")
	if site != "" && site != "same-origin" {
		return refuse("the session answers only the app's own origin")
	}
	o := r.Header.Get("Origin")
	if o == "" && site == "" {
		return refuse("the request names no origin: the session answers only the app's own page")
	}
	if o != "" && o != origin(s.base) {
		return refuse("the session answers only the app's own origin")
	}
	return true
}
