package oauth

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/internal/auth"
	"switchboard/internal/store"
)

// Prefixes of the secrets this server issues, so that they are recognizable
// in leak scanners and told apart from API keys without a database lookup.
const (
	AccessTokenPrefix = auth.AccessTokenPrefix // the authenticator recognizes it

	RefreshTokenPrefix = "sbrt_"
	CodePrefix         = "sbac_"
)

// Default lifetimes.
const (
	DefaultAccessTTL  = time.Hour
	DefaultRefreshTTL = 30 * 24 * time.Hour
)

// Config configures the authorization server.
type Config struct {
	Store *store.Store
	// Issuer is the public URL of the service, exactly as clients see it
	// (scheme, host and any path prefix, no trailing slash wanted).
	Issuer string
	Log    *slog.Logger
	// AccessTTL is the access-token lifetime; DefaultAccessTTL when zero.
	AccessTTL time.Duration
	// RefreshTTL is how long a refresh token stays usable; every rotation
	// issues a new one with a fresh lifetime. DefaultRefreshTTL when zero.
	RefreshTTL time.Duration

	// RegisterPerAddress and RegisterGlobal bound dynamic registration per
	// client address and in total (per process); the defaults apply when
	// Burst is zero.
	RegisterPerAddress Rate
	RegisterGlobal     Rate
	// TrustedProxies are the reverse proxies whose X-Forwarded-For is
	// believed when counting requests per client address (see clientIP).
	TrustedProxies []netip.Prefix
	// Registry receives the server's metrics; nil keeps them private.
	Registry prometheus.Registerer

	// SessionIdle and SessionLifetime end an app session that has not been
	// used for SessionIdle, or that began SessionLifetime ago
	// (DefaultSessionIdle, DefaultSessionLifetime when zero).
	SessionIdle     time.Duration
	SessionLifetime time.Duration
	// SessionAccessTTL is the lifetime of the access tokens the app's
	// session hands out; DefaultSessionAccessTTL when zero.
	SessionAccessTTL time.Duration
}

// Server is the authorization server. It is safe for concurrent use.
type Server struct {
	store      *store.Store
	issuer     string // exactly Config.Issuer
	base       string // issuer without a trailing slash, for endpoint URLs
	basePath   string // path prefix of the issuer, for links in pages
	secure     bool   // issuer is https: Secure, __Host- cookies
	csrfCookie string
	log        *slog.Logger
	accessTTL  time.Duration
	refreshTTL time.Duration
	throttle   *throttle
	metadata   []byte

	seal           sealer
	now            func() time.Time
	registrations  *limiter
	trustedProxies []netip.Prefix
	registered     *prometheus.CounterVec // by outcome

	appRedirect      string // the app's redirect URI once RegisterApp accepted it
	sessionLimits    store.AppSessionLimits
	sessionAccessTTL time.Duration
}

// New returns a server for cfg.
func New(cfg Config) *Server {
	s := &Server{
		store:      cfg.Store,
		issuer:     cfg.Issuer,
		base:       strings.TrimRight(cfg.Issuer, "/"),
		log:        cfg.Log,
		accessTTL:  cfg.AccessTTL,
		refreshTTL: cfg.RefreshTTL,
		throttle:   newThrottle(),
		now:        time.Now,

		trustedProxies: cfg.TrustedProxies,

		sessionLimits:    store.AppSessionLimits{Idle: cfg.SessionIdle, Lifetime: cfg.SessionLifetime},
		sessionAccessTTL: cfg.SessionAccessTTL,
	}
	if s.sessionLimits.Idle <= 0 {
		s.sessionLimits.Idle = DefaultSessionIdle
	}
	if s.sessionLimits.Lifetime <= 0 {
		s.sessionLimits.Lifetime = DefaultSessionLifetime
	}
	if s.sessionAccessTTL <= 0 {
		s.sessionAccessTTL = DefaultSessionAccessTTL
	}
	perAddr, global := cfg.RegisterPerAddress, cfg.RegisterGlobal
	if perAddr.Burst <= 0 || perAddr.Every <= 0 {
		perAddr = DefaultRegisterPerAddress
	}
	if global.Burst <= 0 || global.Every <= 0 {
		global = DefaultRegisterGlobal
	}
	s.registrations = newLimiter(perAddr, global)
	s.registered = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "switchboard_oauth_registrations_total",
		Help: "Dynamic client registrations by outcome: registered, invalid (refused metadata), rate_limited, error.",
	}, []string{"outcome"})
	for _, o := range []string{outcomeRegistered, outcomeInvalid, outcomeRateLimited, outcomeError} {
		s.registered.WithLabelValues(o)
	}
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(s.registered)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.accessTTL <= 0 {
		s.accessTTL = DefaultAccessTTL
	}
	if s.refreshTTL <= 0 {
		s.refreshTTL = DefaultRefreshTTL
	}
	if u, err := url.Parse(s.base); err == nil {
		s.basePath = strings.TrimRight(u.Path, "/")
		s.secure = u.Scheme == "https"
	}
	s.csrfCookie = "sb_csrf"
	if s.secure {
		// __Host-: Secure, Path=/, no Domain, so a sibling subdomain cannot plant it.
		s.csrfCookie = "__Host-sb_csrf"
	}
	s.metadata = s.buildMetadata()
	return s
}

// Handler serves discovery, registration, the authorize, sign-in and consent
// pages, the token endpoint and revocation, and the app's sign-in and
// session (AppSignInPath, AppRedirectPath, AppSessionPath and
// AppSessionTokenPath: the caller mounts those paths too).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	// Machine endpoints: no cookies are read there, so any origin may call
	// them from a browser (single-page and browser-extension clients).
	mux.Handle("GET /.well-known/oauth-authorization-server", cors(http.HandlerFunc(s.discovery)))
	mux.Handle("POST /api/v1/oauth/register", cors(http.HandlerFunc(s.register)))
	mux.Handle("POST /api/v1/oauth/token", cors(http.HandlerFunc(s.token)))
	mux.Handle("POST /api/v1/oauth/revoke", cors(http.HandlerFunc(s.revoke)))
	for _, p := range []string{"/.well-known/oauth-authorization-server", "/api/v1/oauth/register", "/api/v1/oauth/token", "/api/v1/oauth/revoke"} {
		mux.Handle("OPTIONS "+p, cors(http.HandlerFunc(preflight)))
	}

	// Pages for people.
	mux.HandleFunc("GET /oauth/authorize", s.textOnly(s.authorize))
	mux.HandleFunc("POST /oauth/login", s.textOnly(s.login))
	mux.HandleFunc("GET /oauth/consent", s.textOnly(s.consentPage))
	mux.HandleFunc("POST /oauth/consent", s.textOnly(s.consent))

	// The app's sign-in and session (session.go): same-origin only, no CORS.
	mux.HandleFunc("GET "+AppSignInPath, s.appSignIn)
	mux.HandleFunc("GET "+AppRedirectPath, s.appCallback)
	mux.HandleFunc("POST "+AppSessionTokenPath, s.sessionToken)
	mux.HandleFunc("DELETE "+AppSessionPath, s.sessionEnd)
	return mux
}

// textOnly answers a page's request whose query, or form, holds the NUL
// character with the error page (400) before h reads any of it (nulParam).
func (s *Server) textOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		values := r.URL.Query()
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, formBodyLimit)
			if err := r.ParseForm(); err != nil {
				s.errorPage(w, r, http.StatusBadRequest, "Something is wrong", "The form could not be read.")
				return
			}
			values = r.Form
		}
		if name, found := nulParam(values); found {
			s.errorPage(w, r, http.StatusBadRequest, "Something is wrong", "The request could not be read: "+nulMessage(name)+".")
			return
		}
		h(w, r)
	}
}

func cors(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		h.ServeHTTP(w, r)
	})
}

func preflight(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "GET, POST")
	h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization")
	h.Set("Access-Control-Max-Age", "86400")
	w.WriteHeader(http.StatusNoContent)
}

// secret returns prefix followed by 256 random bits, base64url.
func secret(prefix string) string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand panics rather than return short)
	return prefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// secretLen is the length of an unprefixed secret.
const secretLen = 43

// wellFormed reports whether v looks like a secret this server made, so that
// junk never reaches the database.
func wellFormed(v, prefix string) bool {
	if !strings.HasPrefix(v, prefix) || len(v) != len(prefix)+secretLen {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(v[len(prefix):])
	return err == nil
}

// AppPath is where the Switchboard app is served, and AppRedirectPath where
// it receives its authorization codes, both under the issuer.
const (
	AppPath         = "/app/"
	AppRedirectPath = "/app/callback"
)

// RegisterApp registers the Switchboard app as a first-party public client
// (store.AppClientID) whose only redirect URI is the issuer's
// AppRedirectPath. Plain http is allowed only on a loopback host, as for
// native apps (RFC 8252): elsewhere the code would cross the network in
// clear, so the app is not registered and the reason is returned.
func (s *Server) RegisterApp(ctx context.Context) (redirectURI, refused string, err error) {
	u, err := url.Parse(s.base)
	if err != nil || u.Host == "" {
		return "", fmt.Sprintf("the public URL %q is not an absolute URL", s.issuer), nil
	}
	if u.Scheme != "https" && !isLoopback(u.Hostname()) {
		return "", "the public URL is plain http on a host that is not loopback; serve it over https (--public-url https://...) to sign in to the app", nil
	}
	redirectURI = s.base + AppRedirectPath
	c := store.OAuthClient{ClientID: store.AppClientID, Name: "Switchboard", RedirectURIs: []string{redirectURI}}
	if err := s.store.EnsureOAuthClient(ctx, &c); err != nil {
		return "", "", err
	}
	s.appRedirect = redirectURI
	return redirectURI, "", nil
}

// isLoopback reports whether host is localhost or a loopback address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}
