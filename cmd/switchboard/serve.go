package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"switchboard/internal/apidocs"
	"switchboard/internal/auth"
	"switchboard/internal/background"
	"switchboard/internal/blob"
	"switchboard/internal/calls"
	"switchboard/internal/carrier"
	"switchboard/internal/carrier/kannel"
	"switchboard/internal/carrier/sim"
	"switchboard/internal/carriers"
	"switchboard/internal/contacts"
	"switchboard/internal/httpapi"
	"switchboard/internal/inbox"
	"switchboard/internal/oauth"
	"switchboard/internal/search"
	"switchboard/internal/sms"
	"switchboard/internal/store"
	"switchboard/internal/stream"
	"switchboard/internal/sysmem"
	"switchboard/internal/team"
	"switchboard/internal/users"
	"switchboard/internal/webapp"
	"switchboard/internal/webhooks"
)

func cmdServe(ctx context.Context, c *cli, args []string) (err error) {
	defer func() { err = stoppedEarly(ctx, err) }()
	if err := c.parse("serve", args, c.serveFlags); err != nil {
		return err
	}
	if err := c.checkServeFlags(); err != nil {
		return err
	}
	log, flush, err := c.logger()
	if err != nil {
		return err
	}
	defer flush()
	c.log = log
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	if err := st.ClaimServing(); err != nil {
		return err
	}
	return serve(ctx, c, st, log, nil)
}

// stoppedEarly turns the cancellation of a server's start by SIGTERM or
// Ctrl-C (migrations, seeding, the first passes of background work) into
// success: stopping is what was asked, and nothing is left half done that a
// start would not finish.
func stoppedEarly(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// checkServeFlags refuses settings that cannot work before anything starts:
// a typo there would otherwise surface later as broken links or callbacks.
func (c *cli) checkServeFlags() error {
	if _, _, err := net.SplitHostPort(c.listen); err != nil {
		return usageError{fmt.Sprintf("--listen %q: want host:port, e.g. 127.0.0.1:8080", c.listen)}
	}
	if c.metricsAddr != "" {
		_, port, err := net.SplitHostPort(c.metricsAddr)
		if err != nil {
			return usageError{fmt.Sprintf("--metrics-addr %q: want host:port, e.g. 127.0.0.1:9090", c.metricsAddr)}
		}
		if c.metricsAddr == c.listen && port != "0" {
			return usageError{"--metrics-addr must differ from --listen: metrics and profiles are for the operator, not the public"}
		}
	}
	if c.publicURL != "" {
		u, err := url.Parse(c.publicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return usageError{fmt.Sprintf("--public-url %q: want an http(s) base URL such as https://sb.example.com, with no query or fragment", c.publicURL)}
		}
	}
	if c.media != "" {
		if err := blob.CheckURL(c.media); err != nil {
			return usageError{fmt.Sprintf("--media: %v", err)}
		}
	}
	if c.trustedProxyList != "" {
		p, err := oauth.ParseTrustedProxies(c.trustedProxyList)
		if err != nil {
			return usageError{fmt.Sprintf("--trusted-proxies %q: want addresses or CIDR prefixes separated by commas, e.g. 127.0.0.1,10.0.0.0/8: %v", c.trustedProxyList, err)}
		}
		c.trustedProxies = p
	}
	if c.dbOptions.MaxConns < 0 {
		return usageError{fmt.Sprintf("--db-pool %d: want a number of connections, or 0 for 4 per core", c.dbOptions.MaxConns)}
	}
	if c.dbStatementTimeout < 0 || c.dbConnLifetime < 0 {
		return usageError{"--db-statement-timeout and --db-conn-lifetime: want a duration such as 30s, or 0 for none"}
	}
	if c.reconcileAfter <= 0 {
		return usageError{fmt.Sprintf("--reconcile-after %v: want a positive duration, e.g. 2m", c.reconcileAfter)}
	}
	if c.appSessionIdle < time.Minute || c.appSessionMax < time.Minute {
		return usageError{fmt.Sprintf("--app-session-idle %v, --app-session-max %v: want durations of at least a minute, e.g. 168h and 720h", c.appSessionIdle, c.appSessionMax)}
	}
	if c.streamLimit < 1 {
		return usageError{fmt.Sprintf("--stream-limit %d: want at least 1", c.streamLimit)}
	}
	if c.simSecret != "" && len(c.simSecret) < sim.MinSecretLength {
		return usageError{fmt.Sprintf("--sim-secret: want at least %d characters", sim.MinSecretLength)}
	}
	if c.carrierTimeout <= 0 {
		return usageError{fmt.Sprintf("--carrier-timeout %v: want a positive duration, e.g. 30s", c.carrierTimeout)}
	}
	// A send may wait for the carrier up to --carrier-timeout after writing
	// its intent; a node that abandoned its message sooner (this one or
	// another on the same database) would let a retry send it twice.
	if c.reconcileAfter <= c.carrierTimeout {
		return usageError{fmt.Sprintf("--reconcile-after %v must be longer than --carrier-timeout %v: a send can wait that long for the carrier, "+
			"and a message still being sent must never be abandoned (by this node or another on the same database)", c.reconcileAfter, c.carrierTimeout)}
	}
	return nil
}

// listenError is the error of listening on addr, set by flag (or its
// environment variable): one already taken says how to choose another.
func listenError(flag, variable, addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%s is in use by another program: choose another with %s HOST:PORT or %s (%s 127.0.0.1:0 picks a free port)",
			addr, flag, variable, flag)
	}
	return fmt.Errorf("listen on %s %s: %w", flag, addr, err)
}

// serve listens on c.listen and serves until ctx ends, then drains in-flight
// requests. ready, when set, is called with the running app once listening.
func serve(ctx context.Context, c *cli, st *store.Store, log *slog.Logger, ready func(a *app)) error {
	tuneRuntime()
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return listenError("--listen", "SWITCHBOARD_LISTEN", c.listen, err)
	}
	publicURL := strings.TrimRight(c.publicURL, "/")
	if publicURL == "" {
		publicURL = "http://" + ln.Addr().String()
	}
	a, err := newApp(ctx, c, st, log, publicURL)
	if err != nil {
		ln.Close()
		return err
	}
	defer a.close()

	srv := &http.Server{
		Handler:           a.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute, // sends may carry 70 MB of attachments
		// The write deadline runs from the end of the headers, so it must
		// cover the whole request: a large body's wait for the budget (30 s),
		// reading it (up to ReadTimeout) and the carrier call (30 s). A send
		// that was charged must not lose its answer to an early deadline.
		WriteTimeout:   4 * time.Minute,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	// Event streams never finish by themselves: shutdown ends them at once
	// (their clients resume on another node) instead of waiting for its
	// deadline.
	srv.RegisterOnShutdown(a.events.CloseStreams)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	// Background work runs until the HTTP server has drained (deferred, so
	// it stops before the app closes): not tied to ctx, which ends first.
	if err := a.background.Start(context.Background()); err != nil {
		srv.Close()
		return err
	}
	defer a.background.Stop()

	metricsAddr := ""
	if c.metricsAddr != "" {
		mln, err := net.Listen("tcp", c.metricsAddr)
		if err != nil {
			srv.Close()
			return listenError("--metrics-addr", "SWITCHBOARD_METRICS_ADDR", c.metricsAddr, err)
		}
		metricsAddr = mln.Addr().String()
		msrv := &http.Server{Handler: privateHandler(a.registry), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := msrv.Serve(mln); !errors.Is(err, http.ErrServerClosed) {
				log.Warn("metrics listener stopped", "err", err)
			}
		}()
		defer msrv.Close()
	}
	log.Info("serving", "addr", ln.Addr().String(), "metrics_addr", metricsAddr, "public_url", publicURL, "engine", st.Engine(), "carrier", c.carrier,
		"memory_limit_mib", debug.SetMemoryLimit(-1)>>20)
	if st.Engine() == store.Postgres && c.dbOptions.PgBouncer && c.listenURL == "" {
		log.Warn("read cache off: behind PgBouncer its notifications need --database-listen-url, a URL that reaches PostgreSQL itself")
	}
	if !store.Durable && st.Engine() == store.SQLite {
		log.Warn("this binary was built with the benchnosync tag: SQLite commits are not durable; never deploy it")
	}
	if ready != nil {
		ready(a)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: draining requests")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("stopped")
	return nil
}

// privateHandler serves what only the operator may see: Prometheus metrics
// and Go's profiles, on --metrics-addr, never on the public listener.
func privateHandler(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// app is the running server's parts.
type app struct {
	registry  *prometheus.Registry
	publicURL string
	handler   http.Handler
	sms       *sms.Service
	sim       *sim.Sim // nil unless the sim carrier is used
	webhooks  *webhooks.Service
	// dispatcher delivers the outbox's events to webhook subscriptions.
	dispatcher *webhooks.Dispatcher
	media      *blob.Store
	// background is the work beside the HTTP server, started by serve.
	background *background.Runner
	// carriers routes each send to its line's carrier connection.
	carriers *carriers.Router
	// events is the live event stream's hub (GET /events).
	events *stream.Hub
}

func newApp(ctx context.Context, c *cli, st *store.Store, log *slog.Logger, publicURL string) (*app, error) {
	a := &app{publicURL: publicURL}
	mediaURL := c.media
	if mediaURL == "" {
		dir, err := filepath.Abs("switchboard-media")
		if err != nil {
			return nil, err
		}
		mediaURL = "file://" + filepath.ToSlash(dir)
	}
	media, err := blob.Open(ctx, mediaURL)
	if err != nil {
		return nil, err
	}
	a.media = media

	var (
		gw carrier.Carrier
		kd *kannel.Driver
	)
	switch c.carrier {
	case "sim":
		s := sim.New(sim.Config{ReceiptDelay: sim.DefaultReceiptDelay, Logger: log})
		if c.sim != "" {
			if err := s.Configure(c.sim); err != nil {
				media.Close()
				return nil, usageError{"--sim: " + err.Error()}
			}
		}
		gw, a.sim = s, s
	case "kannel":
		d, err := kannel.New(kannel.Config{
			SendURL: c.kannelSendURL, Username: c.kannelUser, Password: c.kannelPassword,
			CallbackURL: publicURL + "/carrier/kannel", Secret: c.kannelSecret, Logger: log,
		})
		if err != nil {
			media.Close()
			return nil, usageError{err.Error()}
		}
		gw, kd = d, d
	default:
		media.Close()
		return nil, usageError{fmt.Sprintf("unknown --carrier %q (want sim or kannel)", c.carrier)}
	}
	// Every send goes through the router: to its line's carrier connection,
	// or to gw when the line names none.
	host, _ := os.Hostname()
	a.carriers = carriers.New(carriers.Config{Store: st, Default: gw, PublicURL: publicURL, Node: fmt.Sprintf("%s/%d", host, os.Getpid()), Log: log})
	a.sms = sms.New(sms.Config{
		Store:    st,
		Carrier:  a.carriers,
		Media:    media,
		MediaURL: func(name string) string { return media.URL(publicURL+"/media/", name) },
		Log:      log,
		// Checked against --reconcile-after at start.
		CarrierTimeout: c.carrierTimeout,
	})
	// The carrier reports back to the service: receipts and inbound texts.
	var hooks http.Handler
	if a.sim != nil {
		a.sim.Attach(a.sms)
		// The sim's receipt queue is in memory: after a crash, rebuild it from
		// the messages still awaiting a receipt, as a real carrier would
		// still report them. Only once attached: a receipt due at once
		// would otherwise find no one to report to and be lost.
		n, err := resumeSim(ctx, st, a.sim)
		if err != nil {
			a.sim.Close()
			media.Close()
			return nil, err
		}
		if n > 0 {
			log.Info("sim carrier: receipts rebuilt for messages sent before the restart", "count", n)
		}
		// Its inbound door, where "switchboard sim inbound" texts a line.
		if c.simSecret != "" {
			hooks = http.StripPrefix("/carrier/sim", a.sim.Handler(c.simSecret))
		}
	}
	if kd != nil {
		hooks = http.StripPrefix("/carrier/kannel", kd.Handler(a.sms))
	}
	a.carriers.Attach(a.sms)
	if err := a.carriers.Sync(ctx); err != nil {
		a.close()
		return nil, fmt.Errorf("carrier connections: %w", err)
	}
	hooks = carrierHooks(hooks, a.carriers.Handler())

	reg := prometheus.NewRegistry()
	a.registry = reg
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerStoreMetrics(reg, st)
	reg.MustRegister(carrierCollector{a.carriers}, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "switchboard_inbound_unknown_number_total",
		Help: "Inbound texts dropped because no SMS line holds the number they were sent to (logged with the number)."},
		func() float64 { return float64(a.sms.UnknownInbound()) }))
	a.webhooks = webhooks.New(webhooks.Config{Store: st, AllowHosts: webhooks.ParseAllowList(c.webhookAllowHosts), Log: log, Retention: c.webhookRetention})
	// Built before the handler: the service sends test events through the
	// dispatcher's client, metrics and per-subscription slots.
	a.dispatcher = a.webhooks.Dispatcher(webhooks.DispatcherConfig{Registry: reg})
	a.events = stream.New(stream.Config{Store: st, Log: log, Limit: c.streamLimit, Metrics: stream.NewMetrics(reg)})
	authz := oauth.New(oauth.Config{Store: st, Issuer: publicURL, Log: log, TrustedProxies: c.trustedProxies, Registry: reg,
		SessionIdle: c.appSessionIdle, SessionLifetime: c.appSessionMax})
	// The app signs in as this server's own first-party client.
	_, refused, err := authz.RegisterApp(ctx)
	if err != nil {
		return nil, fmt.Errorf("register the app's oauth client: %w", err)
	}
	if refused != "" {
		log.Warn("the app at "+oauth.AppPath+" cannot sign anyone in", "reason", refused)
	}
	appFiles, err := webapp.New(oauth.AppPath, refused)
	if err != nil {
		return nil, err
	}
	docs, err := apidocs.New()
	if err != nil {
		return nil, err
	}
	book := contacts.New(st)
	a.handler = httpapi.New(httpapi.Config{
		Store:    st,
		Auth:     &auth.Authenticator{Store: st},
		Log:      log,
		Registry: reg,
		SMS:      a.sms,
		Users:    users.New(users.Config{Store: st}),
		Calls:    calls.New(calls.Config{Store: st, Blobs: media, PublicURL: publicURL, Log: log}),
		Webhooks: a.webhooks,
		Inbox: inbox.New(inbox.Config{Store: st, Media: media, Log: log,
			MediaURL: func(name string) string { return media.URL(publicURL+"/media/", name) }}),
		Search:        search.New(search.Config{Store: st, Contacts: book}),
		Team:          team.New(team.Config{Store: st}),
		Contacts:      book,
		Media:         media.Handler(),
		CarrierHooks:  hooks,
		CarrierStates: func() any { return a.carriers.States() },
		OAuth:         authz.Handler(),
		App:           appFiles,
		Docs:          docs,
		Events:        a.events,
		// Events older than the retention may have lost their successors
		// to pruning: resuming after one is a reset.
		EventRetention: c.webhookRetention,
	})

	// Every piece of background work, built by its capability's constructor
	// with its defaults, and run by one runner: started in this order once
	// the listener is up, stopped in reverse after the HTTP server drained.
	a.background = background.New(background.Config{Logger: log})
	// First, so stopped last: the settler retries records of what the
	// carrier took that the database refused, which sends, receipts and
	// the scheduled-message dispatcher hand it until they stop.
	a.background.Add("send settler", a.sms.Settler())
	// Reads the carrier connections again, so that the CLI's changes and
	// another node's take effect within seconds.
	a.background.Add("carrier connections", a.carriers.Runner())
	a.background.Add("carrier refs pruning", a.carriers.Pruner())
	// Follows the outbox for the event streams.
	a.background.Add("event stream", a.events)
	a.background.Add("sms reconciler", a.sms.Reconciler(sms.ReconcilerConfig{After: c.reconcileAfter}))
	a.background.Add("idempotency pruning", a.sms.IdempotencyPruner())
	// Removes hosted files no message or pending schedule uses (24 h).
	a.background.Add("hosted media cleanup", a.sms.MediaCleanup(sms.MediaCleanupConfig{}))
	// Sends scheduled messages when due; its first pass, at start, sends the
	// ones that fell due while no process was running.
	a.background.Add("scheduled messages", a.sms.ScheduledDispatcher(sms.DispatcherConfig{ReconcileAfter: c.reconcileAfter}))
	a.background.Add("oauth pruning", authz.Pruner())
	// Stopped before the store closes: attempts in flight are cancelled and
	// their deliveries released for the next run.
	a.background.Add("webhook dispatcher", a.dispatcher)
	// Past the service's retention (--webhook-retention).
	a.background.Add("webhook pruning", a.webhooks.Pruner(webhooks.PrunerConfig{}))
	return a, nil
}

// resumeSim queues a receipt in s for every message sent with none yet.
func resumeSim(ctx context.Context, st *store.Store, s *sim.Sim) (int, error) {
	n := 0
	for after := int64(0); ; {
		page, err := st.AwaitingReceipts(ctx, after, 1000)
		if err != nil {
			return n, err
		}
		if len(page) == 0 {
			return n, nil
		}
		for _, m := range page {
			s.Resume(m.ID, m.To)
		}
		n += len(page)
		after = page[len(page)-1].ID
	}
}

func (a *app) close() {
	if a.carriers != nil {
		a.carriers.Close()
	}
	if a.sim != nil {
		a.sim.Close()
	}
	a.media.Close()
}

var tuneOnce sync.Once

// tuneRuntime sets the Go runtime for serving, once per process.
func tuneRuntime() {
	tuneOnce.Do(func() {
		// The server's live heap is a few megabytes (the read cache and the
		// connections), so Go's default GOGC=100 collects many times a second
		// under load, and each cycle lands in someone's latency. Four times the
		// live heap is still small; an operator's own GOGC wins.
		if os.Getenv("GOGC") == "" {
			debug.SetGCPercent(400)
		}
		// That multiplier would also let a burst of large uploads (up to
		// 256 MiB of bodies in flight, a few times that once decoded) grow
		// the heap to several gigabytes; a soft limit makes the collector
		// work harder instead. An operator's own GOMEMLIMIT wins.
		if os.Getenv("GOMEMLIMIT") == "" {
			debug.SetMemoryLimit(defaultMemoryLimit(sysmem.Available("/")))
		}
		// Twice as many Ps as CPUs. Every SQLite write goes through one
		// committer goroutine that spends half its time in fsync; when fsync
		// returns while request goroutines hold every P, it waits in the run
		// queue and so does every write behind it. Spare Ps let it run at once
		// and leave the sharing to the kernel, which also evens out request
		// latency when another process (a proxy, a load generator) shares the
		// cores. Measured: +12% sends/s, GET /users p99 from 11–13 ms to 9 ms
		// (docs/benchmarks.md). An operator's own GOMAXPROCS wins.
		if os.Getenv("GOMAXPROCS") == "" {
			runtime.GOMAXPROCS(2 * runtime.GOMAXPROCS(0))
		}
	})
}

// registerStoreMetrics exports the committers' counters: the average
// group size (writes ÷ batches) and the time per commit are what an operator
// tunes disk and load against.
func registerStoreMetrics(reg prometheus.Registerer, st *store.Store) {
	if st == nil {
		return
	}
	counter := func(name, help string, v func(store.CommitStats) float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return v(st.CommitStats()) })
	}
	reg.MustRegister(
		counter("switchboard_store_commits_total", "Group commits (SQLite's single writer; PostgreSQL's committers).",
			func(c store.CommitStats) float64 { return float64(c.Batches) }),
		counter("switchboard_store_writes_total", "Writes committed in group commits.",
			func(c store.CommitStats) float64 { return float64(c.Writes) }),
		counter("switchboard_store_exec_seconds_total", "Time the committers spent running writes (summed over PostgreSQL's parallel committers).",
			func(c store.CommitStats) float64 { return c.Exec.Seconds() }),
		counter("switchboard_store_commit_seconds_total", "Time the committers spent in COMMIT (WAL write and fsync).",
			func(c store.CommitStats) float64 { return c.Commit.Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "switchboard_store_page_cache_bytes",
			Help: "Bytes of the answers kept encoded while the database is unchanged (first pages of conversations, unread counts), out of --page-cache."},
			func() float64 { _, b := st.PageStats(); return float64(b) }),
	)
}

// maxMemoryLimit is the most a burst of maximal sends needs (the large-body
// budget and the copies decoding makes; docs/benchmarks.md): more would only
// let the heap grow further before the collector works harder.
const maxMemoryLimit = 2 << 30

// defaultMemoryLimit is the soft memory limit serve sets: three quarters of
// the memory the container or machine gives this process, leaving the rest
// to SQLite's page cache, the kernel and whatever shares the machine, and at
// most maxMemoryLimit. A container with 1 GiB thus gets 768 MiB instead of a
// limit above what the kernel allows, where the collector would never work
// harder before the OOM killer came.
func defaultMemoryLimit(available int64, _ string) int64 {
	if available <= 0 {
		return maxMemoryLimit
	}
	return min(available/4*3, maxMemoryLimit)
}

// carrierHooks serves /carrier/: the server-wide gateway's callbacks
// (/carrier/sim/, /carrier/kannel/: gateway, nil when it has none) and
// every named connection's (/carrier/NAME/: connections).
func carrierHooks(gateway, connections http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gateway != nil && (strings.HasPrefix(r.URL.Path, "/carrier/sim/") || strings.HasPrefix(r.URL.Path, "/carrier/kannel/")) {
			gateway.ServeHTTP(w, r)
			return
		}
		connections.ServeHTTP(w, r)
	})
}

// carrierCollector is this node's carrier connections in /metrics: one
// series per connection, 1 for its current state.
type carrierCollector struct{ r *carriers.Router }

var carrierStateDesc = prometheus.NewDesc("switchboard_carrier_connection_state",
	"A carrier connection's state on this node (1 for the current one): ready, bound, connecting, down, disabled.",
	[]string{"connection", "kind", "state"}, nil)

func (carrierCollector) Describe(ch chan<- *prometheus.Desc) { ch <- carrierStateDesc }

func (c carrierCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.r.States() {
		ch <- prometheus.MustNewConstMetric(carrierStateDesc, prometheus.GaugeValue, 1, s.Name, s.Kind, s.State)
	}
}
