package oauth

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"switchboard/internal/auth"
	"switchboard/internal/domain"
	"switchboard/internal/store"
)

const (
	formBodyLimit = 16 << 10
	maxStateLen   = 1024
)

// challengeRE is an S256 code challenge: base64url of 32 bytes, unpadded.
var challengeRE = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// authorize is the authorization endpoint. The client and redirect URI are
// checked first: until both are known good, nothing redirects (an open
// redirector otherwise). After that, errors go back to the client.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	clientID, redirectURI := q.Get("client_id"), q.Get("redirect_uri")
	if clientID == "" || len(q["client_id"]) > 1 {
		s.errorPage(w, r, http.StatusBadRequest, "Unknown application", "This sign-in link does not name an application registered with this server.")
		return
	}
	client, err := s.store.OAuthClient(ctx, clientID)
	if domain.IsNotFound(err) {
		s.errorPage(w, r, http.StatusBadRequest, "Unknown application", "This sign-in link names an application that is not registered with this server.")
		return
	}
	if err != nil {
		s.pageServerError(w, r, "authorize", err)
		return
	}
	if redirectURI == "" || len(q["redirect_uri"]) > 1 || !slices.Contains(client.RedirectURIs, redirectURI) {
		s.errorPage(w, r, http.StatusBadRequest, "Wrong return address", "The application asked to send you back to an address it did not register, so this server will not send you there.")
		return
	}
	// The app's return address derives from the operator's --public-url,
	// so it needs no entry in the allow list.
	if u, _ := url.Parse(redirectURI); u == nil || (client.ClientID != store.AppClientID && !s.hostAllowed(r, u.Hostname())) {
		s.errorPage(w, r, http.StatusBadRequest, "Return address not allowed", "The operator of this server no longer allows the application's return address.")
		return
	}

	state := q.Get("state")
	fail := func(code, description string) {
		http.Redirect(w, r, s.clientRedirect(redirectURI, "error", code, "error_description", description, "state", state), http.StatusFound)
	}
	for name, v := range q {
		if len(v) > 1 {
			fail(errInvalidRequest, name+" is repeated")
			return
		}
	}
	challenge, method := q.Get("code_challenge"), q.Get("code_challenge_method")
	switch rt := q.Get("response_type"); {
	case rt == "":
		fail(errInvalidRequest, "response_type is required")
		return
	case rt != "code":
		fail(errUnsupportedResponseType, "only response_type=code is supported")
		return
	case len(state) > maxStateLen:
		fail(errInvalidRequest, fmt.Sprintf("state is longer than %d characters", maxStateLen))
		return
	case challenge == "" || method == "":
		fail(errInvalidRequest, "PKCE is required: send code_challenge and code_challenge_method=S256")
		return
	case method != "S256":
		fail(errInvalidRequest, "code_challenge_method must be S256")
		return
	case !challengeRE.MatchString(challenge):
		fail(errInvalidRequest, "code_challenge must be the unpadded base64url SHA-256 of the code verifier (43 characters)")
		return
	}
	scopes, err := parseScope(q.Get("scope"))
	if err != nil {
		fail(errInvalidScope, err.Error())
		return
	}

	// Nothing is stored until the person signs in (see seal.go).
	csrf := s.csrfToken(w, r)
	sealed, err := s.sealPending(ctx, pendingAuth{
		ClientID:    client.ClientID,
		RedirectURI: redirectURI,
		Scopes:      scopes,
		State:       state,
		Challenge:   challenge,
		CSRFHash:    auth.HashSecret(csrf),
		Expires:     s.now().Add(store.OAuthRequestTTL).Unix(),
	})
	if err != nil {
		s.pageServerError(w, r, "authorize", err)
		return
	}
	s.page(w, r, http.StatusOK, "login", s.loginData(client, sealed, csrf, "", ""), redirectURI)
}

func (s *Server) loginData(c store.OAuthClient, reqID, csrf, username, problem string) pageData {
	d := pageData{Title: "Sign in", ClientName: c.Name, Action: s.basePath + "/oauth/login",
		Request: reqID, CSRF: csrf, Username: username, Error: problem}
	if c.ClientID == store.AppClientID {
		// The app is Switchboard itself: signing in to it is signing in to
		// Switchboard, with no application asking for access.
		d.Heading, d.FirstParty = "Sign in to Switchboard", true
	}
	return d
}

// login checks the person's password for the sealed request the sign-in
// form carries and, only then, stores the request (signed in) for consent.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sealed, p, client, csrf, ok := s.sealedRequest(w, r)
	if !ok {
		return
	}
	username, password := strings.TrimSpace(r.PostForm.Get("username")), r.PostForm.Get("password")
	ip := s.clientIP(r)
	if wait := s.throttle.begin(username, ip); wait > 0 {
		secs := int((wait + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		s.page(w, r, http.StatusTooManyRequests, "login",
			s.loginData(client, sealed, csrf, username, fmt.Sprintf("Too many failed attempts. Wait %d seconds and try again.", secs)), p.RedirectURI)
		return
	}
	var user domain.User
	if username != "" {
		u, err := s.store.UserByUsername(ctx, username)
		if err != nil && !domain.IsNotFound(err) {
			s.pageServerError(w, r, "sign in", err)
			return
		}
		user = u
	}
	// CheckPassword costs one bcrypt comparison even for an unknown user or
	// one without a password, so timing does not tell whether a name exists.
	// A disabled user is refused like a wrong password, after the same
	// comparison, so the page tells no one who is disabled.
	if !auth.CheckPassword(user.PasswordHash, password) || user.ID == 0 || user.Disabled {
		// Already counted by begin.
		s.log.InfoContext(ctx, "oauth sign-in failed", "ip", ip, "client_id", client.ClientID)
		s.page(w, r, http.StatusUnauthorized, "login", s.loginData(client, sealed, csrf, username, "Wrong username or password."), p.RedirectURI)
		return
	}
	s.throttle.succeed(username, ip)
	reqID := secret("")
	req := store.OAuthRequest{
		Hash:          auth.HashSecret(reqID),
		ClientID:      p.ClientID,
		RedirectURI:   p.RedirectURI,
		Scopes:        p.Scopes,
		State:         p.State,
		CodeChallenge: p.Challenge,
		CSRFHash:      p.CSRFHash,
		UserID:        user.ID,
		ExpiresAt:     time.Unix(p.Expires, 0), // signing in does not buy more time
	}
	if err := s.store.CreateOAuthRequest(ctx, &req); err != nil {
		if domain.IsNotFound(err) {
			s.expired(w, r)
			return
		}
		s.pageServerError(w, r, "sign in", err)
		return
	}
	// Consent is implied for the first-party app: it is this server's own
	// screen, and the person's role still bounds every request it makes.
	if client.ClientID == store.AppClientID {
		location, err := s.approve(r, req, client)
		if err != nil {
			s.decisionFailed(w, r, err)
			return
		}
		redirectToClient(w, r, location)
		return
	}
	http.Redirect(w, r, s.basePath+"/oauth/consent?request="+url.QueryEscape(reqID), http.StatusSeeOther)
}

// approve grants what req asks and returns where to send the browser: the
// client's redirect URI with the code.
func (s *Server) approve(r *http.Request, req store.OAuthRequest, client store.OAuthClient) (string, error) {
	ctx := r.Context()
	code := secret(CodePrefix)
	done, g, err := s.store.ApproveOAuthRequest(ctx, req.Hash, auth.HashSecret(code))
	if err != nil {
		return "", err
	}
	s.log.InfoContext(ctx, "oauth grant approved", "grant_id", g.ID, "account_id", g.AccountID, "user_id", g.UserID,
		"client_id", client.ClientID, "scopes", strings.Join(g.Scopes, " "))
	return s.clientRedirect(done.RedirectURI, "code", code, "state", done.State), nil
}

// redirectToClient sends the browser back to the client: the code in the
// address must be neither cached nor sent on as a referrer.
func redirectToClient(w http.ResponseWriter, r *http.Request, location string) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, location, http.StatusSeeOther)
}

// sealedRequest opens the sealed request a sign-in form posts and checks
// that this browser started it, as pendingRequest does for stored ones. On
// failure it has written the answer and returns ok false.
func (s *Server) sealedRequest(w http.ResponseWriter, r *http.Request) (sealed string, p pendingAuth, client store.OAuthClient, csrf string, ok bool) {
	ctx := r.Context()
	r.Body = http.MaxBytesReader(w, r.Body, formBodyLimit)
	if err := r.ParseForm(); err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "Something is wrong", "The form could not be read.")
		return
	}
	sealed = r.PostForm.Get("request")
	p, err := s.openPending(ctx, sealed, s.now())
	if errors.Is(err, errNotPending) {
		s.expired(w, r)
		return
	}
	if err != nil {
		s.pageServerError(w, r, "open authorization request", err)
		return
	}
	cookie, _ := r.Cookie(s.csrfCookie)
	if cookie == nil || subtle.ConstantTimeCompare(auth.HashSecret(cookie.Value), p.CSRFHash) != 1 ||
		subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf_token")), []byte(cookie.Value)) != 1 {
		s.csrfRefused(w, r)
		return
	}
	// The client may have been deleted (pruned, or by the operator) since.
	client, err = s.store.OAuthClient(ctx, p.ClientID)
	if domain.IsNotFound(err) {
		s.expired(w, r)
		return
	}
	if err != nil {
		s.pageServerError(w, r, "load oauth client", err)
		return
	}
	return sealed, p, client, cookie.Value, true
}

// consentPage shows what the client asks for, to the browser that signed in.
func (s *Server) consentPage(w http.ResponseWriter, r *http.Request) {
	reqID, req, client, csrf, ok := s.pendingRequest(w, r, false)
	if !ok {
		return
	}
	if req.UserID == 0 {
		s.errorPage(w, r, http.StatusForbidden, "Sign in first", "Sign in before deciding what this application may do.")
		return
	}
	data := pageData{Title: "Allow access?", ClientName: client.Name, RedirectHost: hostOf(req.RedirectURI),
		Scopes: describeScopes(req.Scopes), Action: s.basePath + "/oauth/consent", Request: reqID, CSRF: csrf}
	s.page(w, r, http.StatusOK, "consent", data, req.RedirectURI)
}

// consent records the decision and sends the browser back to the client.
func (s *Server) consent(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	_, req, client, _, ok := s.pendingRequest(w, r, true)
	if !ok {
		return
	}
	if req.UserID == 0 {
		s.errorPage(w, r, http.StatusForbidden, "Sign in first", "Sign in before deciding what this application may do.")
		return
	}
	var location string
	switch r.PostForm.Get("decision") {
	case "approve":
		var err error
		if location, err = s.approve(r, req, client); err != nil {
			s.decisionFailed(w, r, err)
			return
		}
	case "deny":
		done, err := s.store.DenyOAuthRequest(ctx, req.Hash)
		if err != nil {
			s.decisionFailed(w, r, err)
			return
		}
		location = s.clientRedirect(done.RedirectURI, "error", errAccessDenied, "error_description", "the person declined to grant access", "state", done.State)
	default:
		s.errorPage(w, r, http.StatusBadRequest, "No decision", "Choose Allow or Deny.")
		return
	}
	redirectToClient(w, r, location)
}

func (s *Server) decisionFailed(w http.ResponseWriter, r *http.Request, err error) {
	switch domain.ErrorCode(err) {
	case domain.NotFound:
		s.expired(w, r)
	case domain.PermissionDenied:
		s.errorPage(w, r, http.StatusForbidden, "Sign in first", "Sign in before deciding what this application may do.")
	default:
		s.pageServerError(w, r, "consent", err)
	}
}

// pendingRequest loads the request a page or form names and checks that this
// browser started it: its CSRF cookie must hash to the request's, and on a
// form post (withField) the form's csrf_token must equal the cookie. On
// failure it has written the answer and returns ok false.
func (s *Server) pendingRequest(w http.ResponseWriter, r *http.Request, withField bool) (reqID string, req store.OAuthRequest, client store.OAuthClient, csrf string, ok bool) {
	ctx := r.Context()
	if withField {
		r.Body = http.MaxBytesReader(w, r.Body, formBodyLimit)
		if err := r.ParseForm(); err != nil {
			s.errorPage(w, r, http.StatusBadRequest, "Something is wrong", "The form could not be read.")
			return
		}
		reqID = r.PostForm.Get("request")
	} else {
		reqID = r.URL.Query().Get("request")
	}
	if !wellFormed(reqID, "") {
		if _, err := s.openPending(ctx, reqID, s.now()); err == nil {
			// The sign-in form's request, posted to consent: nobody has
			// signed in for it.
			s.errorPage(w, r, http.StatusForbidden, "Sign in first", "Sign in before deciding what this application may do.")
			return
		}
		s.expired(w, r)
		return
	}
	req, err := s.store.OAuthRequest(ctx, auth.HashSecret(reqID))
	if domain.IsNotFound(err) {
		s.expired(w, r)
		return
	}
	if err != nil {
		s.pageServerError(w, r, "load authorization request", err)
		return
	}
	cookie, _ := r.Cookie(s.csrfCookie)
	valid := cookie != nil && subtle.ConstantTimeCompare(auth.HashSecret(cookie.Value), req.CSRFHash) == 1
	if valid && withField {
		valid = subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf_token")), []byte(cookie.Value)) == 1
	}
	if !valid {
		s.csrfRefused(w, r)
		return
	}
	client, err = s.store.OAuthClient(ctx, req.ClientID)
	if err != nil {
		s.pageServerError(w, r, "load oauth client", err)
		return
	}
	return reqID, req, client, cookie.Value, true
}

func (s *Server) csrfRefused(w http.ResponseWriter, r *http.Request) {
	s.errorPage(w, r, http.StatusForbidden, "Request refused",
		"This page was not opened from the sign-in you started in this browser, or your browser blocked its cookie. Start again from the application.")
}

func (s *Server) expired(w http.ResponseWriter, r *http.Request) {
	s.errorPage(w, r, http.StatusBadRequest, "This sign-in has expired",
		"This sign-in link has expired or was already used.")
}

// csrfToken returns the browser's CSRF token, setting a new one when it has
// none. A browser keeps one token for its session, so two authorizations in
// two tabs do not invalidate each other; each request stores its hash.
func (s *Server) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(s.csrfCookie); err == nil && wellFormed(c.Value, "") {
		return c.Value
	}
	v := secret("")
	http.SetCookie(w, &http.Cookie{Name: s.csrfCookie, Value: v, Path: "/", HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
	return v
}

// clientRedirect appends parameters (name, value pairs; empty values left
// out) and iss (RFC 9207) to the client's redirect URI, keeping its own query
// exactly as registered.
func (s *Server) clientRedirect(redirectURI string, kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Set(kv[i], kv[i+1])
		}
	}
	v.Set("iss", s.issuer)
	sep := "?"
	if strings.Contains(redirectURI, "?") {
		sep = "&"
		if strings.HasSuffix(redirectURI, "?") || strings.HasSuffix(redirectURI, "&") {
			sep = ""
		}
	}
	return redirectURI + sep + v.Encode()
}

func (s *Server) hostAllowed(r *http.Request, host string) bool {
	ok, err := s.store.HostAllowed(r.Context(), host)
	if err != nil {
		s.log.ErrorContext(r.Context(), "oauth allowed host", "err", err)
	}
	return ok
}

func (s *Server) pageServerError(w http.ResponseWriter, r *http.Request, what string, err error) {
	s.log.ErrorContext(r.Context(), "oauth "+what, "err", err)
	s.errorPage(w, r, http.StatusInternalServerError, "Something went wrong", "Something went wrong on our side. Please try again.")
}

func (s *Server) serverError(w http.ResponseWriter, r *http.Request, what string, err error) {
	s.log.ErrorContext(r.Context(), "oauth "+what, "err", err)
	writeError(w, http.StatusInternalServerError, errServerError, "the server failed; try again")
}

// parseScope reads a space-delimited scope parameter (RFC 6749 §3.3): every
// scope must be known and at least one given. The result follows the order
// of auth.AllScopes, without duplicates.
func parseScope(param string) ([]string, error) {
	fields := strings.Fields(param)
	if len(fields) == 0 {
		return nil, errors.New("scope is required: ask for at least one scope")
	}
	for _, f := range fields {
		if !slices.Contains(auth.AllScopes, auth.Scope(f)) {
			return nil, fmt.Errorf("unknown scope %q", f)
		}
	}
	var out []string
	for _, sc := range auth.AllScopes {
		if slices.Contains(fields, string(sc)) {
			out = append(out, string(sc))
		}
	}
	return out, nil
}

func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return raw
}
