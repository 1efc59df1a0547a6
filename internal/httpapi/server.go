package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/internal/auth"
	"switchboard/internal/calls"
	"switchboard/internal/contacts"
	"switchboard/internal/inbox"
	"switchboard/internal/search"
	"switchboard/internal/sms"
	"switchboard/internal/stream"
	"switchboard/internal/team"
	"switchboard/internal/users"
	"switchboard/internal/webhooks"
)

// Prefix is where the public API lives.
const Prefix = "/api/public/v1"

// Database is all the HTTP layer asks of the database itself (a
// *store.Store); everything else goes through the services.
type Database interface {
	// Ping reports whether the database answers (GET /readyz).
	Ping(ctx context.Context) error
	// ReadScope marks ctx as one request: the cached reads it makes check
	// the database's version once.
	ReadScope(ctx context.Context) context.Context
	// Unavailable reports whether err means the database could not be
	// reached: such a failure is answered 503 unavailable (retry), not 500.
	Unavailable(err error) bool
}

// Config is what the HTTP layer needs from the rest of the program. Store,
// Auth, SMS, Users and Webhooks are required.
type Config struct {
	Store Database
	Auth  *auth.Authenticator
	Log   *slog.Logger
	// Registry receives the HTTP metrics; nil makes a private one. They are
	// not served here: the public listener must not show them (the caller
	// serves them on a private listener).
	Registry *prometheus.Registry
	SMS      *sms.Service
	Users    *users.Service
	// Calls serves the call history; nil leaves its routes out.
	Calls *calls.Service
	// Webhooks serves the webhook endpoints (required).
	Webhooks *webhooks.Service
	// Inbox serves the shared inbox (required).
	Inbox *inbox.Service
	// Search serves GET /search; nil leaves the route out.
	Search *search.Service
	// Team serves teammates and notification preferences; nil leaves
	// their routes out.
	Team *team.Service
	// Contacts serves the team address book (required).
	Contacts *contacts.Service
	// Media serves hosted attachments under /media/.
	Media http.Handler
	// CarrierHooks serves the carrier driver's callbacks under /carrier/.
	CarrierHooks http.Handler
	// CarrierStates, when set, gives this node's carrier connections and
	// their states for GET /readyz's detail.
	CarrierStates func() any
	// OAuth serves the authorization server: discovery, /oauth/ pages and
	// /api/v1/oauth/ endpoints.
	OAuth http.Handler
	// App serves the Switchboard app under /app/ (internal/webapp); nil
	// leaves it out.
	App http.Handler
	// Docs serves the API reference at /api/docs (internal/apidocs); nil
	// leaves it out.
	Docs http.Handler
	// Events serves GET /events (internal/stream); nil leaves the route
	// out. EventRetention is how long events are kept (resuming after an
	// older one is a reset); EventTiming the stream's keepalive, recheck
	// and write timings (zero: the defaults).
	Events         *stream.Hub
	EventRetention time.Duration
	EventTiming    stream.ServeConfig
	// BodyBudget is how many bytes of large request bodies may be in flight
	// at once, and BodyWait how long a request waits for room (budget.go);
	// zero means 256 MiB and 30 s.
	BodyBudget int64
	BodyWait   time.Duration
}

// Server routes requests to handlers.
type Server struct {
	store   Database
	auth    *auth.Authenticator
	log     *slog.Logger
	mux     *http.ServeMux
	metrics *metrics
	handler http.Handler

	sms           *sms.Service
	users         *users.Service
	calls         *calls.Service
	webhooks      *webhooks.Service
	inbox         *inbox.Service
	search        *search.Service
	team          *team.Service
	contacts      *contacts.Service
	media         http.Handler
	carrierHooks  http.Handler
	carrierStates func() any
	oauth         http.Handler
	app           http.Handler
	docs          http.Handler
	bodies        *bodyBudget
	events        *stream.Hub
	eventCfg      stream.ServeConfig
	eventKeep     time.Duration
	// apiRoutes is the public API's route table, for the test that holds
	// it and the OpenAPI document to each other.
	apiRoutes []apiRoute
}

type apiRoute struct {
	method, path string
	scope        auth.Scope
	// role is the role permission the table checks (apiRole); empty where
	// the domain code checks one or none applies.
	role string
	// query is the query parameters the route takes.
	query []string
}

// New builds the server and its route table.
func New(cfg Config) *Server {
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	s := &Server{
		store:   cfg.Store,
		auth:    cfg.Auth,
		log:     cfg.Log,
		mux:     http.NewServeMux(),
		metrics: newMetrics(reg),

		sms:           cfg.SMS,
		users:         cfg.Users,
		calls:         cfg.Calls,
		webhooks:      cfg.Webhooks,
		inbox:         cfg.Inbox,
		search:        cfg.Search,
		team:          cfg.Team,
		contacts:      cfg.Contacts,
		media:         cfg.Media,
		carrierHooks:  cfg.CarrierHooks,
		carrierStates: cfg.CarrierStates,
		oauth:         cfg.OAuth,
		app:           cfg.App,
		docs:          cfg.Docs,
		bodies:        newBodyBudget(cfg.BodyBudget, cfg.BodyWait),
		events:        cfg.Events,
		eventCfg:      cfg.EventTiming,
		eventKeep:     cfg.EventRetention,
	}
	s.routes()
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "switchboard_http_large_body_bytes",
		Help: "Bytes of large request bodies (over 1 MiB, or of unknown length and over 1 MiB so far: counted as the largest allowed) being received or handled now, out of a fixed budget.",
	}, func() float64 { return float64(s.bodies.held.Load()) }))
	bodyWait := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "switchboard_http_large_body_wait_seconds",
		Help:    "How long large request bodies waited for room in the budget (smallest first), including those that gave up with 503.",
		Buckets: []float64{0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30},
	})
	reg.MustRegister(bodyWait, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "switchboard_http_large_body_waiting",
		Help: "Large request bodies waiting for room in the budget now.",
	}, func() float64 { return float64(s.bodies.waiting()) }))
	s.bodies.observe = func(d time.Duration) { bodyWait.Observe(d.Seconds()) }
	s.handler = s.withRequestID(s.withRecover(s.withAccessLog(s.mux)))
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// unmatched answers every request no route claimed, in the error envelope:
// 405 with Allow when the path exists under another method, 404 otherwise.
func (s *Server) unmatched(w http.ResponseWriter, r *http.Request) error {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/" && pattern != "" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		return errMethod(r.Method, allowed)
	}
	return errRoute(r)
}
